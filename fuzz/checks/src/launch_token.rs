//! Caddie's launch token (caddie-tool-contract-ct1.md §3): raw strings
//! never panic the reader, and a signed token passes only with every claim
//! in shape — our key, issuer `caddie`, our slug as audience, contract
//! `ct1`, ids and names of the allowed alphabet and length, `ret` on the
//! hub's exact origin, and within its lifetime and the skew.

use crate::claims::{claim, token};
use arbitrary::Unstructured;
use serde_json::{Map, Value, json};
use server::caddie::keys::Keys;
use server::caddie::token::{MAX_LIFETIME_SECS, SKEW_SECS, is_id, is_username, return_url_ok, verify};
use server::secret::Secret;

const SLUG: &str = "context-assistant";

/// One input: the fuzzer's bytes.
pub fn check(data: &[u8]) {
    let keys = Keys::new(&Secret::new("caddie's current secret"), Some(&Secret::new("caddie's previous secret")));
    let other = Keys::new(&Secret::new("someone else's secret"), None);
    let hub = url::Url::parse("https://caddie.example.com").unwrap();
    let now = 1_800_000_000;
    let mut u = Unstructured::new(data);
    let Ok(raw) = crate::string(&mut u) else { return };
    let _ = verify(&raw, &keys, SLUG, &hub, now);

    let mut claims = Map::new();
    let fields = [
        ("iss", json!("caddie")),
        ("aud", json!(SLUG)),
        ("ver", json!("ct1")),
        ("sub", json!("ada@example.com")),
        ("jti", json!("0f0e2b8c-1d2a-4c9e-9b1a-7e6f5d4c3b2a")),
        ("iat", json!(now - 5)),
        ("exp", json!(now + 115)),
        ("prj", json!("apollo")),
        ("asg", json!("asg_1")),
        ("pnm", json!("Apollo")),
        ("stg", json!("Build")),
        ("ret", json!("https://caddie.example.com/projects/apollo")),
    ];
    for (name, right) in fields {
        if claim(&mut u, &mut claims, name, right).is_err() {
            return;
        }
    }
    let signer = if u.ratio(7, 8).unwrap_or(true) { &keys } else { &other };
    let pair = if u.ratio(1, 2).unwrap_or(true) { &signer.current } else { signer.all().last().unwrap() };
    let Ok(jwt) = token(&mut u, &Value::Object(claims), &pair.caddie_to_tool) else { return };
    let Ok(c) = verify(&jwt, &keys, SLUG, &hub, now) else { return };

    assert!(!std::ptr::eq(signer, &other), "accepted with a key that is not ours: {jwt}");
    assert_eq!(jsonwebtoken::decode_header(&jwt).unwrap().alg, jsonwebtoken::Algorithm::HS256);
    assert_eq!((c.iss.as_str(), c.aud.as_str(), c.ver.as_str()), ("caddie", SLUG, "ct1"));
    assert!(is_id(&c.jti, 64) && is_id(&c.asg, 64) && is_id(&c.prj, 128) && is_username(&c.sub), "{c:?}");
    assert!((1..=200).contains(&c.pnm.chars().count()) && c.stg.chars().count() <= 200, "{c:?}");
    assert!(c.exp > c.iat && c.exp - c.iat <= MAX_LIFETIME_SECS, "{c:?}");
    assert!(c.iat <= now + SKEW_SECS && c.exp >= now - SKEW_SECS, "{c:?}");
    assert!(return_url_ok(&c.ret, &hub), "{c:?}");
}
