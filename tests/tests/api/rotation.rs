//! Rotating a workspace's secrets with overlap: the new one at once, the
//! previous one until `previous_valid_until`, then refused; a token's
//! `kid` picks the secret; a previous api key cannot rotate; every
//! rotation in the audit trail, without the secret.

use serde_json::{Value, json};

use crate::helpers::{Db, HostSpec, Rig, Step, task_tools};
use crate::on_both_databases;

on_both_databases!(
    the_previous_embed_secret_verifies_until_its_grace_ends_and_a_kid_picks_the_secret,
    the_previous_api_key_works_through_its_grace_but_cannot_rotate,
    a_bad_grace_is_refused_and_rotates_nothing,
);

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// An embed token for `ws` signed with `secret`, its header naming `kid` (or not).
fn token(ws: &str, secret: &str, kid: Option<&str>) -> String {
    let claims = json!({"aud": "context-assistant", "ws": ws, "sub": "user-1", "permissions": [],
        "iat": now(), "exp": now() + 600});
    let header = jsonwebtoken::Header {
        kid: kid.map(str::to_owned),
        ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256)
    };
    jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes())).unwrap()
}

/// The status of a chat API call (listing conversations) with `token`.
async fn chat_status(rig: &Rig, token: &str) -> u16 {
    rig.app.get("/v1/conversations", token).await.status().as_u16()
}

async fn audit(rig: &Rig) -> Vec<(String, String, String)> {
    sqlx::query_as("SELECT actor, action, detail FROM audit_log WHERE workspace_id = $1 ORDER BY at, id")
        .bind(&rig.workspace)
        .fetch_all(&rig.app.state.pool)
        .await
        .unwrap()
}

