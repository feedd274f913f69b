//! JWT claims built from the fuzzer's bytes: each claim right, nearly
//! right (a time a little off, a string a little wrong), of the wrong type,
//! or missing — so signed tokens reach every check after the signature.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value, json};

/// One claim: the value it should have, or something else.
pub fn claim(u: &mut Unstructured<'_>, claims: &mut Map<String, Value>, name: &str, right: Value) -> Result<()> {
    let value = match u.int_in_range(0..=9)? {
        0..=5 => right,
        6 => match &right {
            Value::Number(n) => json!(n.as_i64().unwrap_or(0).saturating_add(i64::from(u.arbitrary::<i32>()?))),
            Value::String(s) => json!(crate::mutate(u, s)?),
            other => other.clone(),
        },
        7 => crate::json(u, 2)?,
        8 => Value::String(crate::string(u)?),
        _ => return Ok(()),
    };
    claims.insert(name.to_owned(), value);
    Ok(())
}

/// A JWT signed with `key` under `alg` (or with a header the fuzzer writes).
pub fn token(u: &mut Unstructured<'_>, claims: &Value, key: &[u8]) -> Result<String> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
    let alg = *u.choose(&[Algorithm::HS256, Algorithm::HS256, Algorithm::HS384, Algorithm::HS512])?;
    let mut header = Header::new(alg);
    if u.ratio(1, 4)? {
        header.kid = Some(crate::string(u)?);
    }
    let signed = encode(&header, claims, &EncodingKey::from_secret(key)).expect("HMAC signing does not fail");
    if u.ratio(1, 8)? {
        // `alg: none` and other headers written by hand, the signature kept.
        use base64::Engine;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(crate::string(u)?);
        let mut parts: Vec<&str> = signed.split('.').collect();
        parts[0] = &raw;
        return Ok(parts.join("."));
    }
    Ok(signed)
}
