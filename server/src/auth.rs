//! The embed token (assistant-api.md §2): a JWT the host's backend mints with
//! the workspace's `embed_secret`. HS256 only, `aud` = `context-assistant`,
//! `exp` at most 24 h after `iat`, `iat` not in the future, leeway 5 s.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::host::ExecutionScope;
use crate::ids::now_secs;

pub const AUDIENCE: &str = "context-assistant";
const LEEWAY_SECS: i64 = 5;
const MAX_LIFETIME_SECS: i64 = 24 * 3600;

/// The claims of a verified embed token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct EmbedClaims {
    pub aud: String,
    pub ws: String,
    pub sub: String,
    #[serde(default)]
    pub permissions: Vec<String>,
    pub iat: i64,
    pub exp: i64,
}

/// Why a token was refused; every variant is a `401` to the caller.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    #[error("the token is not a JWT")]
    Malformed,
    #[error("the token names no known workspace")]
    UnknownWorkspace,
    #[error("the token failed verification: {0}")]
    Invalid(String),
    #[error("the token's iat is in the future")]
    IssuedInFuture,
    #[error("the token lives longer than 24 hours")]
    TooLong,
    #[error("the token's kid names no secret of the workspace")]
    UnknownKey,
}

/// Reads `ws` from an unverified token, only to choose the key to verify with.
pub fn unverified_workspace(token: &str) -> Result<String, TokenError> {
    let payload = token.split('.').nth(1).ok_or(TokenError::Malformed)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload).map_err(|_| TokenError::Malformed)?;
    #[derive(Deserialize)]
    struct Ws {
        ws: String,
    }
    let ws: Ws = serde_json::from_slice(&bytes).map_err(|_| TokenError::Malformed)?;
    Ok(ws.ws)
}

/// The key id of an embed secret: the first 16 hex digits of its SHA-256.
/// Tokens may name it (`kid` in the JWT header) so that, during a
/// rotation's grace, the secret to verify with is found at once.
pub fn kid(secret: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(secret.as_bytes()))[..16].to_owned()
}

/// Verifies `token` with one of the workspace's `secrets` (the current
/// one first, the previous one during a rotation's grace): the one its
/// `kid` names, or — without a `kid` — each in turn. A `kid` naming none
/// of them is refused.
pub fn verify_with_any(token: &str, workspace_id: &str, secrets: &[&str]) -> Result<EmbedClaims, TokenError> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
    if let Some(named) = header.kid {
        let secret = secrets.iter().find(|s| kid(s) == named).ok_or(TokenError::UnknownKey)?;
        return verify(token, workspace_id, secret);
    }
    let mut refusal = TokenError::UnknownKey;
    for secret in secrets {
        match verify(token, workspace_id, secret) {
            Ok(claims) => return Ok(claims),
            Err(error) => refusal = error,
        }
    }
    Err(refusal)
}

/// Verifies `token` with the workspace's `secret`, pinned to HS256.
pub fn verify(token: &str, workspace_id: &str, secret: &str) -> Result<EmbedClaims, TokenError> {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.algorithms = vec![Algorithm::HS256];
    validation.leeway = LEEWAY_SECS as u64;
    validation.set_audience(&[AUDIENCE]);
    validation.set_required_spec_claims(&["exp", "iat", "aud", "sub"]);
    validation.validate_exp = true;
    let data = jsonwebtoken::decode::<EmbedClaims>(token, &DecodingKey::from_secret(secret.as_bytes()), &validation)
        .map_err(|e| TokenError::Invalid(e.to_string()))?;
    let claims = data.claims;
    if claims.ws != workspace_id {
        return Err(TokenError::UnknownWorkspace);
    }
    if claims.iat > now_secs() + LEEWAY_SECS {
        return Err(TokenError::IssuedInFuture);
    }
    if claims.exp - claims.iat > MAX_LIFETIME_SECS {
        return Err(TokenError::TooLong);
    }
    if claims.sub.is_empty() || claims.sub.len() > 256 {
        return Err(TokenError::Invalid("sub must be 1 to 256 characters".into()));
    }
    Ok(claims)
}

/// Mints a token the way a host's backend would (the demo page uses it).
pub fn mint(workspace_id: &str, secret: &str, sub: &str, permissions: &[String], lifetime_secs: i64) -> String {
    let iat = now_secs();
    let claims = EmbedClaims {
        aud: AUDIENCE.into(),
        ws: workspace_id.into(),
        sub: sub.into(),
        permissions: permissions.to_vec(),
        iat,
        exp: iat + lifetime_secs,
    };
    let header = Header { kid: Some(kid(secret)), ..Header::new(Algorithm::HS256) };
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(secret.as_bytes()))
        .expect("HS256 encoding of plain claims cannot fail")
}

