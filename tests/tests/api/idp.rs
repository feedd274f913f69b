//! Signing in to a Caddie space against a real, certified OpenID Provider:
//! npm `oidc-provider` (tests/oidc/op.mjs, run with node; `./dev test`
//! installs it), with its own discovery, JWKS, sessions, PKCE and
//! `prompt=none`. RS256 and ES256 ID tokens, a rotated key, the silent
//! probe with and without a session at the provider, HS256 only when
//! configured, and a username that stays with the subject that first
//! signed in with it.

use std::collections::HashMap;

use serde_json::json;

use crate::helpers::{Db, TestApp, spawn_app};
use crate::op::Op;

const SECRET: &str = "tool-secret for the provider tests";
const SLUG: &str = "assistant";
const CLIENT_ID: &str = "assistant-client";
const CLIENT_SECRET: &str = "assistant-client-secret";
const ASSIGNMENT: &str = "5d7c5e2a-1f9d-4c1e-9a57-3c1d2e4f5a6c";

/// The assistant as a Caddie tool signing users in with `op`, a space for
/// the assignment with `participants`.
struct Rig {
    app: TestApp,
    op: Op,
    workspace: String,
}

impl Rig {
    async fn start(op: Op, participants: &[&str], env: &[(&str, &str)]) -> Rig {
        // No hub runs: reports are queued, which these tests do not look at.
        let mut app = spawn_app(Db::Sqlite)
            .env("CADDIE_TOOL_SECRET", SECRET)
            .env("CADDIE_TOOL_SLUG", SLUG)
            .env("CADDIE_HUB_ORIGIN", "http://127.0.0.1:9")
            .env("OIDC_ISSUER", op.issuer.clone())
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET);
        for (k, v) in env {
            app = app.env(k, *v);
        }
        let app = app.start().await;
        op.allow_redirect(&format!("http://{}/caddie/auth/callback", app.address)).await;
        let participants: Vec<String> = participants.iter().map(|p| p.to_string()).collect();
        let workspace = server::caddie::provision(
            app.state.caddie.as_ref().unwrap(),
            ASSIGNMENT,
            "prj-1",
            "Apollo",
            &json!({}),
            &participants,
            &json!([]),
        )
        .await
        .unwrap();
        Rig { app, op, workspace }
    }

    fn launch_url(&self, sub: &str) -> String {
        let now = server::ids::now_secs();
        let claims = json!({ "iss": "caddie", "aud": SLUG, "ver": "ct1", "sub": sub, "jti": server::caddie::uuid_v4(),
            "iat": now, "exp": now + 120, "prj": "apollo", "asg": ASSIGNMENT, "pnm": "Apollo",
            "stg": "Design", "ret": "http://127.0.0.1:9/projects/apollo?stage=1" });
        let key = server::caddie::keys::KeyPair::derive(&server::secret::Secret::new(SECRET)).caddie_to_tool;
        let lt = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(&key),
        )
        .unwrap();
        self.app.url(&format!("/launch?lt={lt}"))
    }

    /// Launches as `user`; when the provider asks who it is, signs in as
    /// `account` there. The page it ends on.
    async fn launch(&self, browser: &mut Browser, user: &str, account: &str) -> Page {
        let page = browser.visit(&self.launch_url(user)).await;
        if page.url.starts_with(&self.op.issuer) && page.url.contains("/interaction/") {
            let login = format!("{}?username={}", page.url, urlencode(account));
            let mut finished = browser.visit(&login).await;
            finished.trail.splice(0..0, page.trail);
            return finished;
        }
        page
    }

    async fn grants(&self) -> Vec<String> {
        let rows: Vec<(String,)> = sqlx::query_as("SELECT username FROM space_grants ORDER BY username")
            .fetch_all(&self.app.state.pool)
            .await
            .unwrap();
        rows.into_iter().map(|(u,)| u).collect()
    }
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A browser: a cookie jar per origin, redirects followed by hand.
#[derive(Default)]
struct Browser {
    jars: HashMap<String, HashMap<String, String>>,
}

struct Page {
    status: u16,
    url: String,
    body: String,
    trail: Vec<String>,
}

impl Browser {
    async fn visit(&mut self, url: &str) -> Page {
        let client = server::host::client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        let mut url = url.to_owned();
        let mut trail = Vec::new();
        for _ in 0..16 {
            trail.push(url.clone());
            let parsed = url::Url::parse(&url).unwrap();
            let origin = parsed.origin().ascii_serialization();
            let mut request = client.get(&url);
            if let Some(jar) = self.jars.get(&origin).filter(|j| !j.is_empty()) {
                let cookies: Vec<String> = jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
                request = request.header("cookie", cookies.join("; "));
            }
            let response = request.send().await.unwrap();
            let jar = self.jars.entry(origin).or_default();
            for set in response.headers().get_all("set-cookie") {
                let set = set.to_str().unwrap();
                let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
                let (name, value) = pair.split_once('=').unwrap();
                let lower = attributes.to_ascii_lowercase();
                if lower.contains("max-age=0") || lower.contains("expires=thu, 01 jan 1970") || value.is_empty() {
                    jar.remove(name);
                } else {
                    jar.insert(name.to_owned(), value.to_owned());
                }
            }
            if response.status().is_redirection() {
                let location = response.headers()["location"].to_str().unwrap();
                url = parsed.join(location).unwrap().to_string();
                continue;
            }
            let status = response.status().as_u16();
            return Page { status, url, body: response.text().await.unwrap(), trail };
        }
        panic!("too many redirects: {trail:?}");
    }

