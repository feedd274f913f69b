//! Launched from Caddie (caddie-tool-contract-ct1.md §3, §4, §6, §8): a
//! stub hub mints launch tokens and answers participant checks, a real
//! OpenID Provider signs users in (npm `oidc-provider`, `crate::op`: its
//! login page, session, PKCE, `prompt=none`), and a cookie-keeping client
//! plays the browser.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use base64::Engine;
use serde_json::{Value, json};

use crate::helpers::{Db, TestApp, serve, spawn_app};
use crate::on_both_databases;

#[path = "caddie_embed.rs"]
mod embed;

const SECRET: &str = "tool-secret: exactly these bytes";
const SLUG: &str = "assistant";
const CLIENT_ID: &str = "assistant-client";
const CLIENT_SECRET: &str = "assistant-client-secret";
const ASSIGNMENT: &str = "0b7c5e2a-1f9d-4c1e-9a57-3c1d2e4f5a6b";

on_both_databases!(
    a_launch_signs_in_provisions_and_lands_with_the_bar,
    a_replayed_launch_token_is_refused,
    provision_is_idempotent_and_wipe_and_reprovision_loses_nothing,
    a_replayed_nonce_fails_also_after_a_restart,
    participants_come_repeated_or_comma_separated_and_an_empty_list_drops_every_grant,
    the_newest_state_is_pushed_at_once_and_a_report_refused_for_good_is_dropped,
    a_reconcile_after_a_change_since_the_last_report_answers_with_a_new_seq,
    revocation_bites_at_once_on_turns_applies_and_history_reads,
    a_space_provisioned_with_a_tool_preset_calls_that_tool_server,
    the_reconcile_reports_the_state_and_drops_delisted_grants,
    revocation_drops_the_grant_ends_sessions_and_acks_every_time,
    status_reports_follow_each_change_with_rising_seq_even_after_the_hub_was_down,
);

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

// ---------------------------------------------------------------- the hub

#[derive(Default)]
struct HubState {
    /// Status reports accepted, with their headers.
    reports: Vec<(HashMap<String, String>, String)>,
    /// Answer 503 to reports.
    down: bool,
    /// Answer this status to reports, for good (an assignment it deleted).
    refuse: Option<u16>,
    participants: Vec<String>,
    /// Headers of each participants check.
    checks: Vec<HashMap<String, String>>,
}

type Hub = Arc<Mutex<HubState>>;

fn header_map(headers: &HeaderMap) -> HashMap<String, String> {
    headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())).collect()
}

async fn start_hub() -> (SocketAddr, Hub) {
    let hub: Hub = Arc::default();
    let router = axum::Router::new()
        .route(
            "/api/tool/assignments/{asg}",
            get(|State(hub): State<Hub>, headers: HeaderMap| async move {
                let mut s = hub.lock().unwrap();
                s.checks.push(header_map(&headers));
                Json(json!({ "assignment_id": ASSIGNMENT, "participants": s.participants }))
            }),
        )
        .route(
            "/api/tool/report",
            post(|State(hub): State<Hub>, headers: HeaderMap, body: String| async move {
                let mut s = hub.lock().unwrap();
                if s.down {
                    return StatusCode::SERVICE_UNAVAILABLE;
                }
                if let Some(status) = s.refuse {
                    return StatusCode::from_u16(status).unwrap();
                }
                let headers = header_map(&headers);
                s.reports.push((headers, body));
                StatusCode::OK
            }),
        )
        .with_state(hub.clone());
    (serve(router).await, hub)
}

// ---------------------------------------------------------------- the rig

struct Rig {
    app: TestApp,
    hub: String,
    hub_state: Hub,
    op: &'static crate::op::Op,
    workspace: String,
}

impl Rig {
    async fn start(db: Db, participants: &[&str]) -> Rig {
        Self::start_with(db, participants, &[]).await
    }

    async fn start_with(db: Db, participants: &[&str], env: &[(&str, &str)]) -> Rig {
        let op = crate::op::Op::shared(CLIENT_ID, CLIENT_SECRET);
        let (hub_address, hub_state) = start_hub().await;
        let hub = format!("http://{hub_address}");
        let app = spawn_app(db)
            .env("CADDIE_TOOL_SECRET", SECRET)
            .env("CADDIE_TOOL_SLUG", SLUG)
            .env("CADDIE_HUB_ORIGIN", hub.clone())
            .env("OIDC_ISSUER", op.issuer.clone())
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET);
        let app = env.iter().fold(app, |app, (k, v)| app.env(k, *v)).start().await;
        op.allow_redirect(&format!("http://{}/caddie/auth/callback", app.address)).await;
        let participants: Vec<String> = participants.iter().map(|p| p.to_string()).collect();
        let workspace = server::caddie::provision(
            app.state.caddie.as_ref().expect("Caddie is configured"),
            ASSIGNMENT,
            "prj-1",
            "Apollo (linked)",
            &json!({"greeting": "hi"}),
            &participants,
            &json!([]),
        )
        .await
        .unwrap();
        hub_state.lock().unwrap().participants = participants;
        Rig { app, hub, hub_state, op, workspace }
    }

    fn caddie_env(&self, secret: &str, previous: Option<&str>) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("CADDIE_TOOL_SECRET", secret.to_owned()),
            ("CADDIE_TOOL_SLUG", SLUG.to_owned()),
            ("CADDIE_HUB_ORIGIN", self.hub.clone()),
            ("OIDC_ISSUER", self.op.issuer.clone()),
            ("OIDC_CLIENT_ID", CLIENT_ID.to_owned()),
            ("OIDC_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
        ];
        if let Some(previous) = previous {
            env.push(("CADDIE_TOOL_SECRET_PREV", previous.to_owned()));
        }
        env
    }

    /// A hub→tool call, signed with `secret`'s caddie->tool key (or as told).
    async fn hub_call(&self, base: &str, call: HubCall<'_>) -> (u16, Value) {
        let pair = server::caddie::keys::KeyPair::derive(&server::secret::Secret::new(call.secret));
        let key = if call.wrong_direction { pair.tool_to_caddie } else { pair.caddie_to_tool };
        let ts = (now() + call.skew).to_string();
        let body = call.body.map(|b| b.to_string()).unwrap_or_default();
        let signature = hmac_check::sign(&key, &ts, call.nonce, body.as_bytes());
        let signed_body = if call.tamper { body.replace("Apollo", "Apoll0") } else { body.clone() };
        let mut request = if call.body.is_some() {
            self.app
                .client
                .post(format!("{base}{}", call.path))
                .header("content-type", "application/json")
                .body(signed_body)
        } else {
            self.app.client.get(format!("{base}{}", call.path))
        };
        for (k, v) in [
            ("x-caddie-tool", SLUG),
            ("x-caddie-contract", call.contract),
            ("x-caddie-key", &pair.kid),
            ("x-caddie-timestamp", &ts),
            ("x-caddie-nonce", call.nonce),
            ("x-caddie-signature", &signature),
        ] {
            request = request.header(k, v);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
    }

    fn claims(&self, sub: &str) -> Value {
        let now = now();
        json!({ "iss": "caddie", "aud": SLUG, "ver": "ct1", "sub": sub, "jti": server::caddie::uuid_v4(),
            "iat": now, "exp": now + 120, "prj": "apollo", "asg": ASSIGNMENT, "pnm": "Apollo",
            "stg": "Design review", "ret": format!("{}/projects/apollo?stage=3", self.hub) })
    }

    fn token(&self, claims: &Value) -> String {
        sign(claims, &server::caddie::keys::KeyPair::derive(&server::secret::Secret::new(SECRET)).caddie_to_tool)
    }

    /// `GET /launch?lt=` once, not following the redirect.
    async fn launch_once(&self, claims: &Value) -> reqwest::Response {
        let url = self.app.url(&format!("/launch?lt={}", self.token(claims)));
        self.browser().request(reqwest::Method::GET, &url, None).await
    }

    fn browser(&self) -> Browser {
        let client = || server::host::client_builder().redirect(reqwest::redirect::Policy::none());
        Browser {
            client: client().build().unwrap(),
            elsewhere: client().cookie_store(true).build().unwrap(),
            app: self.app.address,
            cookies: HashMap::new(),
        }
    }

    /// Leaves `browser` with a session at the provider as `user`, and none
    /// here: it signs in through us once, then forgets our cookie.
    async fn sign_in_at_idp(&self, browser: &mut Browser, user: &str) {
        let page = browser.visit("/caddie/login?interactive=1&next=/caddie/spaces/none").await;
        let page = self.log_in_at_idp(browser, &page, user).await;
        assert!(page.url.ends_with("/caddie/spaces/none"), "{} {}", page.url, page.body);
        browser.cookies.remove("ca_session");
    }

    /// A browser with a session at the provider as `user`.
    async fn browser_at_idp(&self, user: &str) -> Browser {
        let mut browser = self.browser();
        self.sign_in_at_idp(&mut browser, user).await;
        browser
    }

    /// On the provider's login page (`page`): signs in as `user` there and
    /// follows on; the trail continues `page`'s.
    async fn log_in_at_idp(&self, browser: &mut Browser, page: &Page, user: &str) -> Page {
        assert!(page.url.starts_with(&format!("{}/interaction/", self.op.issuer)), "not the login page: {}", page.url);
        let mut next = browser.visit(&format!("{}?username={user}", page.url)).await;
        next.trail.splice(0..0, page.trail.iter().cloned());
        next
    }

    async fn grants(&self) -> Vec<(String, String, i64)> {
        sqlx::query_as::<_, (String, String, i64)>(
            "SELECT workspace_id, username, launch_provisioned FROM space_grants ORDER BY username",
        )
        .fetch_all(&self.app.state.pool)
        .await
        .unwrap()
    }
}