/// Who is calling the chat API: the verified token's workspace and user.
#[derive(Clone, Debug)]
pub struct Caller {
    pub workspace_id: String,
    pub external_user_id: String,
    pub permissions: Vec<String>,
    /// The workspace's own limits, read with it.
    pub limits: crate::config::WorkspaceLimits,
    /// The kinds of attachment the workspace takes, read with it (None:
    /// every one the server takes).
    pub attachment_types: Option<Vec<String>>,
    /// The workspace's setup as read with it on this call; none: unknown
    /// (a turn reads its sources and model afresh).
    pub setup: Option<crate::db::SetupStamp>,
    /// The workspace's knowledge settings as read with it on this call;
    /// none: the turn reads them.
    pub knowledge: Option<crate::db::TurnKnowledge>,
}

impl Caller {
    /// The execution scope a host is sent for this caller, with `request_id`.
    pub fn scope(&self, request_id: &str) -> ExecutionScope {
        ExecutionScope {
            workspace_id: self.workspace_id.clone(),
            external_user_id: self.external_user_id.clone(),
            permissions: self.permissions.clone(),
            request_id: request_id.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "workspace-embed-secret";

    fn token_with(claims: serde_json::Value, alg: Algorithm, secret: &str) -> String {
        jsonwebtoken::encode(&Header::new(alg), &claims, &EncodingKey::from_secret(secret.as_bytes())).unwrap()
    }

    fn claims(iat: i64, exp: i64) -> serde_json::Value {
        serde_json::json!({"aud": AUDIENCE, "ws": "ws_1", "sub": "user_42", "permissions": ["menu:read"], "iat": iat, "exp": exp})
    }

    #[test]
    fn a_minted_token_verifies_and_carries_its_claims() {
        let token = mint("ws_1", SECRET, "user_42", &["menu:read".into()], 600);
        assert_eq!(unverified_workspace(&token).unwrap(), "ws_1");
        let c = verify(&token, "ws_1", SECRET).unwrap();
        assert_eq!((c.sub.as_str(), c.permissions.as_slice()), ("user_42", &["menu:read".to_string()][..]));
    }

    #[test]
    fn a_wrong_secret_is_refused() {
        let token = mint("ws_1", "other-secret", "u", &[], 600);
        assert!(matches!(verify(&token, "ws_1", SECRET), Err(TokenError::Invalid(_))));
    }

    #[test]
    fn another_algorithm_is_refused_even_with_the_right_secret() {
        let now = now_secs();
        for alg in [Algorithm::HS384, Algorithm::HS512] {
            let token = token_with(claims(now, now + 60), alg, SECRET);
            assert!(verify(&token, "ws_1", SECRET).is_err(), "{alg:?} accepted");
        }
    }

    #[test]
    fn an_unsigned_token_is_refused() {
        let now = now_secs();
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let body = URL_SAFE_NO_PAD.encode(claims(now, now + 60).to_string());
        assert!(verify(&format!("{header}.{body}."), "ws_1", SECRET).is_err());
    }

    #[test]
    fn an_expired_token_is_refused_beyond_five_seconds_of_leeway() {
        let now = now_secs();
        assert!(verify(&token_with(claims(now - 100, now - 2), Algorithm::HS256, SECRET), "ws_1", SECRET).is_ok());
        assert!(verify(&token_with(claims(now - 100, now - 10), Algorithm::HS256, SECRET), "ws_1", SECRET).is_err());
    }

    #[test]
    fn a_token_from_the_future_is_refused() {
        let now = now_secs();
        let token = token_with(claims(now + 60, now + 600), Algorithm::HS256, SECRET);
        assert_eq!(verify(&token, "ws_1", SECRET), Err(TokenError::IssuedInFuture));
    }

    #[test]
    fn a_token_living_over_a_day_is_refused() {
        let now = now_secs();
        let token = token_with(claims(now, now + 24 * 3600 + 1), Algorithm::HS256, SECRET);
        assert_eq!(verify(&token, "ws_1", SECRET), Err(TokenError::TooLong));
    }

    #[test]
    fn a_wrong_audience_or_missing_claim_is_refused() {
        let now = now_secs();
        let mut c = claims(now, now + 60);
        c["aud"] = "someone-else".into();
        assert!(verify(&token_with(c, Algorithm::HS256, SECRET), "ws_1", SECRET).is_err());
        let mut c = claims(now, now + 60);
        c.as_object_mut().unwrap().remove("iat");
        assert!(verify(&token_with(c, Algorithm::HS256, SECRET), "ws_1", SECRET).is_err());
    }

    #[test]
    fn a_token_for_another_workspace_is_refused() {
        let token = mint("ws_2", SECRET, "u", &[], 60);
        assert_eq!(verify(&token, "ws_1", SECRET), Err(TokenError::UnknownWorkspace));
    }

    #[test]
    fn garbage_is_malformed() {
        assert_eq!(unverified_workspace("not a token"), Err(TokenError::Malformed));
        assert_eq!(unverified_workspace("a.!!!.c"), Err(TokenError::Malformed));
    }
}
