//! Rotating `CA_SECRET_KEY`: the stored embed and host secrets survive,
//! are re-sealed under the new key, and every step of the documented
//! procedure keeps serving (docs/operations.md, "Rotating CA_SECRET_KEY").

use serde_json::json;

use crate::helpers::{Db, HostSpec, Rig, Step, of, parse_sse, random_hex, restart, task_tools};
use crate::on_both_databases;

on_both_databases!(rotating_the_secret_key_keeps_every_workspace_working);

async fn rotating_the_secret_key_keeps_every_workspace_working(db: Db) {
    let (old, new) = (random_hex(32), random_hex(32));
    // Four turns, each a tool call (the host's bearer) and an answer.
    let script = (0..4).flat_map(|_| [Step::Call("lookup", json!({"q": "x"})), Step::Text("found")]).collect();
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[("CA_SECRET_KEY", &old)]).await;
    let model = rig.model.base_url();
    let turn_at = |address: std::net::SocketAddr| {
        let rig = &rig;
        async move {
            let response = rig
                .app
                .client
                .post(format!("http://{address}/v1/chat/turns"))
                .bearer_auth(&rig.token)
                .json(&json!({"message": "look"}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "the embed token is accepted");
            let events = parse_sse(&response.text().await.unwrap());
            assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
            assert_eq!(of(&events, "tool")[1]["status"], "succeeded", "the host got its bearer: {events:?}");
        }
    };
    let server = |key: &str, other: Option<(&'static str, &str)>| {
        let mut env = vec![("CA_SECRET_KEY", key.to_owned()), ("OPENAI_BASE_URL", model.clone())];
        env.extend(other.map(|(variable, value)| (variable, value.to_owned())));
        let app = &rig.app;
        async move { restart(app, &env).await }
    };

    // Several replicas: first each learns the next key, still sealing with the old.
    turn_at(server(&old, Some(("CA_SECRET_KEY_NEXT", &new))).await).await;
    turn_at(server(&old, None).await).await;
    // The switch: the new key seals, the old one still opens, and what it
    // sealed is re-sealed under the new key before the server answers.
    turn_at(server(&new, Some(("CA_SECRET_KEY_PREVIOUS", &old))).await).await;
    // Done: the new key alone opens everything; the old one alone nothing.
    turn_at(server(&new, None).await).await;
    let stale = rig.app.state.vault.open(&sealed_embed_secret(&rig).await);
    assert!(stale.is_err(), "the old key no longer opens the stored secrets");
}

async fn sealed_embed_secret(rig: &Rig) -> String {
    let row: (String,) = sqlx::query_as("SELECT embed_secret_enc FROM workspaces WHERE id = $1")
        .bind(&rig.workspace)
        .fetch_one(&rig.app.state.pool)
        .await
        .unwrap();
    row.0
}

#[test]
fn a_rotation_needs_the_current_key_and_two_different_keys() {
    let key = "ab".repeat(32);
    let other = "cd".repeat(32);
    let config = |vars: &[(&str, &str)]| {
        let vars: std::collections::HashMap<String, String> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        server::config::Config::from_lookup(|name| vars.get(name).cloned())
    };
    let refused = |vars: &[(&str, &str)]| config(vars).expect_err("refused").variable;
    assert_eq!(refused(&[("CA_SECRET_KEY_PREVIOUS", &key)]), "CA_SECRET_KEY_PREVIOUS");
    assert_eq!(refused(&[("CA_SECRET_KEY", &key), ("CA_SECRET_KEY_PREVIOUS", &key)]), "CA_SECRET_KEY_PREVIOUS");
    assert_eq!(refused(&[("CA_SECRET_KEY", &key), ("CA_SECRET_KEY_NEXT", "short")]), "CA_SECRET_KEY_NEXT");
    let both = [("CA_SECRET_KEY", key.as_str()), ("CA_SECRET_KEY_PREVIOUS", &other), ("CA_SECRET_KEY_NEXT", &other)];
    assert_eq!(refused(&both), "CA_SECRET_KEY_NEXT");
    assert!(config(&[("CA_SECRET_KEY", &key), ("CA_SECRET_KEY_PREVIOUS", &other)]).is_ok());
}