fn sign(claims: &Value, key: &[u8]) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        claims,
        &jsonwebtoken::EncodingKey::from_secret(key),
    )
    .unwrap()
}

/// A browser: keeps the app's cookies (and every other origin's, apart)
/// and follows redirects by hand.
struct Browser {
    client: reqwest::Client,
    /// For other origins (the provider): its cookies kept as a browser
    /// would, by path too.
    elsewhere: reqwest::Client,
    app: SocketAddr,
    cookies: HashMap<String, String>,
}

struct Page {
    status: u16,
    url: String,
    headers: HeaderMap,
    body: String,
    /// Every URL visited on the way.
    trail: Vec<String>,
}

impl Browser {
    async fn request(
        &mut self,
        method: reqwest::Method,
        url: &str,
        form: Option<&[(&str, &str)]>,
    ) -> reqwest::Response {
        let ours = url.starts_with(&format!("http://{}", self.app));
        let mut request = if ours { self.client.request(method, url) } else { self.elsewhere.request(method, url) };
        if ours && !self.cookies.is_empty() {
            let cookies: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header("cookie", cookies.join("; "));
        }
        if let Some(form) = form {
            let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
            request = request.header("content-type", "application/x-www-form-urlencoded").body(body);
        }
        let response = request.send().await.unwrap();
        if !ours {
            return response;
        }
        let jar = &mut self.cookies;
        for set in response.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap();
            let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            let gone = attributes.contains("Max-Age=0")
                || attributes.to_ascii_lowercase().contains("expires=thu, 01 jan 1970");
            if gone || value.is_empty() {
                jar.remove(name);
            } else {
                jar.insert(name.to_owned(), value.to_owned());
            }
        }
        response
    }

    /// Visits `path_or_url` and follows redirects to the end.
    async fn visit(&mut self, path_or_url: &str) -> Page {
        self.go(reqwest::Method::GET, path_or_url, None).await
    }

    async fn go(&mut self, method: reqwest::Method, path_or_url: &str, form: Option<&[(&str, &str)]>) -> Page {
        let mut url = if path_or_url.starts_with("http") {
            path_or_url.to_owned()
        } else {
            format!("http://{}{path_or_url}", self.app)
        };
        let mut trail = Vec::new();
        let mut method = method;
        let mut form = form;
        for _ in 0..12 {
            trail.push(url.clone());
            let response = self.request(method.clone(), &url, form).await;
            if response.status().is_redirection() {
                let location = response.headers()["location"].to_str().unwrap().to_owned();
                url = if location.starts_with("http") {
                    location
                } else {
                    let base = url::Url::parse(&url).unwrap();
                    base.join(&location).unwrap().to_string()
                };
                method = reqwest::Method::GET;
                form = None;
                continue;
            }
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = response.text().await.unwrap();
            return Page { status, url, headers, body, trail };
        }
        panic!("too many redirects: {trail:?}");
    }
}

/// The widget's boot data rendered into the page.
fn boot(page: &Page) -> Value {
    let start = page.body.find("name=\"ca-boot\" content=\"").expect("a widget page") + 24;
    let end = start + page.body[start..].find('"').unwrap();
    let raw =
        page.body[start..end].replace("&quot;", "\"").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">");
    serde_json::from_str(&raw).unwrap()
}

// ---------------------------------------------------------------- tests

async fn a_launch_signs_in_provisions_and_lands_with_the_bar(db: Db) {
    let rig = Rig::start(db, &["alice"]).await;
    let mut browser = rig.browser_at_idp("alice").await;
    let claims = rig.claims("alice");

    let page = browser.visit(&format!("/launch?lt={}", rig.token(&claims))).await;

    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.url.contains(&format!("/caddie/spaces/{}?cctx=", rig.workspace)), "{}", page.url);
    let hops: Vec<&str> = page.trail.iter().map(|u| u.split('?').next().unwrap().rsplit('/').next().unwrap()).collect();
    assert_eq!(hops, ["launch", "open", "login", "auth", "callback", "open", rig.workspace.as_str()]);
    assert!(page.trail[1..].iter().all(|u| !u.contains("lt=")), "the token is gone after the first hop");
    let boot = boot(&page);
    assert_eq!(boot["caddie"]["project_name"], "Apollo");
    assert_eq!(boot["caddie"]["stage_label"], "Design review");
    assert_eq!(boot["caddie"]["return_url"], claims["ret"]);
    assert!(boot["token"].as_str().is_some_and(|t| !t.is_empty()), "the full-page app has its token");
    assert!(page.body.contains("Part of <strong>Apollo</strong> on Caddie · </span>"), "the bar is rendered");
    assert!(page.body.contains("← Back to project"));
    assert!(page.headers["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'self'"));
    // Silent sign-in: one authorize, with prompt=none.
    assert_eq!(prompts(&page.trail, &rig.op.issuer), [Some("none".to_owned())]);
    assert!(browser.cookies.contains_key("ca_session"));
    assert_eq!(rig.grants().await, [(rig.workspace.clone(), "alice".to_owned(), 1)]);
    let audit: (String, String) = sqlx::query_as("SELECT action, detail FROM audit_log WHERE username = 'alice'")
        .fetch_one(&rig.app.state.pool)
        .await
        .unwrap();
    assert_eq!(audit.0, "grant");
    assert!(audit.1.contains(claims["jti"].as_str().unwrap()), "the audit row carries the jti");

    // The bar's context, for the signed-in user: exactly three fields.
    let ctx = page.url.split("cctx=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let answer = browser.visit(&format!("/caddie/api/context/{ctx}")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&answer.body).unwrap(),
        json!({"project_name": "Apollo", "stage_label": "Design review", "return_url": claims["ret"]})
    );
    let anonymous = rig.browser().visit(&format!("/caddie/api/context/{ctx}")).await;
    assert_eq!(anonymous.status, 401, "the context needs our own session");

    // A fresh token for the full-page app, with the session.
    let renewed = browser.go(reqwest::Method::POST, &format!("/caddie/api/spaces/{}/token", rig.workspace), None).await;
    assert_eq!(renewed.status, 200);
    assert!(serde_json::from_str::<Value>(&renewed.body).unwrap()["token"].is_string());
}

