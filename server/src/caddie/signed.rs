//! Signed server-to-server calls (caddie-tool-contract-ct1.md §5): the six
//! `X-Caddie-*` headers, HMAC-SHA256 with the direction's key over
//! `ts + "\n" + nonce + "\n" + raw_body`.

use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::keys::{KeyPair, Keys};
use super::token::CONTRACT;

/// Clock difference accepted either way, seconds.
pub const MAX_SKEW_SECS: i64 = 300;

/// Why a signed call is refused (the status it answers, a log line).
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub StatusCode, pub &'static str);

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The signature of one call.
pub fn signature(key: &[u8; 32], ts: &str, nonce: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(ts.as_bytes());
    mac.update(b"\n");
    mac.update(nonce.as_bytes());
    mac.update(b"\n");
    mac.update(body);
    mac
}

/// Checks a hub→tool call's headers and signature at `now` (unix seconds),
/// without recording its nonce. Returns the nonce and its timestamp. The
/// signature is checked before anything else is told: an unsigned caller
/// learns `401` and nothing more (not even which contract we speak).
pub fn check(headers: &HeaderMap, body: &[u8], keys: &Keys, slug: &str, now: i64) -> Result<(String, i64), Refused> {
    let unauthorized = |why| Refused(StatusCode::UNAUTHORIZED, why);
    if header(headers, "x-caddie-tool") != Some(slug) {
        return Err(unauthorized("another tool's call"));
    }
    let pair: &KeyPair =
        header(headers, "x-caddie-key").and_then(|kid| keys.by_id(kid)).ok_or(unauthorized("unknown key id"))?;
    let ts_raw = header(headers, "x-caddie-timestamp").ok_or(unauthorized("no timestamp"))?;
    if ts_raw.is_empty() || ts_raw.len() > 12 || !ts_raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(unauthorized("timestamp is not digits"));
    }
    let ts: i64 = ts_raw.parse().map_err(|_| unauthorized("timestamp is not digits"))?;
    if (now - ts).abs() > MAX_SKEW_SECS {
        return Err(unauthorized("timestamp out of the window"));
    }
    let nonce = header(headers, "x-caddie-nonce").ok_or(unauthorized("no nonce"))?;
    // A UUID, as ct1 defines it, in its hyphenated form (36 characters).
    if nonce.len() != 36 || uuid::Uuid::try_parse(nonce).is_err() {
        return Err(unauthorized("nonce is not a UUID"));
    }
    let given = header(headers, "x-caddie-signature")
        .filter(|s| s.len() == 64)
        .and_then(|s| hex::decode(s).ok())
        .ok_or(unauthorized("signature out of shape"))?;
    // Constant-time comparison.
    signature(&pair.caddie_to_tool, ts_raw, nonce, body)
        .verify_slice(&given)
        .map_err(|_| unauthorized("bad signature"))?;
    if header(headers, "x-caddie-contract") != Some(CONTRACT) {
        return Err(Refused(StatusCode::CONFLICT, "another contract version"));
    }
    Ok((nonce.to_owned(), ts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn keys() -> Keys {
        Keys::new(&Secret::new("now"), Some(&Secret::new("before")))
    }

    fn signed(pair: &KeyPair, ts: &str, nonce: &str, body: &[u8]) -> HeaderMap {
        let sig = hex::encode(signature(&pair.caddie_to_tool, ts, nonce, body).finalize().into_bytes());
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("x-caddie-tool", "assistant"),
            ("x-caddie-contract", "ct1"),
            ("x-caddie-key", &pair.kid),
            ("x-caddie-timestamp", ts),
            ("x-caddie-nonce", nonce),
            ("x-caddie-signature", &sig),
        ] {
            h.insert(k, v.parse().unwrap());
        }
        h
    }

    const NONCE: &str = "3f1c2a9e-0000-4000-8000-000000000001";

    #[test]
    fn current_and_previous_keys_pass_and_others_fail() {
        let k = keys();
        let now = 1_800_000_000;
        let ts = now.to_string();
        assert!(check(&signed(&k.current, &ts, NONCE, b"{}"), b"{}", &k, "assistant", now).is_ok());
        assert!(check(&signed(k.previous.as_ref().unwrap(), &ts, NONCE, b"{}"), b"{}", &k, "assistant", now).is_ok());
        let stranger = KeyPair::derive(&Secret::new("neither"));
        assert_eq!(
            check(&signed(&stranger, &ts, NONCE, b"{}"), b"{}", &k, "assistant", now).unwrap_err().1,
            "unknown key id"
        );
        // A stranger's signature under our key id.
        let mut h = signed(&stranger, &ts, NONCE, b"{}");
        h.insert("x-caddie-key", k.current.kid.parse().unwrap());
        assert_eq!(check(&h, b"{}", &k, "assistant", now).unwrap_err().1, "bad signature");
    }

    #[test]
    fn the_window_is_300_seconds_either_way_and_digits_only() {
        let k = keys();
        let now = 1_800_000_000i64;
        for (ts, ok) in [(now - 300, true), (now + 300, true), (now - 301, false), (now + 301, false)] {
            let h = signed(&k.current, &ts.to_string(), NONCE, b"");
            assert_eq!(check(&h, b"", &k, "assistant", now).is_ok(), ok, "{}", ts - now);
        }
        for ts in ["+1800000000", "1800000000.0", " 1800000000", "0x6b49d200", ""] {
            let h = signed(&k.current, ts, NONCE, b"");
            assert!(check(&h, b"", &k, "assistant", now).is_err(), "{ts:?}");
        }
    }

    #[test]
    fn a_changed_body_a_wrong_direction_or_a_bad_nonce_fails() {
        let k = keys();
        let now = 1_800_000_000i64;
        let ts = now.to_string();
        let h = signed(&k.current, &ts, NONCE, br#"{"a":1}"#);
        assert_eq!(check(&h, br#"{"a":2}"#, &k, "assistant", now).unwrap_err().1, "bad signature");
        // Signed with the tool->caddie key: does not verify as caddie->tool.
        let sig = hex::encode(signature(&k.current.tool_to_caddie, &ts, NONCE, b"").finalize().into_bytes());
        let mut h = signed(&k.current, &ts, NONCE, b"");
        h.insert("x-caddie-signature", sig.parse().unwrap());
        assert_eq!(check(&h, b"", &k, "assistant", now).unwrap_err().1, "bad signature");
        let not_uuids = [
            "",
            "short",
            "has space in it",
            "3f1c2a9e00004000800000000000000a",
            "{3f1c2a9e-0000-4000-8000-000000000001}",
            "urn:uuid:3f1c2a9e-0000-4000-8000-000000000001",
            "3f1c2a9e-0000-4000-8000-00000000000g",
            "3f1c2a9e_0000_4000_8000_000000000001",
            &"a".repeat(36),
        ];
        for nonce in not_uuids {
            let h = signed(&k.current, &ts, nonce, b"");
            assert!(check(&h, b"", &k, "assistant", now).is_err(), "{nonce}");
        }
        assert!(check(&signed(&k.current, &ts, &NONCE.to_uppercase(), b""), b"", &k, "assistant", now).is_ok());
        // Another contract: 409, but only once the call is signed.
        let mut h = signed(&k.current, &ts, NONCE, b"");
        h.insert("x-caddie-contract", "ct2".parse().unwrap());
        assert_eq!(check(&h, b"", &k, "assistant", now).unwrap_err().0, StatusCode::CONFLICT);
        h.insert("x-caddie-signature", "0".repeat(64).parse().unwrap());
        assert_eq!(
            check(&h, b"", &k, "assistant", now).unwrap_err(),
            Refused(StatusCode::UNAUTHORIZED, "bad signature")
        );
        h.remove("x-caddie-signature");
        assert_eq!(check(&h, b"", &k, "assistant", now).unwrap_err().0, StatusCode::UNAUTHORIZED);
        let mut h = signed(&k.current, &ts, NONCE, b"");
        h.insert("x-caddie-tool", "other".parse().unwrap());
        assert!(check(&h, b"", &k, "assistant", now).is_err());
    }
}
