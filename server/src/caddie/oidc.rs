//! Signing users in with the identity provider (caddie-tool-contract-ct1.md
//! §4): OpenID Connect authorization code with PKCE (S256), `prompt=none`
//! for the silent probe, the ID token checked against the provider's keys.
//! The ID token's algorithm is pinned to what the provider advertises
//! (`id_token_signing_alg_values_supported`) and must match its key; HS256
//! (signed with our own client secret) only when configured. The
//! username comes from the ID token's `preferred_username`, else from the
//! userinfo endpoint (whose `sub` must be the token's), else the `sub`.

use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use url::Url;

use crate::config::OidcConfig;
use crate::ids::random_bytes;

/// How long the provider's metadata and keys are kept.
const CACHE_FOR: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    #[serde(default)]
    userinfo_endpoint: Option<String>,
    /// Required by OpenID Connect Discovery; absent: RS256 only.
    #[serde(default)]
    id_token_signing_alg_values_supported: Vec<String>,
    /// RFC 9207: the provider puts `iss` in its answer to the redirect URI.
    #[serde(default)]
    authorization_response_iss_parameter_supported: bool,
}

/// Who signed in: the provider's subject and the username they go by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    pub issuer: String,
    pub sub: String,
    pub username: String,
}

/// The identity provider client.
pub struct Oidc {
    config: OidcConfig,
    redirect_uri: String,
    http: reqwest::Client,
    discovery: Mutex<Option<(Discovery, Instant)>>,
    jwks: Mutex<Option<(JwkSet, Instant)>>,
}

/// A new flow's secrets: `state`, the PKCE verifier, the ID token's nonce.
pub struct FlowSecrets {
    pub state: String,
    pub verifier: String,
    pub nonce: String,
}

impl FlowSecrets {
    pub fn new() -> Self {
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        Self {
            state: b64(&random_bytes::<24>()),
            verifier: b64(&random_bytes::<32>()),
            nonce: b64(&random_bytes::<24>()),
        }
    }
}

impl Default for FlowSecrets {
    fn default() -> Self {
        Self::new()
    }
}

/// `BASE64URL(SHA256(verifier))` (RFC 7636).
pub fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[derive(Deserialize)]
struct TokenAnswer {
    id_token: String,
    #[serde(default)]
    access_token: Option<String>,
}

#[derive(Deserialize)]
struct UserInfo {
    sub: String,
    #[serde(default)]
    preferred_username: Option<String>,
}

/// The algorithms an ID token may be signed with, asymmetric: whichever of
/// these the provider advertises.
const ASYMMETRIC: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

#[derive(Deserialize)]
struct IdClaims {
    sub: String,
    #[serde(default)]
    preferred_username: Option<String>,
    #[serde(default)]
    nonce: Option<String>,
}

impl Oidc {
    pub fn new(config: OidcConfig, redirect_uri: String) -> Self {
        let http = crate::host::client_builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("the HTTP client builds");
        Self { config, redirect_uri, http, discovery: Mutex::new(None), jwks: Mutex::new(None) }
    }

    async fn discovery(&self) -> anyhow::Result<Discovery> {
        let mut cached = self.discovery.lock().await;
        if let Some((d, at)) = cached.as_ref()
            && at.elapsed() < CACHE_FOR
        {
            return Ok(d.clone());
        }
        let url = format!("{}/.well-known/openid-configuration", self.config.issuer.as_str().trim_end_matches('/'));
        let d: Discovery = self.http.get(&url).send().await?.error_for_status()?.json().await.context("discovery")?;
        if d.issuer.trim_end_matches('/') != self.config.issuer.as_str().trim_end_matches('/') {
            bail!("the provider's discovery names another issuer");
        }
        *cached = Some((d.clone(), Instant::now()));
        Ok(d)
    }