#[tokio::test]
async fn the_launch_url_renders_nothing_and_303s_to_a_token_free_url() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let lt = rig.token(&rig.claims("alice"));
    let response = rig.browser().request(reqwest::Method::GET, &rig.app.url(&format!("/launch?lt={lt}")), None).await;

    assert_eq!(response.status(), 303);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with("/caddie/open?cctx="), "{location}");
    assert!(!location.contains(&lt) && !location.contains("lt="));
    assert_eq!(response.headers()["referrer-policy"], "no-referrer");
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_eq!(response.text().await.unwrap(), "", "no content on the lt URL");
}

async fn a_replayed_launch_token_is_refused(db: Db) {
    let rig = Rig::start(db, &["alice"]).await;
    let lt = rig.token(&rig.claims("alice"));
    let first = rig.browser().request(reqwest::Method::GET, &rig.app.url(&format!("/launch?lt={lt}")), None).await;
    assert_eq!(first.status(), 303);

    let replay = rig.browser().visit(&format!("/launch?lt={lt}")).await;

    assert_eq!(replay.status, 401);
    assert!(replay.body.contains("Link expired"));
    assert!(replay.body.contains(&format!("{}/go/{ASSIGNMENT}", rig.hub)), "one button to a fresh link");
}

#[tokio::test]
async fn a_forged_or_malformed_token_burns_nothing() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let claims = rig.claims("alice");
    let mut no_pnm = claims.clone();
    no_pnm.as_object_mut().unwrap().remove("pnm");
    let mut wrong_aud = claims.clone();
    wrong_aud["aud"] = json!("another-tool");
    let mut wrong_iss = claims.clone();
    wrong_iss["iss"] = json!("not-caddie");
    let mut typed_wrong = claims.clone();
    typed_wrong["exp"] = json!("soon");
    let tool_to_caddie = server::caddie::keys::KeyPair::derive(&server::secret::Secret::new(SECRET)).tool_to_caddie;
    let unsigned = format!(
        "{}.{}.",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let forged = [
        sign(&claims, b"a key the hub never had"),
        sign(&claims, &tool_to_caddie),
        unsigned,
        rig.token(&no_pnm),
        rig.token(&wrong_aud),
        rig.token(&wrong_iss),
        rig.token(&typed_wrong),
        "not.a.jwt".to_owned(),
    ];
    for lt in &forged {
        let page = rig.browser().visit(&format!("/launch?lt={lt}")).await;
        assert_eq!(page.status, 401, "{lt}");
        assert!(page.body.contains("This link is not valid"));
    }
    let mut ct2 = claims.clone();
    ct2["ver"] = json!("ct2");
    assert_eq!(rig.browser().visit(&format!("/launch?lt={}", rig.token(&ct2))).await.status, 409);

    // The genuine token with the same jti still works: nothing was burnt.
    let genuine = rig.launch_once(&claims).await;
    assert_eq!(genuine.status(), 303);
}

#[tokio::test]
async fn an_expired_token_shows_link_expired_with_a_fresh_link() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let mut claims = rig.claims("alice");
    claims["iat"] = json!(now() - 200);
    claims["exp"] = json!(now() - 80);

    let page = rig.browser().visit(&format!("/launch?lt={}", rig.token(&claims))).await;

    assert_eq!(page.status, 401);
    assert!(page.body.contains("<h1>Link expired</h1>"));
    assert!(page.body.contains(&format!("href=\"{}/go/{ASSIGNMENT}\"", rig.hub)));
    // Within the ±30 s skew it is still good.
    claims["iat"] = json!(now() - 140);
    claims["exp"] = json!(now() - 20);
    let within = rig.launch_once(&claims).await;
    assert_eq!(within.status(), 303);
}

#[tokio::test]
async fn return_urls_are_checked_by_parsing_and_a_bad_one_burns_nothing() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let hub = url::Url::parse(&rig.hub).unwrap();
    let (host, port) = (hub.host_str().unwrap().to_owned(), hub.port().unwrap());
    let claims = rig.claims("alice");
    for ret in [
        format!("http://{host}:{port}.evil.com/projects"),
        format!("http://{host}:{port}@evil.com/projects"),
        format!("http://evil.com\\@{host}:{port}/"),
        format!("//{host}:{port}/projects"),
        format!("https://{host}:{port}/projects"),
        format!("http://{host}:{}/projects", port + 1),
        "javascript:alert(1)".to_owned(),
    ] {
        let mut bad = claims.clone();
        bad["ret"] = json!(ret);
        let page = rig.browser().visit(&format!("/launch?lt={}", rig.token(&bad))).await;
        assert_eq!(page.status, 401, "{ret}");
    }
    let good = rig.launch_once(&claims).await;
    assert_eq!(good.status(), 303, "the same jti with a good ret still works");
}

#[tokio::test]
async fn a_different_signed_in_user_sees_a_page_naming_nobody_and_nothing_is_provisioned() {
    let rig = Rig::start(Db::Sqlite, &["alice", "mallory"]).await;
    let mut browser = rig.browser_at_idp("mallory").await;

    let page = browser.visit(&format!("/launch?lt={}", rig.token(&rig.claims("alice")))).await;

    assert_eq!(page.status, 403);
    assert!(page.body.contains("This link was prepared for a different user."));
    assert!(!page.body.contains("alice") && !page.body.contains("mallory"), "names nobody");
    assert!(page.body.contains("Switch account") && page.body.contains("Back to Caddie"));
    assert!(rig.grants().await.is_empty());
    // The Switch account form's redirects go on to the IdP: form-action allows it.
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains(&format!("form-action 'self' {};", rig.op.issuer)), "{csp}");

    // Switch account: signed out here, and the IdP is asked to show its login (prompt=login).
    let page = browser.visit(&format!("/launch?lt={}", rig.token(&rig.claims("alice")))).await;
    let marker = "name=\"next\" value=\"";
    let start = page.body.find(marker).unwrap() + marker.len();
    let next = page.body[start..start + page.body[start..].find('"').unwrap()].replace("&amp;", "&");
    assert!(next.starts_with("/caddie/login?switch=1&"), "{next}");
    let asked = browser.go(reqwest::Method::POST, "/caddie/logout", Some(&[("next", &next)])).await;
    assert_eq!(prompts(&asked.trail, &rig.op.issuer), [Some("login".to_owned())], "asked even with a session");
    assert!(asked.url.starts_with(&format!("{}/interaction/", rig.op.issuer)), "the provider's login page");
    assert!(!browser.cookies.contains_key("ca_session"), "signed out here");

    // Alice, signing in as herself (her own browser), is provisioned.
    let mut hers = rig.browser();
    let asked = hers.visit(&format!("/launch?lt={}", rig.token(&rig.claims("alice")))).await;
    let landed = rig.log_in_at_idp(&mut hers, &asked, "alice").await;
    assert_eq!(landed.status, 200, "{}", landed.body);
    assert_eq!(rig.grants().await.len(), 1);
}

#[tokio::test]
async fn a_non_participant_and_a_late_redeem_provision_nothing() {
    let rig = Rig::start(Db::Sqlite, &["bob"]).await;
    let page =
        rig.browser_at_idp("alice").await.visit(&format!("/launch?lt={}", rig.token(&rig.claims("alice")))).await;
    assert_eq!(page.status, 403);
    assert!(page.body.contains("You no longer have access"));
    assert!(rig.grants().await.is_empty());

    // A participant whose sign-in finishes after the token expired.
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let mut browser = rig.browser();
    let launched = browser
        .request(reqwest::Method::GET, &rig.app.url(&format!("/launch?lt={}", rig.token(&rig.claims("alice")))), None)
        .await;
    let open = launched.headers()["location"].to_str().unwrap().to_owned();
    sqlx::query("UPDATE caddie_launch_ctx SET token_exp = $1")
        .bind(now() - 31)
        .execute(&rig.app.state.pool)
        .await
        .unwrap();
    rig.sign_in_at_idp(&mut browser, "alice").await;
    let page = browser.visit(&open).await;
    assert_eq!(page.status, 401);
    assert!(page.body.contains("Link expired"));
    assert!(rig.grants().await.is_empty(), "a redeem after exp never provisions");
}