    /// Forgets the assistant's cookies (its session), keeping the provider's.
    fn forget(&mut self, origin: &str) {
        self.jars.remove(origin);
    }
}

/// The `prompt` of each authorization request on the way.
fn prompts(page: &Page, op: &Op) -> Vec<Option<String>> {
    page.trail
        .iter()
        .filter(|u| u.starts_with(&format!("{}/auth?", op.issuer)))
        .map(|u| url::Url::parse(u).unwrap().query_pairs().find(|(k, _)| k == "prompt").map(|(_, v)| v.into_owned()))
        .collect()
}

fn landed(rig: &Rig, page: &Page) -> bool {
    page.status == 200 && page.url.contains(&format!("/caddie/spaces/{}", rig.workspace))
}

#[tokio::test]
async fn the_silent_probe_signs_in_with_a_session_at_the_provider_and_login_required_falls_back_to_a_login() {
    let rig = Rig::start(Op::start("RS256", CLIENT_ID, CLIENT_SECRET), &["alice"], &[]).await;
    let mut browser = Browser::default();

    // No session at the provider: prompt=none answers login_required, then
    // the login page. The account's subject is `u-1001~alice`: the username
    // comes from userinfo (the ID token has only `sub`, as the provider's
    // defaults have it).
    let first = rig.launch(&mut browser, "alice", "u-1001~alice").await;
    assert!(landed(&rig, &first), "{} {}: {}", first.status, first.url, first.body);
    assert_eq!(prompts(&first, &rig.op), [Some("none".to_owned()), None]);
    assert!(first.trail.iter().any(|u| u.contains("error=login_required")));
    assert_eq!(rig.grants().await, ["alice"]);

    // The assistant's session is gone, the provider's is not: silent.
    browser.forget(&format!("http://{}", rig.app.address));
    let second = rig.launch(&mut browser, "alice", "nobody-should-be-asked").await;
    assert!(landed(&rig, &second), "{} {}", second.status, second.url);
    assert_eq!(prompts(&second, &rig.op), [Some("none".to_owned())]);
    assert!(!second.trail.iter().any(|u| u.contains("/interaction/")), "no login page: {:?}", second.trail);
}

#[tokio::test]
async fn es256_id_tokens_sign_in_and_a_rotated_key_is_fetched_again() {
    let rig = Rig::start(Op::start("ES256", CLIENT_ID, CLIENT_SECRET), &["alice", "bob"], &[]).await;
    let page = rig.launch(&mut Browser::default(), "alice", "alice").await;
    assert!(landed(&rig, &page), "{} {}: {}", page.status, page.url, page.body);

    // The provider rotates: the old keys are gone from its JWKS, new ones sign.
    let state = rig.op.test_api("/__test/rotate?keep_old=0").await;
    assert!(state["signing"]["ES256"].as_str().is_some_and(|kid| kid.starts_with("ec-2-")), "{state}");
    let page = rig.launch(&mut Browser::default(), "bob", "bob").await;
    assert!(landed(&rig, &page), "a token under the new key: {} {}", page.status, page.url);
    assert_eq!(rig.grants().await, ["alice", "bob"]);
}

#[tokio::test]
async fn hs256_id_tokens_signed_with_the_client_secret_are_refused_unless_configured() {
    // The provider advertises HS256 and signs with it.
    let rig = Rig::start(Op::start("HS256", CLIENT_ID, CLIENT_SECRET), &["alice"], &[]).await;
    let page = rig.launch(&mut Browser::default(), "alice", "alice").await;
    assert_eq!(page.status, 502, "{}", page.url);
    assert!(page.body.contains("Sign-in did not work"));
    assert!(rig.grants().await.is_empty());

    let allowed =
        Rig::start(Op::start("HS256", CLIENT_ID, CLIENT_SECRET), &["alice"], &[("OIDC_ID_TOKEN_HS256", "1")]).await;
    let page = allowed.launch(&mut Browser::default(), "alice", "alice").await;
    assert!(landed(&allowed, &page), "configured: {} {}", page.status, page.url);
}

#[tokio::test]
async fn a_username_stays_with_the_subject_that_first_signed_in_with_it() {
    let rig = Rig::start(Op::start("RS256", CLIENT_ID, CLIENT_SECRET), &["alice"], &[]).await;
    let page = rig.launch(&mut Browser::default(), "alice", "u-1001~alice").await;
    assert!(landed(&rig, &page));

    // Another account at the provider (subject `u-6666~alice`) that calls
    // itself alice.
    let mut mallory = Browser::default();
    let page = rig.launch(&mut mallory, "alice", "u-6666~alice").await;

    assert_eq!(page.status, 502, "{}", page.url);
    assert!(page.body.contains("Sign-in did not work"));
    let ours = mallory.jars.get(&format!("http://{}", rig.app.address)).cloned().unwrap_or_default();
    assert!(!ours.keys().any(|k| k.contains("session")), "no session: {ours:?}");
}
