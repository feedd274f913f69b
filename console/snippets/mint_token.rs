//! Mints a Context Assistant embed token for your signed-in user, with
//! jsonwebtoken (`cargo add jsonwebtoken --features rust_crypto` and
//! `cargo add serde_json`). Keep the embed secret on the server only:
//!
//! ```ignore
//! let token = assistant_token("{{WORKSPACE}}", &user.id, &[], &std::env::var("CA_EMBED_SECRET")?)?;
//! ```
//!
//! Your token endpoint (`data-token-url`) answers it as `text/plain`, with
//! `Cache-Control: no-store`.

use jsonwebtoken::{EncodingKey, Header, encode};

pub fn assistant_token(
    workspace: &str,
    user_id: &str,
    permissions: &[&str],
    secret: &str,
) -> jsonwebtoken::errors::Result<String> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let claims = serde_json::json!({
        "aud": "context-assistant", "ws": workspace, "sub": user_id,
        "permissions": permissions, "iat": now, "exp": now + 3600,
    });
    encode(&Header::default(), &claims, &EncodingKey::from_secret(secret.as_bytes()))
}