#[tokio::test]
async fn stale_participants_are_confirmed_with_the_hub_by_a_signed_call() {
    let rig = Rig::start(Db::Sqlite, &[]).await;
    // The local copy is old and empty; the hub now lists alice.
    sqlx::query("UPDATE caddie_links SET participants_at = 0").execute(&rig.app.state.pool).await.unwrap();
    rig.hub_state.lock().unwrap().participants = vec!["alice".into()];
    let mut browser = rig.browser_at_idp("alice").await;

    let page = browser.visit(&format!("/launch?lt={}", rig.token(&rig.claims("alice")))).await;

    assert_eq!(page.status, 200, "{}", page.body);
    let checks = rig.hub_state.lock().unwrap().checks.clone();
    assert_eq!(checks.len(), 1);
    let h = &checks[0];
    assert_eq!((h["x-caddie-tool"].as_str(), h["x-caddie-contract"].as_str()), (SLUG, "ct1"));
    let keys = server::caddie::keys::KeyPair::derive(&server::secret::Secret::new(SECRET));
    assert_eq!(h["x-caddie-key"], keys.kid);
    use hmac_check::verify;
    assert!(verify(
        &keys.tool_to_caddie,
        &h["x-caddie-timestamp"],
        &h["x-caddie-nonce"],
        b"",
        &h["x-caddie-signature"]
    ));
    assert!(!verify(
        &keys.caddie_to_tool,
        &h["x-caddie-timestamp"],
        &h["x-caddie-nonce"],
        b"",
        &h["x-caddie-signature"]
    ));

    // De-listed at the hub since: nothing is provisioned for bob.
    sqlx::query("UPDATE caddie_links SET participants = '[\"bob\"]', participants_at = 0")
        .execute(&rig.app.state.pool)
        .await
        .unwrap();
    rig.hub_state.lock().unwrap().participants = vec![];
    let page = rig.browser_at_idp("bob").await.visit(&format!("/launch?lt={}", rig.token(&rig.claims("bob")))).await;
    assert_eq!(page.status, 403);
}

/// One hub→tool call for `Rig::hub_call`.
struct HubCall<'a> {
    path: &'a str,
    body: Option<&'a Value>,
    nonce: &'a str,
    secret: &'a str,
    skew: i64,
    wrong_direction: bool,
    tamper: bool,
    contract: &'a str,
}

impl<'a> HubCall<'a> {
    fn new(path: &'a str, body: Option<&'a Value>, nonce: &'a str) -> Self {
        Self { path, body, nonce, secret: SECRET, skew: 0, wrong_direction: false, tamper: false, contract: "ct1" }
    }
}

fn provision_body(participants: &[&str]) -> Value {
    json!({ "assignment_id": "asg-2", "project_id": "prj-2", "project_name": "Apollo", "config": {"k": 1},
            "participants": participants, "stages": [{"key": "design", "title": "Design", "status": "open", "position": 1}],
            "contract": "ct1" })
}

async fn provision(rig: &Rig, base: &str, nonce: &str) -> (u16, Value) {
    rig.hub_call(base, HubCall::new("/caddie/api/assignments", Some(&provision_body(&["alice"])), nonce)).await
}

async fn provision_is_idempotent_and_wipe_and_reprovision_loses_nothing(db: Db) {
    let rig = Rig::start(db, &[]).await;
    let base = rig.app.url("");
    let (status, first) = provision(&rig, &base, "3f1c2a9e-0000-4000-8000-000000000001").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "ready");
    let (status, again) = provision(&rig, &base, "3f1c2a9e-0000-4000-8000-000000000002").await;
    assert_eq!((status, &again["external_ref"]), (200, &first["external_ref"]), "idempotent on assignment_id");

    // The hub wipes its row and provisions again: the same space, its data intact.
    let workspace = first["external_ref"].as_str().unwrap();
    server::db::create_conversation(&rig.app.state.pool, workspace, "alice", "kept", None).await.unwrap();
    let (_, third) = provision(&rig, &base, "3f1c2a9e-0000-4000-8000-000000000003").await;
    assert_eq!(third["external_ref"], workspace);
    assert_eq!(server::db::list_conversations(&rig.app.state.pool, workspace, "alice").await.unwrap().len(), 1);
}

async fn a_replayed_nonce_fails_also_after_a_restart(db: Db) {
    let rig = Rig::start(db, &[]).await;
    let base = rig.app.url("");
    assert_eq!(provision(&rig, &base, "3f1c2a9e-0000-4000-8000-000000000001").await.0, 200);
    let (status, replay) = provision(&rig, &base, "3f1c2a9e-0000-4000-8000-000000000001").await;
    assert_eq!((status, replay["code"].as_str()), (401, Some("replayed")));
    let restarted = format!("http://{}", crate::helpers::restart(&rig.app, &rig.caddie_env(SECRET, None)).await);
    assert_eq!(
        provision(&rig, &restarted, "3f1c2a9e-0000-4000-8000-000000000001").await.0,
        401,
        "the nonce cache is in the database"
    );
    assert_eq!(provision(&rig, &restarted, "3f1c2a9e-0000-4000-8000-000000000002").await.0, 200);
}

#[tokio::test]
async fn during_a_rotation_the_previous_key_passes_and_neither_key_fails() {
    let rig = Rig::start(Db::Sqlite, &[]).await;
    let rotated =
        format!("http://{}", crate::helpers::restart(&rig.app, &rig.caddie_env("the new secret", Some(SECRET))).await);
    let body = provision_body(&["alice"]);
    let (status, _) = rig
        .hub_call(
            &rotated,
            HubCall::new("/caddie/api/assignments", Some(&body), "3f1c2a9e-0000-4000-8000-000000000003"),
        )
        .await;
    assert_eq!(status, 200, "signed with the previous secret");
    let mut current = HubCall::new("/caddie/api/assignments", Some(&body), "3f1c2a9e-0000-4000-8000-000000000004");
    current.secret = "the new secret";
    assert_eq!(rig.hub_call(&rotated, current).await.0, 200, "signed with the current secret");
    let mut other = HubCall::new("/caddie/api/assignments", Some(&body), "3f1c2a9e-0000-4000-8000-000000000005");
    other.secret = "neither secret";
    assert_eq!(rig.hub_call(&rotated, other).await.0, 401);
}

#[tokio::test]
async fn stale_early_tampered_wrong_direction_or_unsigned_calls_fail_and_burn_no_nonce() {
    let rig = Rig::start(Db::Sqlite, &[]).await;
    let base = rig.app.url("");
    let body = provision_body(&["alice"]);
    for (mutate, why) in [
        ((|c: &mut HubCall| c.skew = -301) as fn(&mut HubCall), "301 s old"),
        (|c: &mut HubCall| c.skew = 301, "301 s ahead"),
        (|c: &mut HubCall| c.tamper = true, "body changed after signing"),
        (|c: &mut HubCall| c.wrong_direction = true, "a tool->caddie signature"),
    ] {
        let mut call = HubCall::new("/caddie/api/assignments", Some(&body), "3f1c2a9e-0000-4000-8000-000000000005");
        mutate(&mut call);
        assert_eq!(rig.hub_call(&base, call).await.0, 401, "{why}");
    }
    let response = rig.app.client.post(rig.app.url("/caddie/api/assignments")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 401, "unsigned");
    // 300 s either way is still inside the window.
    for (skew, nonce) in [(-299, "3f1c2a9e-0000-4000-8000-000000000006"), (299, "3f1c2a9e-0000-4000-8000-000000000007")]
    {
        let mut call = HubCall::new("/caddie/api/assignments", Some(&body), nonce);
        call.skew = skew;
        assert_eq!(rig.hub_call(&base, call).await.0, 200, "{skew}");
    }
    // A refused call did not burn its nonce.
    assert_eq!(
        rig.hub_call(
            &base,
            HubCall::new("/caddie/api/assignments", Some(&body), "3f1c2a9e-0000-4000-8000-000000000005")
        )
        .await
        .0,
        200
    );
}

