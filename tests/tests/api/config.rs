//! Start-up refuses bad settings with a message naming them.

use server::app::Application;
use server::config::Config;

use crate::helpers::{Db, spawn_app};

fn config(vars: &[(&str, String)]) -> Config {
    Config::from_lookup(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone())).unwrap()
}

#[tokio::test]
async fn a_port_in_use_is_refused_naming_leptos_site_addr() {
    let app = spawn_app(Db::Sqlite).start().await;
    let dir = tempfile::tempdir().unwrap();
    let error = Application::build(config(&[
        ("LEPTOS_SITE_ADDR", app.address.to_string()),
        ("CA_DATA_DIR", dir.path().display().to_string()),
    ]))
    .await
    .err()
    .expect("a taken port is refused");
    assert!(format!("{error:#}").contains("LEPTOS_SITE_ADDR"), "{error:#}");
}

#[tokio::test]
async fn an_unreachable_database_is_refused_naming_database_url() {
    let dir = tempfile::tempdir().unwrap();
    let error = Application::build(config(&[
        ("LEPTOS_SITE_ADDR", "127.0.0.1:0".into()),
        ("CA_DATA_DIR", dir.path().display().to_string()),
        ("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none".into()),
    ]))
    .await
    .err()
    .expect("a bad database is refused");
    assert!(format!("{error:#}").contains("DATABASE_URL"), "{error:#}");
}

#[tokio::test]
async fn a_restart_keeps_the_data_and_the_key() {
    let app = spawn_app(Db::Sqlite).start().await;
    let token = app.demo_token("u").await;
    let events = app.turn(&token, None, "hello").await;
    let conversation = crate::helpers::of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let dir = app.data_dir.path().to_owned();
    // A second server on the same data directory and database file.
    let again = Application::build(config(&[
        ("LEPTOS_SITE_ADDR", "127.0.0.1:0".into()),
        ("CA_DATA_DIR", dir.display().to_string()),
        ("DATABASE_URL", format!("sqlite://{}?mode=rwc", dir.join("test.db").display())),
    ]))
    .await
    .unwrap();
    let address = again.address();
    tokio::spawn(again.run_until_stopped());
    // The old token still verifies: the embed secret was sealed with the kept key.
    let response = app
        .client
        .get(format!("http://{address}/v1/conversations/{conversation}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}
