//! Where an MCP App shown in the chat runs, and who may speak for it.
//!
//! The widget frames our own bridge page (`/widget/app/{component_id}`, on
//! the assistant's origin, loaded only when an app appears); the bridge
//! frames the sandbox page on the sandbox origin (`CA_SANDBOX_URL`), which
//! runs the app's HTML in a frame of its own without an origin. The bridge
//! holds no embed token: its address carries, after `#` (never sent to a
//! server or in a `Referer`), a short-lived app token for that one app and
//! user, signed with a key derived from the server's (HS256 by
//! `jsonwebtoken`), which the app routes (`/v1/apps/{id}`) take instead.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::secret::Secret;

/// The audience of app tokens: nothing else takes them, and they are
/// taken nowhere else.
const AUDIENCE: &str = "context-assistant:app-frame";
/// How long an app's frame may speak for its user: a frame open longer
/// asks for a reload (a reload mints a new one with the conversation).
pub const TOKEN_LIFETIME_SECS: i64 = 4 * 3600;

/// What an app token says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppClaims {
    pub aud: String,
    /// The component id of the app.
    pub cmp: String,
    pub ws: String,
    pub sub: String,
    pub permissions: Vec<String>,
    pub exp: i64,
}

/// The sandbox origin and the key app tokens are signed with.
#[derive(Clone)]
pub struct AppFrames {
    key: Secret,
    /// `CA_SANDBOX_URL`'s origin (no trailing slash).
    pub sandbox_origin: String,
}

impl AppFrames {
    pub fn new(key: Secret, sandbox_origin: &str) -> Self {
        Self { key, sandbox_origin: sandbox_origin.trim_end_matches('/').to_owned() }
    }

    /// The bridge page's address for `component_id`, shown to `caller`:
    /// its token after `#`.
    pub fn src(&self, component_id: &str, caller: &Caller, now_secs: i64) -> String {
        let claims = AppClaims {
            aud: AUDIENCE.into(),
            cmp: component_id.into(),
            ws: caller.workspace_id.clone(),
            sub: caller.external_user_id.clone(),
            permissions: caller.permissions.clone(),
            exp: now_secs + TOKEN_LIFETIME_SECS,
        };
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(self.key.expose().as_bytes()),
        )
        .expect("HS256 signs any claims");
        format!("/widget/app/{component_id}#{token}")
    }

    /// The claims of an app token for `component_id`: signed by us, HS256
    /// only, of our audience, not expired (5 s of leeway), for that app.
    pub fn verify(&self, token: &str, component_id: &str) -> Option<AppClaims> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "aud"]);
        validation.leeway = 5;
        let key = DecodingKey::from_secret(self.key.expose().as_bytes());
        let claims = jsonwebtoken::decode::<AppClaims>(token, &key, &validation).ok()?.claims;
        (claims.cmp == component_id).then_some(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller() -> Caller {
        Caller {
            workspace_id: "ws_1".into(),
            external_user_id: "user_1".into(),
            permissions: vec!["menu:read".into()],
            limits: Default::default(),
            attachment_types: None,
            setup: None,
            knowledge: None,
        }
    }

    fn token_of(src: &str) -> &str {
        src.split_once('#').unwrap().1
    }

    #[test]
    fn an_app_token_speaks_for_its_app_and_user_only_while_it_lasts() {
        let frames = AppFrames::new(Secret::new("k".repeat(64)), "http://127.0.0.1:3001/");
        let now = crate::ids::now_ms() / 1000;
        let src = frames.src("cmp_1", &caller(), now);
        assert!(src.starts_with("/widget/app/cmp_1#"), "{src}");
        let claims = frames.verify(token_of(&src), "cmp_1").expect("its own app");
        assert_eq!((claims.ws.as_str(), claims.sub.as_str()), ("ws_1", "user_1"));
        assert!(frames.verify(token_of(&src), "cmp_2").is_none(), "another app");
        let old = frames.src("cmp_1", &caller(), now - TOKEN_LIFETIME_SECS - 60);
        assert!(frames.verify(token_of(&old), "cmp_1").is_none(), "expired");
        let other = AppFrames::new(Secret::new("j".repeat(64)), "http://127.0.0.1:3001");
        assert!(other.verify(token_of(&src), "cmp_1").is_none(), "another key");
        // A token with `alg: none`, or signed for another audience, is refused.
        let claims = serde_json::json!({"aud": AUDIENCE, "cmp": "cmp_1", "ws": "ws_1", "sub": "u",
                                        "permissions": [], "exp": now + 60});
        use base64::Engine;
        let b64 = |v: &serde_json::Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let unsigned = format!("{}.{}.", b64(&serde_json::json!({"alg": "none", "typ": "JWT"})), b64(&claims));
        assert!(frames.verify(&unsigned, "cmp_1").is_none());
        let embed_key = EncodingKey::from_secret("k".repeat(64).as_bytes());
        let mut wrong_aud = claims.clone();
        wrong_aud["aud"] = "context-assistant".into();
        let signed = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &wrong_aud, &embed_key).unwrap();
        assert!(frames.verify(&signed, "cmp_1").is_none());
        let signed = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &embed_key).unwrap();
        assert!(frames.verify(&signed, "cmp_1").is_some(), "the same claims, rightly signed, pass");
    }
}