async fn the_reconcile_reports_the_state_and_drops_delisted_grants(db: Db) {
    let rig = Rig::start(db, &["alice", "bob"]).await;
    let base = rig.app.url("");
    let path = format!("/caddie/api/assignments/{ASSIGNMENT}/status");
    let (status, report) = rig.hub_call(&base, HubCall::new(&path, None, "3f1c2a9e-0000-4000-8000-000000001001")).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["state"], "not_started", "an empty space is never done");
    assert_eq!(report["assignment_id"], ASSIGNMENT);
    assert!(report["seq"].is_i64() && report["occurred_at"].is_string());

    let pool = &rig.app.state.pool;
    let conversation = server::db::create_conversation(pool, &rig.workspace, "alice", "hi", None).await.unwrap();
    let (_, report) = rig.hub_call(&base, HubCall::new(&path, None, "3f1c2a9e-0000-4000-8000-000000001002")).await;
    assert_eq!(report["state"], "in_progress");
    let now = server::ids::now_ms();
    assert!(server::db::limits::claim_turn(pool, "turn_x", &conversation, now, now - 60_000).await.unwrap());
    server::db::finish_turn(pool, "turn_x", widget::wire::StopReason::Error, 1, 0).await.unwrap();
    let (_, report) = rig.hub_call(&base, HubCall::new(&path, None, "3f1c2a9e-0000-4000-8000-000000001003")).await;
    assert_eq!(report["state"], "needs_attention");

    // Participants diff: bob is de-listed, his launch-provisioned grant goes.
    for user in ["alice", "bob"] {
        server::db::caddie::grant_from_launch(pool, &rig.workspace, user, "client", ASSIGNMENT).await.unwrap();
    }
    let listed = format!("{path}?participants=alice");
    let (status, _) = rig.hub_call(&base, HubCall::new(&listed, None, "3f1c2a9e-0000-4000-8000-000000001004")).await;
    assert_eq!(status, 200);
    let grants: Vec<String> = rig.grants().await.into_iter().map(|(_, u, _)| u).collect();
    assert_eq!(grants, ["alice"]);
    let (status, _) = rig
        .hub_call(
            &base,
            HubCall::new("/caddie/api/assignments/nope/status", None, "3f1c2a9e-0000-4000-8000-000000001005"),
        )
        .await;
    assert_eq!(status, 404);
}

async fn revocation_drops_the_grant_ends_sessions_and_acks_every_time(db: Db) {
    let rig = Rig::start(db, &["alice"]).await;
    let mut browser = rig.browser_at_idp("alice").await;
    let page = browser.visit(&format!("/launch?lt={}", rig.token(&rig.claims("alice")))).await;
    assert_eq!(page.status, 200);
    let base = rig.app.url("");
    let body = json!({ "username": "alice", "assignment_id": ASSIGNMENT });

    let (status, ack) = rig
        .hub_call(&base, HubCall::new("/caddie/api/revoke", Some(&body), "3f1c2a9e-0000-4000-8000-000000002001"))
        .await;

    assert_eq!((status, ack["status"].as_str()), (200, Some("revoked")));
    assert!(rig.grants().await.is_empty());
    let token = browser.cookies["ca_session"].clone();
    assert_eq!(server::db::caddie::session_user(&rig.app.state.pool, &token).await.unwrap(), None);
    let page = browser.visit(&format!("/caddie/spaces/{}", rig.workspace)).await;
    assert_ne!(page.status, 200, "no way back in without a new launch");
    let (status, _) = rig
        .hub_call(&base, HubCall::new("/caddie/api/revoke", Some(&body), "3f1c2a9e-0000-4000-8000-000000002002"))
        .await;
    assert_eq!(status, 200, "the hub's retries are harmless");
}

async fn status_reports_follow_each_change_with_rising_seq_even_after_the_hub_was_down(db: Db) {
    let rig = Rig::start_with(db, &["alice"], &[("CA_CADDIE_RETRY_MS", "100")]).await;
    let state = &rig.app.state;
    let token = granted_token(&rig, "alice").await;
    let reports = |hub: &Hub| -> Vec<Value> {
        hub.lock().unwrap().reports.iter().map(|(_, b)| serde_json::from_str(b).unwrap()).collect()
    };

    rig.app.turn(&token, None, "hello").await;

    // Awaited inside the change: the report is there when the turn is done.
    let first = reports(&rig.hub_state);
    assert_eq!(first.len(), 1);
    assert_eq!((first[0]["state"].as_str(), first[0]["seq"].as_i64()), (Some("in_progress"), Some(1)));
    assert_eq!(first[0]["assignment_id"], ASSIGNMENT);
    let (headers, body) = rig.hub_state.lock().unwrap().reports[0].clone();
    let keys = server::caddie::keys::KeyPair::derive(&server::secret::Secret::new(SECRET));
    assert!(hmac_check::verify(
        &keys.tool_to_caddie,
        &headers["x-caddie-timestamp"],
        &headers["x-caddie-nonce"],
        body.as_bytes(),
        &headers["x-caddie-signature"]
    ));

    // The hub is down for two changes; the reports wait in the queue.
    rig.hub_state.lock().unwrap().down = true;
    rig.app.turn(&token, None, "again").await;
    rig.app.turn(&token, None, "and again").await;
    assert_eq!(reports(&rig.hub_state).len(), 1);
    rig.hub_state.lock().unwrap().down = false;
    // The queue's row goes once the hub has answered: wait for both.
    for _ in 0..100 {
        let queued = server::db::caddie::count_queued_reports(&state.pool).await.unwrap();
        if reports(&rig.hub_state).len() == 2 && queued == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let seqs: Vec<i64> = reports(&rig.hub_state).iter().map(|r| r["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, [1, 3], "once the hub is back: the newest state, the older one superseded");
    assert_eq!(server::db::caddie::count_queued_reports(&state.pool).await.unwrap(), 0);
}

mod hmac_check {
    pub fn sign(key: &[u8; 32], ts: &str, nonce: &str, body: &[u8]) -> String {
        use sha2::{Digest, Sha256};
        let mut k = [0u8; 64];
        k[..32].copy_from_slice(key);
        let ipad: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
        let opad: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
        let inner =
            Sha256::new().chain_update(&ipad).chain_update(format!("{ts}\n{nonce}\n")).chain_update(body).finalize();
        let outer = Sha256::new().chain_update(&opad).chain_update(inner).finalize();
        outer.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// HMAC-SHA256 over `ts + "\n" + nonce + "\n" + body`, computed by hand
    /// (RFC 2104) so the test does not share the server's code.
    pub fn verify(key: &[u8; 32], ts: &str, nonce: &str, body: &[u8], signature: &str) -> bool {
        use sha2::{Digest, Sha256};
        let mut k = [0u8; 64];
        k[..32].copy_from_slice(key);
        let ipad: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
        let opad: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
        let inner =
            Sha256::new().chain_update(&ipad).chain_update(format!("{ts}\n{nonce}\n")).chain_update(body).finalize();
        let outer = Sha256::new().chain_update(&opad).chain_update(inner).finalize();
        outer.iter().map(|b| format!("{b:02x}")).collect::<String>() == signature
    }
}

#[tokio::test]
async fn login_required_falls_back_to_an_interactive_login_and_logout_opts_out_of_the_silent_probe() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let mut browser = rig.browser();

    // No session at the provider: its login page, after the silent probe.
    let asked = browser.visit(&format!("/launch?lt={}", rig.token(&rig.claims("alice")))).await;
    assert!(asked.trail.iter().any(|u| u.contains("error=login_required")), "{:?}", asked.trail);
    let page = rig.log_in_at_idp(&mut browser, &asked, "alice").await;

    assert_eq!(page.status, 200, "{}", page.body);
    let asked_for = prompts(&page.trail, &rig.op.issuer);
    assert_eq!(asked_for, [Some("none".to_owned()), None], "silent first, then interactive");

    let out = browser.go(reqwest::Method::POST, "/caddie/logout", Some(&[])).await;
    assert_eq!(out.status, 200);
    assert!(out.body.contains("Signed out"));
    // What the widget kept in this browser goes with the session.
    assert_eq!(out.headers["clear-site-data"], "\"storage\"");
    assert_eq!(browser.cookies.get("bw_optout").map(String::as_str), Some("1"));
    assert!(!browser.cookies.contains_key("ca_session"));
    // The provider still has its session: the sign-in goes through without
    // a page, but it was not a silent probe.
    let again = browser.visit(&format!("/caddie/spaces/{}", rig.workspace)).await;
    assert_eq!(again.status, 200, "{} {}", again.url, again.body);
    assert_eq!(prompts(&again.trail, &rig.op.issuer), [None], "after logout: no silent probe");
}

#[tokio::test]
async fn the_bar_falls_back_to_the_link_and_a_direct_visit_needs_a_grant() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let mut browser = rig.browser_at_idp("alice").await;
    let claims = rig.claims("alice");
    browser.visit(&format!("/launch?lt={}", rig.token(&claims))).await;

    // A direct visit later, without the launch's context.
    let page = browser.visit(&format!("/caddie/spaces/{}", rig.workspace)).await;
    assert_eq!(page.status, 200);
    let boot = boot(&page);
    assert_eq!(boot["caddie"]["project_name"], "Apollo (linked)", "from caddie_links");
    assert_eq!(boot["caddie"]["return_url"], claims["ret"], "the last launch's return URL");

    // Someone signed in without a grant.
    let page = rig.browser_at_idp("eve").await.visit(&format!("/caddie/spaces/{}", rig.workspace)).await;
    assert_eq!(page.status, 403);
    assert!(page.body.contains("You no longer have access"));
}

#[tokio::test]
async fn a_sign_in_callback_from_another_browser_is_refused() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let mut victim = rig.browser_at_idp("alice").await;
    // The victim starts a sign-in; the attacker's callback carries the victim's state.
    let start = victim.request(reqwest::Method::GET, &rig.app.url("/caddie/login?next=/caddie/spaces/x"), None).await;
    let authorize = start.headers()["location"].to_str().unwrap().to_owned();
    let state = url::Url::parse(&authorize).unwrap().query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    let mut attacker = rig.browser();
    let page = attacker.visit(&format!("/caddie/auth/callback?state={state}&code=code-0")).await;
    assert_eq!(page.status, 502);
    assert!(!attacker.cookies.contains_key("ca_session"));
    // An open redirect through `next` is refused too.
    let page = rig.browser().visit("/caddie/login?next=https://evil.com/").await;
    assert_eq!(page.status, 401);
}

#[tokio::test]
async fn expired_sessions_and_contexts_are_deleted_and_live_ones_kept() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let mut browser = rig.browser_at_idp("alice").await;
    browser.visit(&format!("/launch?lt={}", rig.token(&rig.claims("alice")))).await;
    let pool = &rig.app.state.pool;
    let stale = server::db::caddie::create_session(pool, "old_user").await.unwrap();
    sqlx::query("UPDATE user_sessions SET expires_at = 0 WHERE username = 'old_user'").execute(pool).await.unwrap();
    sqlx::query("UPDATE caddie_launch_ctx SET expires_at = 0").execute(pool).await.unwrap();

    let deleted = server::db::caddie::delete_expired(pool).await.unwrap();

    assert_eq!(deleted, 2, "the stale session and the launch context");
    assert_eq!(server::db::caddie::session_user(pool, &stale).await.unwrap(), None);
    let live = &browser.cookies["ca_session"];
    assert_eq!(server::db::caddie::session_user(pool, live).await.unwrap().as_deref(), Some("alice"));
}

