//! The embed token (assistant-api.md §2): raw strings never panic the
//! readers, and a signed token is accepted only when every rule holds —
//! HS256 with the workspace's secret, the audience, the workspace, `iat`
//! not ahead, `exp` not past, a lifetime of 24 h at most, a `sub` of 1 to
//! 256 characters — whatever the fuzzer puts in its claims and header.

use crate::claims::{claim, token};
use arbitrary::Unstructured;
use serde_json::{Map, Value, json};
use server::auth::{AUDIENCE, unverified_workspace, verify, verify_with_any};

const WS: &str = "ws_fuzz";
const SECRET: &str = "the workspace's embed secret";
const OTHER: &str = "another workspace's secret";

/// One input: the fuzzer's bytes.
pub fn check(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(raw) = crate::string(&mut u) else { return };
    let _ = unverified_workspace(&raw);
    assert!(verify(&raw, WS, SECRET).is_err() || raw.matches('.').count() == 2);
    let _ = verify_with_any(&raw, WS, &[SECRET, OTHER]);

    let now = server::ids::now_secs();
    let mut claims = Map::new();
    let fields = [
        ("aud", json!(AUDIENCE)),
        ("ws", json!(WS)),
        ("sub", json!("user_42")),
        ("permissions", json!(["orders:write"])),
        ("iat", json!(now - 10)),
        ("exp", json!(now + 3600)),
    ];
    for (name, right) in fields {
        if claim(&mut u, &mut claims, name, right).is_err() {
            return;
        }
    }
    let key = if u.ratio(7, 8).unwrap_or(true) { SECRET } else { OTHER };
    let Ok(jwt) = token(&mut u, &Value::Object(claims), key.as_bytes()) else { return };
    let Ok(verified) = verify_with_any(&jwt, WS, &[SECRET]) else { return };

    let header = jsonwebtoken::decode_header(&jwt).expect("an accepted token has a header");
    assert_eq!(header.alg, jsonwebtoken::Algorithm::HS256, "{jwt}");
    assert_eq!(key, SECRET, "accepted with another secret: {jwt}");
    assert_eq!((verified.aud.as_str(), verified.ws.as_str()), (AUDIENCE, WS));
    assert!(verified.iat <= now + 5 && verified.exp >= now - 5, "{verified:?}");
    assert!(verified.exp - verified.iat <= 24 * 3600, "{verified:?}");
    assert!((1..=256).contains(&verified.sub.len()), "{verified:?}");
}
