//! The launch token (caddie-tool-contract-ct1.md §3): a JWT, HS256 with the
//! caddie→tool key, every claim of the table present and typed; `exp` with
//! ±30 s of skew; `ret` on the hub's exact origin.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use url::Url;

use super::keys::Keys;

/// Skew tolerated on `iat` and `exp`, seconds.
pub const SKEW_SECS: i64 = 30;
/// The longest lifetime a launch token may claim (the hub mints 120 s).
pub const MAX_LIFETIME_SECS: i64 = 600;
pub const CONTRACT: &str = "ct1";

/// The claims of §3's table.
#[derive(Debug, Clone, Deserialize)]
pub struct LaunchClaims {
    pub iss: String,
    pub aud: String,
    pub ver: String,
    pub sub: String,
    pub jti: String,
    pub iat: i64,
    pub exp: i64,
    pub prj: String,
    pub asg: String,
    pub pnm: String,
    pub stg: String,
    pub ret: String,
}

/// Why a launch token is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// Not signed by the hub with our key, not for us, or malformed: nothing is trusted.
    Invalid(&'static str),
    /// Signed and for us, but for another contract version.
    Version,
    /// Signed and well-formed, but past `exp` (or not yet valid): the user
    /// can get a fresh link for the assignment.
    Expired { asg: String },
}

/// Verifies a launch token at `now` (unix seconds).
pub fn verify(token: &str, keys: &Keys, slug: &str, hub: &Url, now: i64) -> Result<LaunchClaims, LaunchError> {
    if token.len() > 8192 {
        return Err(LaunchError::Invalid("too long"));
    }
    let mut validation = Validation::new(Algorithm::HS256);
    validation.set_audience(&[slug]);
    validation.set_issuer(&["caddie"]);
    validation.set_required_spec_claims(&["exp", "iat", "aud", "iss", "sub", "jti"]);
    // `exp` is checked below, to tell an expired link from a forged one.
    validation.validate_exp = false;
    validation.leeway = 0;
    let mut claims = None;
    for pair in keys.all() {
        match jsonwebtoken::decode::<LaunchClaims>(token, &DecodingKey::from_secret(&pair.caddie_to_tool), &validation)
        {
            Ok(data) => {
                claims = Some(data.claims);
                break;
            }
            Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidSignature) => continue,
            Err(_) => return Err(LaunchError::Invalid("malformed or not for this tool")),
        }
    }
    let claims = claims.ok_or(LaunchError::Invalid("bad signature"))?;
    if claims.ver != CONTRACT {
        return Err(LaunchError::Version);
    }
    let well_formed = is_id(&claims.jti, 64)
        && is_id(&claims.asg, 64)
        && is_id(&claims.prj, 128)
        && is_username(&claims.sub)
        && (1..=200).contains(&claims.pnm.chars().count())
        && claims.stg.chars().count() <= 200
        && claims.exp > claims.iat
        && claims.exp - claims.iat <= MAX_LIFETIME_SECS;
    if !well_formed {
        return Err(LaunchError::Invalid("claims out of shape"));
    }
    if !return_url_ok(&claims.ret, hub) {
        return Err(LaunchError::Invalid("ret is not on the hub's origin"));
    }
    if claims.iat > now + SKEW_SECS || claims.exp < now - SKEW_SECS {
        return Err(LaunchError::Expired { asg: claims.asg });
    }
    Ok(claims)
}

/// Letters, digits, `-` and `_`, 1 to `max` bytes (UUIDs, slugs).
pub fn is_id(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A username: letters, digits, `.`, `-`, `_`, `@`, 1 to 128 bytes.
pub fn is_username(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'@'))
}

/// A return URL must have exactly the hub's scheme, host and port, checked
/// by parsing — never by prefix — and no userinfo.
pub fn return_url_ok(raw: &str, hub: &Url) -> bool {
    if raw.contains('\\') || raw.chars().any(char::is_control) {
        return false;
    }
    let Ok(url) = Url::parse(raw) else { return false };
    url.scheme() == hub.scheme()
        && url.host() == hub.host()
        && url.port_or_known_default() == hub.port_or_known_default()
        && url.username().is_empty()
        && url.password().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_urls_must_be_on_the_hubs_exact_origin() {
        let hub = Url::parse("https://caddie.example.com").unwrap();
        for good in [
            "https://caddie.example.com/projects/apollo?stage=3",
            "https://caddie.example.com:443/projects/apollo",
            "https://CADDIE.example.com/x",
        ] {
            assert!(return_url_ok(good, &hub), "{good}");
        }
        for bad in [
            "https://caddie.example.com.evil.com/projects",
            "https://caddie.example.com@evil.com/",
            "https://evil.com@caddie.example.com/",
            "https://evil.com\\@caddie.example.com/",
            "https://caddie.example.com\\.evil.com/",
            "//evil.com/projects",
            "/projects/apollo",
            "http://caddie.example.com/projects",
            "https://caddie.example.com:8443/projects",
            "javascript:alert(1)//caddie.example.com",
            "https://evil.com/https://caddie.example.com/",
            "https://caddie.example.com\n.evil.com/",
            "",
        ] {
            assert!(!return_url_ok(bad, &hub), "{bad}");
        }
    }

    #[test]
    fn ids_and_usernames_have_a_shape() {
        assert!(is_id("0b7c5e2a-1f9d-4c1e-9a57-3c1d2e4f5a6b", 64));
        assert!(!is_id("a b", 64) && !is_id("", 64) && !is_id("../x", 64) && !is_id(&"a".repeat(65), 64));
        assert!(is_username("client.user@example") && !is_username("x y") && !is_username("<b>"));
    }
}