#[tokio::test]
async fn without_caddie_configuration_the_routes_do_not_exist() {
    let app = spawn_app(Db::Sqlite).start().await;
    for path in
        ["/launch?lt=x", "/caddie/open?cctx=x", "/caddie/login?next=/caddie/", "/caddie/api/context/x", "/api/meta"]
    {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }
}

/// Session cookies are `Secure` when the browser came over https: the
/// public URL says so, or a trusted proxy's `X-Forwarded-Proto` does.
/// Anyone else's `X-Forwarded-Proto` is not believed.
#[tokio::test]
async fn cookies_are_secure_over_https_as_the_public_url_or_a_trusted_proxy_says() {
    async fn logout_cookies(rig: &Rig, proto: Option<&str>) -> Vec<String> {
        let mut request = rig.app.client.post(rig.app.url("/caddie/logout"));
        if let Some(proto) = proto {
            request = request.header("x-forwarded-proto", proto);
        }
        let response = request.send().await.unwrap();
        let cookies: Vec<String> =
            response.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).collect();
        assert!(!cookies.is_empty(), "logout sets its cookies");
        cookies
    }
    let secure = |cookies: &[String]| cookies.iter().all(|c| c.ends_with("; Secure"));

    let behind_proxy = Rig::start_with(Db::Sqlite, &["alice"], &[("CA_TRUSTED_PROXIES", "127.0.0.1, ::1")]).await;
    assert!(secure(&logout_cookies(&behind_proxy, Some("https")).await), "the trusted proxy says https");
    assert!(!secure(&logout_cookies(&behind_proxy, Some("http")).await));
    assert!(!secure(&logout_cookies(&behind_proxy, None).await));

    let no_proxy = Rig::start(Db::Sqlite, &["alice"]).await;
    assert!(!secure(&logout_cookies(&no_proxy, Some("https")).await), "an untrusted peer's header is ignored");

    let https = Rig::start_with(Db::Sqlite, &["alice"], &[("CA_PUBLIC_URL", "https://assistant.example")]).await;
    let cookies = logout_cookies(&https, None).await;
    assert!(secure(&cookies), "the public URL is https");
    let session = cookies.iter().find(|c| c.contains("ca_session=")).unwrap();
    assert!(session.starts_with("__Host-ca_session=") && session.contains("; Path=/;"), "{session}");
    assert!(!session.to_ascii_lowercase().contains("domain="), "{session}");
    let plain = logout_cookies(&no_proxy, None).await;
    assert!(plain.iter().any(|c| c.starts_with("ca_session=")), "over http: no prefix (it needs Secure): {plain:?}");
}

/// Over https only the `__Host-` session cookie counts: a plain one (which
/// a subdomain or a plain-http page could have planted) signs nobody in.
#[tokio::test]
async fn session_and_state_cookies_are_host_prefixed_over_https_and_a_plain_one_is_ignored_there() {
    let rig = Rig::start_with(Db::Sqlite, &["alice"], &[("CA_TRUSTED_PROXIES", "127.0.0.1, ::1")]).await;
    let token = server::db::caddie::create_session(&rig.app.state.pool, "alice").await.unwrap();
    let context = |cookie: String| {
        rig.app
            .client
            .get(rig.app.url("/caddie/api/context/0123456789abcdef0123456789abcdef"))
            .header("x-forwarded-proto", "https")
            .header("cookie", cookie)
            .send()
    };
    assert_eq!(context(format!("ca_session={token}")).await.unwrap().status(), 401, "plain: nobody");
    assert_eq!(
        context(format!("__Host-ca_session={token}")).await.unwrap().status(),
        404,
        "signed in: no such context"
    );

    // The sign-in flow's state cookie too.
    let no_redirects = server::host::client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let start = no_redirects
        .get(rig.app.url("/caddie/login?next=/caddie/spaces/x"))
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    let set = start.headers()["set-cookie"].to_str().unwrap();
    assert!(set.starts_with("__Host-ca_oidc_state=") && set.ends_with("; Secure"), "{set}");
}