    /// Where to send the browser, with the given `prompt`: `none` for the
    /// silent probe, `login` to switch accounts, none for an ordinary login.
    pub async fn authorize_url(&self, flow: &FlowSecrets, prompt: Option<&str>) -> anyhow::Result<Url> {
        let d = self.discovery().await?;
        let mut url = Url::parse(&d.authorization_endpoint).context("authorization_endpoint")?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &self.config.client_id)
                .append_pair("redirect_uri", &self.redirect_uri)
                .append_pair("scope", "openid profile")
                .append_pair("state", &flow.state)
                .append_pair("nonce", &flow.nonce)
                .append_pair("code_challenge", &challenge(&flow.verifier))
                .append_pair("code_challenge_method", "S256");
            if let Some(prompt) = prompt {
                q.append_pair("prompt", prompt);
            }
        }
        Ok(url)
    }

    /// Checks the `iss` of the provider's answer to the redirect URI (RFC
    /// 9207, against mix-up): when present it must be the issuer, and a
    /// provider that advertises it must send it.
    pub async fn check_answer_issuer(&self, iss: Option<&str>) -> anyhow::Result<()> {
        let d = self.discovery().await?;
        match iss {
            Some(iss) if iss != d.issuer => bail!("the answer names another issuer"),
            None if d.authorization_response_iss_parameter_supported => bail!("the answer names no issuer"),
            _ => Ok(()),
        }
    }

    /// Redeems the code and returns who signed in, after checking the ID
    /// token's signature, algorithm, issuer, audience, expiry and nonce.
    pub async fn sign_in(&self, code: &str, verifier: &str, nonce: &str) -> anyhow::Result<SignedIn> {
        let d = self.discovery().await?;
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", &self.redirect_uri)
            .append_pair("code_verifier", verifier)
            .append_pair("client_id", &self.config.client_id)
            .finish();
        let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            enc(&self.config.client_id),
            enc(self.config.client_secret.expose())
        ));
        let answer = self
            .http
            .post(&d.token_endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("authorization", format!("Basic {basic}"))
            .body(body)
            .send()
            .await?;
        if !answer.status().is_success() {
            bail!("the token endpoint answered {}", answer.status());
        }
        let answer: TokenAnswer = answer.json().await.context("the token endpoint's answer")?;
        let claims = self.verify_id_token(&answer.id_token, &d).await?;
        if claims.nonce.as_deref() != Some(nonce) {
            bail!("the ID token's nonce does not match");
        }
        let username = match claims.preferred_username {
            Some(name) => name,
            None => self
                .userinfo_username(&d, answer.access_token.as_deref(), &claims.sub)
                .await?
                .unwrap_or(claims.sub.clone()),
        };
        if !super::token::is_username(&username) {
            bail!("the ID token's username has an unexpected shape");
        }
        Ok(SignedIn { issuer: d.issuer.clone(), sub: claims.sub, username })
    }

    /// `preferred_username` from the userinfo endpoint, for a provider that
    /// keeps the ID token to `sub` (its `sub` must be the token's).
    async fn userinfo_username(
        &self,
        d: &Discovery,
        access_token: Option<&str>,
        sub: &str,
    ) -> anyhow::Result<Option<String>> {
        let (Some(endpoint), Some(token)) = (d.userinfo_endpoint.as_deref(), access_token) else { return Ok(None) };
        let info: UserInfo = self
            .http
            .get(endpoint)
            .bearer_auth(token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await
            .context("userinfo")?;
        if info.sub != sub {
            bail!("the userinfo endpoint answered for another subject");
        }
        Ok(info.preferred_username)
    }

    /// The algorithms this provider's ID tokens may use: what it advertises,
    /// of those we accept (HS256 only when configured).
    fn accepted(&self, d: &Discovery) -> Vec<Algorithm> {
        let advertised: Vec<&str> = if d.id_token_signing_alg_values_supported.is_empty() {
            vec!["RS256"]
        } else {
            d.id_token_signing_alg_values_supported.iter().map(String::as_str).collect()
        };
        let ours = ASYMMETRIC.iter().copied().chain(self.config.allow_hs256.then_some(Algorithm::HS256));
        ours.filter(|alg| advertised.iter().any(|a| alg_name(*alg) == *a)).collect()
    }

    async fn verify_id_token(&self, id_token: &str, d: &Discovery) -> anyhow::Result<IdClaims> {
        let header = jsonwebtoken::decode_header(id_token)?;
        if !self.accepted(d).contains(&header.alg) {
            bail!("the ID token is signed with {:?}, which is not accepted for this provider", header.alg);
        }
        let key = match header.alg {
            Algorithm::HS256 => DecodingKey::from_secret(self.config.client_secret.expose().as_bytes()),
            alg => self.key(header.kid.as_deref(), alg, d).await?,
        };
        let mut validation = Validation::new(header.alg);
        validation.set_audience(&[&self.config.client_id]);
        validation.set_issuer(&[&d.issuer]);
        validation.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
        validation.leeway = 60;
        Ok(jsonwebtoken::decode::<IdClaims>(id_token, &key, &validation)?.claims)
    }

    /// The provider's key for `kid` and `alg`; the key set is fetched again
    /// once when it does not know the id (the provider rotated its keys). A
    /// key that names another algorithm, or is not for signing, is no match.
    async fn key(&self, kid: Option<&str>, alg: Algorithm, d: &Discovery) -> anyhow::Result<DecodingKey> {
        let mut cached = self.jwks.lock().await;
        for attempt in 0..2 {
            let fresh = cached.as_ref().is_some_and(|(_, at)| at.elapsed() < CACHE_FOR);
            if attempt == 1 || !fresh {
                let set: JwkSet = self.http.get(&d.jwks_uri).send().await?.error_for_status()?.json().await?;
                *cached = Some((set, Instant::now()));
            }
            let (set, _) = cached.as_ref().expect("just set");
            let fits = |jwk: &&jsonwebtoken::jwk::Jwk| {
                let for_alg = jwk.common.key_algorithm.is_none_or(|a| format!("{a:?}") == alg_name(alg));
                let for_signing =
                    jwk.common.public_key_use.as_ref().is_none_or(|u| *u == jsonwebtoken::jwk::PublicKeyUse::Signature);
                for_alg && for_signing
            };
            let found = match kid {
                Some(kid) => set.find(kid).filter(fits),
                None => {
                    let candidates: Vec<_> = set.keys.iter().filter(fits).collect();
                    if candidates.len() == 1 { candidates.first().copied() } else { None }
                }
            };
            if let Some(jwk) = found {
                return Ok(DecodingKey::from_jwk(jwk)?);
            }
        }
        Err(anyhow!("no key of the provider matches the ID token"))
    }
}

/// An algorithm's name as JOSE writes it (`RS256`, `EdDSA`).
fn alg_name(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::HS256 => "HS256",
        Algorithm::HS384 => "HS384",
        Algorithm::HS512 => "HS512",
        Algorithm::RS256 => "RS256",
        Algorithm::RS384 => "RS384",
        Algorithm::RS512 => "RS512",
        Algorithm::PS256 => "PS256",
        Algorithm::PS384 => "PS384",
        Algorithm::PS512 => "PS512",
        Algorithm::ES256 => "ES256",
        Algorithm::ES384 => "ES384",
        Algorithm::EdDSA => "EdDSA",
    }
}
