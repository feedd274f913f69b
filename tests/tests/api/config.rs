//! Start-up refuses bad settings with a message naming them; /health and
//! /ready say when the server is alive and when it can serve.

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

crate::on_both_databases!(ready_means_the_database_answers_with_every_migration_applied);

/// `/health` says the process is alive; `/ready` that it can serve: the
/// database answers and carries every migration of this build.
async fn ready_means_the_database_answers_with_every_migration_applied(db: Db) {
    let app = spawn_app(db).start().await;
    let health = app.client.get(app.url("/health")).send().await.unwrap();
    assert_eq!((health.status().as_u16(), health.text().await.unwrap().as_str()), (200, "ok"));
    let (status, body) = crate::helpers::status_and_json(app.client.get(app.url("/ready")).send().await.unwrap()).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ready")), "{body}");

    // As if another replica had not yet applied the newest migration.
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)")
        .execute(&app.state.pool)
        .await
        .unwrap();
    let (status, body) = crate::helpers::status_and_json(app.client.get(app.url("/ready")).send().await.unwrap()).await;
    assert_eq!((status, body["code"].as_str()), (503, Some("not_ready")), "{body}");
    assert!(!body.to_string().contains("migration"), "the cause is logged, not shown: {body}");
    let health = app.client.get(app.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 200, "alive all the same");
}