#[tokio::test]
async fn a_logout_from_another_site_is_refused() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let token = server::db::caddie::create_session(&rig.app.state.pool, "alice").await.unwrap();
    let logout = |headers: &[(&'static str, String)]| {
        let mut request =
            rig.app.client.post(rig.app.url("/caddie/logout")).header("cookie", format!("ca_session={token}"));
        for (k, v) in headers {
            request = request.header(*k, v.clone());
        }
        request.send()
    };
    for hostile in [
        vec![("origin", "https://evil.example".to_owned())],
        vec![("origin", "null".to_owned())],
        vec![("sec-fetch-site", "cross-site".to_owned())],
        vec![("sec-fetch-site", "same-site".to_owned())],
    ] {
        let response = logout(&hostile).await.unwrap();
        assert_eq!(response.status(), 403, "{hostile:?}");
        assert!(response.headers().get("set-cookie").is_none(), "no cookie touched: {hostile:?}");
    }
    let pool = &rig.app.state.pool;
    assert_eq!(server::db::caddie::session_user(pool, &token).await.unwrap().as_deref(), Some("alice"), "still in");

    // From our own page: signed out.
    // Chromium on a no-referrer page: Origin null, but same-origin.
    let ours = vec![("origin", "null".to_owned()), ("sec-fetch-site", "same-origin".to_owned())];
    assert_eq!(logout(&ours).await.unwrap().status(), 200);
    // A browser without Fetch Metadata names our origin.
    let token = server::db::caddie::create_session(pool, "alice").await.unwrap();
    let response = rig
        .app
        .client
        .post(rig.app.url("/caddie/logout"))
        .header("cookie", format!("ca_session={token}"))
        .header("origin", format!("http://{}", rig.app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(server::db::caddie::session_user(pool, &token).await.unwrap(), None);
}

#[tokio::test]
async fn the_health_check_names_the_tool_the_contract_and_the_version() {
    let rig = Rig::start(Db::Sqlite, &[]).await;

    let response = rig.app.client.get(rig.app.url("/api/meta")).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let meta: Value = response.json().await.unwrap();
    assert_eq!(meta, json!({"tool": SLUG, "contract": "ct1", "version": env!("CARGO_PKG_VERSION"), "status": "ok"}));
}

#[tokio::test]
async fn an_unsigned_call_gets_401_and_learns_nothing_else() {
    let rig = Rig::start(Db::Sqlite, &[]).await;
    let body = provision_body(&["alice"]);
    let bare = rig.app.client.post(rig.app.url("/caddie/api/assignments")).json(&body).send().await.unwrap();
    assert_eq!(bare.status(), 401);
    let told = bare.text().await.unwrap();
    assert!(!told.contains("ct1") && !told.contains("contract"), "{told}");

    // Another contract, badly signed: still 401, the signature comes first.
    let mut call = HubCall::new("/caddie/api/assignments", Some(&body), "3f1c2a9e-0000-4000-8000-000000003001");
    call.contract = "ct2";
    call.secret = "not the secret";
    assert_eq!(rig.hub_call(&rig.app.url(""), call).await.0, 401);
    // Signed, another contract: now 409.
    let mut call = HubCall::new("/caddie/api/assignments", Some(&body), "3f1c2a9e-0000-4000-8000-000000003002");
    call.contract = "ct2";
    assert_eq!(rig.hub_call(&rig.app.url(""), call).await.0, 409);
}

#[tokio::test]
async fn a_nonce_that_is_not_a_uuid_is_refused_and_burns_nothing() {
    let rig = Rig::start(Db::Sqlite, &[]).await;
    let base = rig.app.url("");
    for nonce in ["", "nonce-0001-aaaa", "3f1c2a9e000040008000000000004001", "3f1c2a9e-0000-4000-8000-00000000400z"] {
        assert_eq!(provision(&rig, &base, nonce).await.0, 401, "{nonce:?}");
    }
    assert_eq!(provision(&rig, &base, "3f1c2a9e-0000-4000-8000-000000004001").await.0, 200);
}

async fn participants_come_repeated_or_comma_separated_and_an_empty_list_drops_every_grant(db: Db) {
    let rig = Rig::start(db, &["alice", "bob", "carol"]).await;
    let base = rig.app.url("");
    let pool = &rig.app.state.pool;
    for user in ["alice", "bob", "carol"] {
        server::db::caddie::grant_from_launch(pool, &rig.workspace, user, "client", ASSIGNMENT).await.unwrap();
    }
    let path = format!("/caddie/api/assignments/{ASSIGNMENT}/status");
    let granted = || async { rig.grants().await.into_iter().map(|(_, u, _)| u).collect::<Vec<_>>() };
    let nonces = (5001..).map(|n| format!("3f1c2a9e-0000-4000-8000-00000000{n}"));
    let mut nonces = nonces.into_iter();
    let mut reconcile = async |query: &str| {
        let nonce = nonces.next().unwrap();
        let (status, body) = rig.hub_call(&base, HubCall::new(&format!("{path}{query}"), None, &nonce)).await;
        assert_eq!(status, 200, "{query}: {body}");
    };

    reconcile("?participants=alice,bob").await;
    assert_eq!(granted().await, ["alice", "bob"], "one comma-separated value");
    reconcile("?participants=alice&participants=bob").await;
    assert_eq!(granted().await, ["alice", "bob"], "repeated");
    reconcile("").await;
    assert_eq!(granted().await, ["alice", "bob"], "no list: no answer, nothing changes");
    reconcile("?participants=").await;
    assert!(granted().await.is_empty(), "an empty list is a real answer: nobody");
}

/// A grant of the rig's space for `user` (as a launch provisions it) and
/// an embed token minted as the full page's is.
async fn granted_token(rig: &Rig, user: &str) -> String {
    let state = &rig.app.state;
    server::db::caddie::grant_from_launch(&state.pool, &rig.workspace, user, "client", ASSIGNMENT).await.unwrap();
    let workspace = server::db::workspace(&state.pool, &rig.workspace).await.unwrap().unwrap();
    let secret = state.vault.open(&workspace.embed_secret_enc).unwrap();
    server::auth::mint(&rig.workspace, secret.expose(), user, &[], 300)
}

fn report_seqs(hub: &Hub) -> Vec<i64> {
    hub.lock()
        .unwrap()
        .reports
        .iter()
        .map(|(_, b)| serde_json::from_str::<Value>(b).unwrap()["seq"].as_i64().unwrap())
        .collect()
}

async fn the_newest_state_is_pushed_at_once_and_a_report_refused_for_good_is_dropped(db: Db) {
    // The queue's retries would come only after ten minutes.
    let rig = Rig::start_with(db, &["alice"], &[("CA_CADDIE_RETRY_MS", "600000")]).await;
    let token = granted_token(&rig, "alice").await;
    let queued = || async { server::db::caddie::count_queued_reports(&rig.app.state.pool).await.unwrap() };
    rig.app.turn(&token, None, "hello").await;
    assert_eq!(report_seqs(&rig.hub_state), [1]);

    rig.hub_state.lock().unwrap().down = true;
    rig.app.turn(&token, None, "while the hub is down").await;
    assert_eq!(queued().await, 1);

    // The hub is back: the next change pushes its state at once, without
    // waiting for the queue's backoff, and the older report is superseded.
    rig.hub_state.lock().unwrap().down = false;
    rig.app.turn(&token, None, "the hub is back").await;
    assert_eq!(report_seqs(&rig.hub_state), [1, 3]);
    assert_eq!(queued().await, 0);

    // The hub refuses for good (it deleted the assignment): dropped, not queued.
    rig.hub_state.lock().unwrap().refuse = Some(404);
    rig.app.turn(&token, None, "refused").await;
    assert_eq!(queued().await, 0, "never retried forever");
    rig.hub_state.lock().unwrap().refuse = None;
    rig.app.turn(&token, None, "accepted again").await;
    assert_eq!(report_seqs(&rig.hub_state), [1, 3, 5], "nothing blocks the later reports");
}

async fn a_reconcile_after_a_change_since_the_last_report_answers_with_a_new_seq(db: Db) {
    let rig = Rig::start(db, &["alice"]).await;
    let token = granted_token(&rig, "alice").await;
    let base = rig.app.url("");
    let path = format!("/caddie/api/assignments/{ASSIGNMENT}/status");
    let reconcile = |nonce: &'static str| rig.hub_call(&base, HubCall::new(&path, None, nonce));
    let events = rig.app.turn(&token, None, "hello").await;
    assert_eq!(report_seqs(&rig.hub_state), [1]);
    let (_, report) = reconcile("3f1c2a9e-0000-4000-8000-000000006001").await;
    assert_eq!((report["state"].as_str(), report["seq"].as_i64()), (Some("in_progress"), Some(1)), "unchanged");

    // The space changes without a push (here: its newest turn failed).
    let conversation = crate::helpers::of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let pool = &rig.app.state.pool;
    let now = server::ids::now_ms();
    assert!(server::db::limits::claim_turn(pool, "turn_failed", &conversation, now, now - 60_000).await.unwrap());
    server::db::finish_turn(pool, "turn_failed", widget::wire::StopReason::Error, 1, 0).await.unwrap();

    let (_, report) = reconcile("3f1c2a9e-0000-4000-8000-000000006002").await;
    assert_eq!((report["state"].as_str(), report["seq"].as_i64()), (Some("needs_attention"), Some(2)));
    let (_, report) = reconcile("3f1c2a9e-0000-4000-8000-000000006003").await;
    assert_eq!(report["seq"], 2, "the same state keeps its seq");
}

async fn revocation_bites_at_once_on_turns_applies_and_history_reads(db: Db) {
    let rig = Rig::start(db, &["alice", "bob"]).await;
    let (alice, bob) = (granted_token(&rig, "alice").await, granted_token(&rig, "bob").await);
    let events = rig.app.turn(&alice, None, "hello").await;
    let done = crate::helpers::of(&events, "done");
    assert_eq!(done[0]["stop_reason"], "completed");
    let conversation = crate::helpers::of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let turn = crate::helpers::of(&events, "turn")[0]["turn_id"].as_str().unwrap().to_owned();

    let body = json!({ "username": "alice", "assignment_id": ASSIGNMENT });
    let (status, _) = rig
        .hub_call(
            &rig.app.url(""),
            HubCall::new("/caddie/api/revoke", Some(&body), "3f1c2a9e-0000-4000-8000-000000007001"),
        )
        .await;
    assert_eq!(status, 200);

    // Alice's token has minutes left; every call is refused at once.
    let refused = |response: reqwest::Response| async move {
        assert_eq!(response.status(), 403, "{}", response.url());
        assert_eq!(response.json::<Value>().await.unwrap()["code"], "no_access");
    };
    refused(rig.app.post("/v1/chat/turns", &alice, &json!({"message": "again"})).await).await;
    refused(rig.app.post("/v1/actions/act_anything/apply", &alice, &json!({})).await).await;
    refused(rig.app.get("/v1/conversations", &alice).await).await;
    refused(rig.app.get(&format!("/v1/conversations/{conversation}"), &alice).await).await;
    refused(rig.app.get(&format!("/v1/turns/{turn}/events"), &alice).await).await;

    // Bob is unaffected.
    assert_eq!(crate::helpers::of(&rig.app.turn(&bob, None, "hello").await, "done")[0]["stop_reason"], "completed");
    assert_eq!(rig.app.get("/v1/conversations", &bob).await.status(), 200);
}

async fn a_space_provisioned_with_a_tool_preset_calls_that_tool_server(db: Db) {
    use crate::helpers::{ADMIN_TOKEN, HOST_SECRET, HostSpec, task_tools};
    let rig = Rig::start(db, &[]).await;
    let host = HostSpec::new(task_tools()).start().await;
    let base = rig.app.url("");

    // The operator names a tool server.
    let preset = json!({"base_url": host.base_url(), "secret": HOST_SECRET});
    let (status, shown) = rig.app.put_json("/v1/tool-presets/shop", ADMIN_TOKEN, &preset).await;
    assert_eq!(status, 200, "{shown}");
    let normalized = format!("{}/", host.base_url().trim_end_matches('/'));
    assert_eq!(shown, json!({"name": "shop", "base_url": normalized, "allowed_tools": [], "spaces": 0}));
    let (_, listed) = rig.app.get_json("/v1/tool-presets", ADMIN_TOKEN).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert!(!listed.to_string().contains(HOST_SECRET), "never the secret: {listed}");
    let (sealed,): (String,) = sqlx::query_as("SELECT secret_enc FROM tool_presets WHERE name = 'shop'")
        .fetch_one(&rig.app.state.pool)
        .await
        .unwrap();
    assert!(!sealed.contains(HOST_SECRET), "sealed at rest");
    assert_eq!(rig.app.put_json("/v1/tool-presets/shop", "not-the-admin-token", &preset).await.0, 401);
    assert_eq!(rig.app.put_json("/v1/tool-presets/Not%20A%20Name", ADMIN_TOKEN, &preset).await.0, 400);

    // An assignment whose config names an unknown preset provisions nothing.
    let body = |asg: &str, tools: Value| {
        json!({ "assignment_id": asg, "project_id": "prj-9", "project_name": "Shop", "participants": ["alice"],
                "config": {"assistant": {"tools": tools}}, "contract": "ct1" })
    };
    let unknown = body("asg-unknown", json!("nope"));
    let call = HubCall::new("/caddie/api/assignments", Some(&unknown), "3f1c2a9e-0000-4000-8000-000000008001");
    let (status, refused) = rig.hub_call(&base, call).await;
    assert_eq!((status, refused["code"].as_str()), (400, Some("unknown_preset")), "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("`nope`"), "{refused}");
    assert!(server::db::caddie::link_by_assignment(&rig.app.state.pool, "asg-unknown").await.unwrap().is_none());
    let odd = body("asg-odd", json!(["shop"]));
    let call = HubCall::new("/caddie/api/assignments", Some(&odd), "3f1c2a9e-0000-4000-8000-000000008002");
    assert_eq!(rig.hub_call(&base, call).await.0, 400);

    // One that names the preset: its space talks to that tool server.
    let named = body("asg-shop", json!("shop"));
    let call = HubCall::new("/caddie/api/assignments", Some(&named), "3f1c2a9e-0000-4000-8000-000000008003");
    let (status, ready) = rig.hub_call(&base, call).await;
    assert_eq!(status, 200, "{ready}");
    let space = ready["external_ref"].as_str().unwrap().to_owned();
    let pool = &rig.app.state.pool;
    server::db::caddie::grant_from_launch(pool, &space, "alice", "client", "asg-shop").await.unwrap();
    let workspace = server::db::workspace(pool, &space).await.unwrap().unwrap();
    let secret = rig.app.state.vault.open(&workspace.embed_secret_enc).unwrap();
    let token = server::auth::mint(&space, secret.expose(), "alice", &[], 300);
    let before = host.count("tools");
    let events = rig.app.turn(&token, None, "hello").await;
    assert_eq!(crate::helpers::of(&events, "done")[0]["stop_reason"], "completed");
    let calls = host.calls_of("tools");
    assert_eq!(calls.len(), before + 1, "the space's turn asked the preset's tool server");
    assert!(calls.last().unwrap().as_str().unwrap().contains(&space), "in the space's scope: {calls:?}");

    // The preset changes: the space follows.
    let narrowed = json!({"base_url": host.base_url(), "secret": HOST_SECRET, "allowed_tools": ["list_tasks"]});
    let (status, shown) = rig.app.put_json("/v1/tool-presets/shop", ADMIN_TOKEN, &narrowed).await;
    assert_eq!((status, shown["spaces"].as_i64()), (200, Some(1)));
    let integration = server::db::integration(pool, &space, "generic-rest").await.unwrap().unwrap();
    assert_eq!(integration.allowed_tools(), ["list_tasks"]);
    // It moves to another tool server: the space's next turn asks that one,
    // though the server opened the old one for the turn before.
    let moved = HostSpec::new(task_tools()).start().await;
    let to = json!({"base_url": moved.base_url(), "secret": HOST_SECRET});
    assert_eq!(rig.app.put_json("/v1/tool-presets/shop", ADMIN_TOKEN, &to).await.0, 200);
    let (before, old_before) = (moved.count("tools"), host.count("tools"));
    let events = rig.app.turn(&token, None, "hello again").await;
    assert_eq!(crate::helpers::of(&events, "done")[0]["stop_reason"], "completed");
    assert_eq!(moved.count("tools"), before + 1, "the turn asked the preset's new tool server");
    assert_eq!(host.count("tools"), old_before, "not the old one");
}

/// The `prompt` of each authorization request on `trail`.
fn prompts(trail: &[String], issuer: &str) -> Vec<Option<String>> {
    trail
        .iter()
        .filter(|u| u.starts_with(&format!("{issuer}/auth?")))
        .map(|u| url::Url::parse(u).unwrap().query_pairs().find(|(k, _)| k == "prompt").map(|(_, v)| v.into_owned()))
        .collect()
}