async fn the_previous_embed_secret_verifies_until_its_grace_ends_and_a_kid_picks_the_secret(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let first = rig.secret.clone();
    let (_, shown) = rig.app.get_json("/v1/workspace", &rig.api_key).await;
    let first_kid = shown["embed_secret_kid"].as_str().unwrap().to_owned();
    assert_eq!(first_kid.len(), 16);
    assert_eq!(shown["previous_embed_secret_valid_until"], Value::Null);

    let (status, rotated) =
        rig.app.post_json("/v1/workspace/embed-secret/rotate", &rig.api_key, &json!({"grace_seconds": 3600.0})).await;

    assert_eq!(status, 200, "{rotated}");
    let second = rotated["embed_secret"].as_str().unwrap().to_owned();
    let second_kid = rotated["kid"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    assert_eq!(rotated["previous_kid"], first_kid.as_str());
    let (until,): (i64,) = sqlx::query_as("SELECT embed_secret_prev_until FROM workspaces WHERE id = $1")
        .bind(&rig.workspace)
        .fetch_one(&rig.app.state.pool)
        .await
        .unwrap();
    let left = until / 1000 - now();
    assert!((3590..=3601).contains(&left), "an hour of grace: {left}");
    assert_eq!(rotated["previous_valid_until"], server::ids::rfc3339(until).as_str());
    let (_, shown) = rig.app.get_json("/v1/workspace", &rig.api_key).await;
    assert_eq!(shown["embed_secret_kid"], second_kid.as_str());
    assert_eq!(shown["previous_embed_secret_valid_until"], rotated["previous_valid_until"]);

    // During the grace: both secrets, with their own kid or none.
    let ws = rig.workspace.as_str();
    assert_eq!(chat_status(&rig, &token(ws, &second, Some(&second_kid))).await, 200);
    assert_eq!(chat_status(&rig, &token(ws, &second, None)).await, 200);
    assert_eq!(chat_status(&rig, &token(ws, &first, Some(&first_kid))).await, 200);
    assert_eq!(chat_status(&rig, &token(ws, &first, None)).await, 200);
    assert_eq!(chat_status(&rig, &rig.token).await, 200, "tokens already out keep working");
    // The kid pins the secret: another's signature, or a kid of no secret, fails.
    assert_eq!(chat_status(&rig, &token(ws, &first, Some(&second_kid))).await, 401);
    assert_eq!(chat_status(&rig, &token(ws, &second, Some("0123456789abcdef"))).await, 401);
    assert_eq!(chat_status(&rig, &token(ws, "a secret nobody has", None)).await, 401);

    // Rotating again with no grace: only the newest verifies.
    let (status, third) =
        rig.app.post_json("/v1/workspace/embed-secret/rotate", &rig.api_key, &json!({"grace_seconds": 0})).await;
    assert_eq!(status, 200, "{third}");
    let third_secret = third["embed_secret"].as_str().unwrap();
    assert_eq!(chat_status(&rig, &token(ws, third_secret, None)).await, 200);
    assert_eq!(chat_status(&rig, &token(ws, &second, Some(&second_kid))).await, 401, "no grace");
    assert_eq!(chat_status(&rig, &token(ws, &second, None)).await, 401);
    assert_eq!(chat_status(&rig, &token(ws, &first, None)).await, 401, "two rotations ago");
    let (_, shown) = rig.app.get_json("/v1/workspace", &rig.api_key).await;
    assert_eq!(shown["previous_embed_secret_valid_until"], Value::Null);

    let trail = audit(&rig).await;
    let rotations: Vec<_> = trail.iter().filter(|(_, action, _)| action == "embed_secret.rotated").collect();
    assert_eq!(rotations.len(), 2, "{trail:?}");
    assert_eq!(rotations[0].0, "api-key");
    assert!(rotations[0].2.contains(&second_kid) && rotations[0].2.contains(&first_kid));
    for (_, _, detail) in &trail {
        for secret in [&first, &second, &third_secret.to_owned()] {
            assert!(!detail.contains(secret.as_str()), "no secret in the audit trail");
        }
    }
}

async fn the_previous_api_key_works_through_its_grace_but_cannot_rotate(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let first = rig.api_key.clone();

    let (status, rotated) = rig.app.post_json("/v1/workspace/api-key/rotate", &first, &json!({})).await;

    assert_eq!(status, 200, "{rotated}");
    let second = rotated["api_key"].as_str().unwrap().to_owned();
    assert!(second.starts_with("cak_") && second != first);
    assert!(rotated["previous_valid_until"].is_string());
    // Both work during the grace…
    for key in [&first, &second] {
        let (status, shown) = rig.app.get_json("/v1/workspace", key).await;
        assert_eq!(status, 200, "{shown}");
        assert_eq!(shown["previous_api_key_valid_until"], rotated["previous_valid_until"]);
    }
    let (status, _) = rig.app.patch_json("/v1/workspace", &first, &json!({"name": "Renamed"})).await;
    assert_eq!(status, 200, "the previous key still configures");
    // …but only the current one rotates (a leaked previous key must not lock the host out).
    for path in ["/v1/workspace/api-key/rotate", "/v1/workspace/embed-secret/rotate"] {
        let (status, refused) = rig.app.post_json(path, &first, &json!({})).await;
        assert_eq!((status, refused["code"].as_str()), (403, Some("previous_api_key")), "{path}");
    }

    let (status, third) =
        rig.app.post_json("/v1/workspace/api-key/rotate", &second, &json!({"grace_seconds": 0})).await;
    assert_eq!(status, 200, "{third}");
    let third = third["api_key"].as_str().unwrap();
    for refused in [&first, &second] {
        assert_eq!(rig.app.get("/v1/workspace", refused).await.status(), 401);
    }
    let (status, shown) = rig.app.get_json("/v1/workspace", third).await;
    assert_eq!(status, 200);
    assert_eq!(shown["previous_api_key_valid_until"], Value::Null);

    let trail = audit(&rig).await;
    assert_eq!(trail.iter().filter(|(_, action, _)| action == "api_key.rotated").count(), 2, "{trail:?}");
    assert!(trail.iter().all(|(_, _, detail)| !detail.contains("cak_")), "no key in the audit trail");
}

async fn a_bad_grace_is_refused_and_rotates_nothing(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    for body in [
        json!({"grace_seconds": -1}),
        json!({"grace_seconds": 604_801}),
        json!({"grace_seconds": "60"}),
        json!({"grace_seconds": 60.5}),
        json!({"grace": 60}),
        json!([60]),
    ] {
        for path in ["/v1/workspace/embed-secret/rotate", "/v1/workspace/api-key/rotate"] {
            let (status, answer) = rig.app.post_json(path, &rig.api_key, &body).await;
            assert_eq!((status, answer["code"].as_str()), (400, Some("bad_request")), "{path} {body}");
        }
    }
    assert_eq!(rig.app.get("/v1/workspace", &rig.api_key).await.status(), 200, "the key is unchanged");
    assert_eq!(chat_status(&rig, &rig.token).await, 200, "the secret is unchanged");
    let unauthenticated = rig.app.post_json("/v1/workspace/api-key/rotate", "cak_nobody", &json!({})).await;
    assert_eq!(unauthenticated.0, 401);
}

#[tokio::test]
async fn tokens_the_server_mints_name_their_kid() {
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let minted = server::auth::mint(&rig.workspace, &rig.secret, "u", &[], 60);
    let header = jsonwebtoken::decode_header(&minted).unwrap();
    let (_, shown) = rig.app.get_json("/v1/workspace", &rig.api_key).await;
    assert_eq!(header.kid.as_deref(), shown["embed_secret_kid"].as_str());
    assert_eq!(chat_status(&rig, &minted).await, 200);
}
