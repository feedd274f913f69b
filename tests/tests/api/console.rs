//! The console (`/console`): sign-in into an `HttpOnly`, `SameSite=Strict`
//! session, cross-site posts refused, pages never framed, and the
//! onboarding's forms acting through the public API.

use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::json;

use crate::helpers::{ADMIN_TOKEN, Db, FakeHost, HOST_SECRET, TestApp, spawn_app, task_tools, token};
use crate::on_both_databases;

/// The Rust token snippet the console shows, compiled here as it is.
#[path = "../../../console/snippets/mint_token.rs"]
mod rust_snippet;

on_both_databases!(
    the_console_signs_in_with_an_api_key_into_a_strict_http_only_session_and_out_again,
    the_onboarding_saves_the_workspace_connects_the_tool_server_and_shows_the_report,
    the_onboarding_checks_connects_and_disconnects_an_mcp_server,
    the_operator_creates_a_workspace_and_sees_its_secrets_once,
    the_audit_trail_is_filtered_paged_and_exported,
    secrets_rotate_with_their_grace_shown_and_the_session_follows_its_new_key,
    retention_is_set_and_a_user_is_erased_only_when_confirmed,
    the_workspaces_conversations_are_listed_by_user_and_day_and_read_as_the_user_saw_them,
    the_tests_page_keeps_a_refused_suite_in_the_editor_and_refuses_another_sites_form,
);

/// A browser on the console: its cookie, and the headers a browser sends
/// from the console's own pages (`Sec-Fetch-Site: same-origin`) unless told.
struct Browser<'a> {
    app: &'a TestApp,
    client: reqwest::Client,
    cookie: Option<String>,
}

struct Answer {
    status: u16,
    location: Option<String>,
    set_cookie: Option<String>,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl<'a> Browser<'a> {
    fn new(app: &'a TestApp) -> Self {
        let client = server::host::client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Self { app, client, cookie: None }
    }

    async fn get(&mut self, path: &str) -> Answer {
        let mut request = self.client.get(self.app.url(path));
        if let Some(cookie) = &self.cookie {
            request = request.header(COOKIE, cookie);
        }
        self.read(request.send().await.unwrap()).await
    }

    async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Answer {
        self.post_from(path, form, Some("same-origin")).await
    }

    async fn post_from(&mut self, path: &str, form: &[(&str, &str)], site: Option<&str>) -> Answer {
        let mut request = self.client.post(self.app.url(path)).form(form);
        if let Some(site) = site {
            request = request.header("sec-fetch-site", site);
        }
        if let Some(cookie) = &self.cookie {
            request = request.header(COOKIE, cookie);
        }
        self.read(request.send().await.unwrap()).await
    }

    async fn read(&mut self, response: reqwest::Response) -> Answer {
        let header =
            |name| response.headers().get(name).map(|v: &reqwest::header::HeaderValue| v.to_str().unwrap().to_owned());
        let (location, set_cookie) = (header(LOCATION), header(SET_COOKIE));
        if let Some(set) = &set_cookie {
            let pair = set.split(';').next().unwrap().to_owned();
            self.cookie = (!pair.ends_with('=')).then_some(pair);
        }
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        Answer { status, location, set_cookie, headers, body: response.text().await.unwrap() }
    }
}

/// A workspace the operator made: its id, embed secret and api key.
struct Made {
    id: String,
    secret: String,
    api_key: String,
}

async fn made_workspace(app: &TestApp) -> Made {
    let body = json!({"name": "Shop", "allowed_origins": ["https://shop.example"]});
    let (status, created) = app.post_json("/v1/workspaces", ADMIN_TOKEN, &body).await;
    assert_eq!(status, 201, "{created}");
    let text = |key: &str| created[key].as_str().unwrap().to_owned();
    Made { id: text("id"), secret: text("embed_secret"), api_key: text("api_key") }
}

async fn workspace(app: &TestApp) -> (String, String) {
    let made = made_workspace(app).await;
    (made.id, made.api_key)
}

async fn the_console_signs_in_with_an_api_key_into_a_strict_http_only_session_and_out_again(db: Db) {
    let app = spawn_app(db).start().await;
    let (_, api_key) = workspace(&app).await;
    let mut browser = Browser::new(&app);

    let page = browser.get("/console").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Sign in") && page.body.contains(r#"action="/console/sign-in""#), "{}", page.body);
    // Never framed or cached; only the console's own script (which hydrates
    // the page from its data), no inline script.
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("script-src 'self' 'wasm-unsafe-eval';") && !csp.contains("unsafe-inline"), "{csp}");
    assert!(page.body.contains(r#"<script type="module" src="/console-boot.js"></script>"#), "{}", page.body);
    assert!(page.body.contains(r#"<script type="application/json" id="console-page">{"title":"Sign in""#));
    assert_eq!(page.headers["x-frame-options"], "DENY");
    assert_eq!(page.headers["cache-control"], "no-store");

    let wrong = browser.post("/console/sign-in", &[("key", "ca_not-a-key")]).await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("not a workspace"), "{}", wrong.body);
    assert!(browser.cookie.is_none());

    let signed = browser.post("/console/sign-in", &[("key", &api_key)]).await;
    assert_eq!((signed.status, signed.location.as_deref()), (303, Some("/console?done=signed-in")));
    let cookie = signed.set_cookie.unwrap();
    assert!(cookie.starts_with("ca_console="), "plain http on loopback: {cookie}");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=28800"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains(&api_key), "the key stays on the server");
    let home = browser.get("/console").await;
    assert!(home.body.contains("Set up your assistant") && home.body.contains("Shop"), "{}", home.body);
    assert!(!home.body.contains(&api_key), "the key is never shown again");

    let before = browser.cookie.clone();
    let out = browser.post("/console/sign-out", &[]).await;
    assert_eq!((out.status, out.location.as_deref()), (303, Some("/console")));
    assert!(out.set_cookie.unwrap().contains("Max-Age=0"));
    // The old cookie no longer opens the console.
    browser.cookie = before;
    let after = browser.get("/console").await;
    assert!(after.body.contains(r#"action="/console/sign-in""#), "{}", after.body);
}

async fn the_onboarding_saves_the_workspace_connects_the_tool_server_and_shows_the_report(db: Db) {
    let host = FakeHost::start(task_tools(), 200, json!({"output": {"status": "done"}})).await;
    let app = spawn_app(db).start().await;
    let (id, api_key) = workspace(&app).await;
    let mut browser = Browser::new(&app);
    browser.post("/console/sign-in", &[("key", &api_key)]).await;

    let saved = browser
        .post(
            "/console/workspace",
            &[("name", "Acme Shop"), ("origins", "https://shop.example\n\n  https://www.shop.example  ")],
        )
        .await;
    assert_eq!((saved.status, saved.location.as_deref()), (303, Some("/console?done=saved")));
    let (_, shown) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(shown["name"], "Acme Shop");
    assert_eq!(shown["allowed_origins"], json!(["https://shop.example", "https://www.shop.example"]));
    // The API's own refusal comes back on the page, the form kept.
    let bad = browser.post("/console/workspace", &[("name", "Acme Shop"), ("origins", "shop.example/path")]).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains(r#"class="notice error""#) && bad.body.contains("origin"), "{}", bad.body);

    // Check first (nothing stored), then connect: the report rule by rule.
    let base = host.base_url();
    let checked = browser.post("/console/check", &[("base_url", &base), ("secret", HOST_SECRET)]).await;
    assert_eq!(checked.status, 200);
    assert!(checked.body.contains("auth.wrong_secret") && checked.body.contains("PASS"), "{}", checked.body);
    assert!(checked.body.contains(&format!(r#"value="{base}""#)), "the form keeps the url: {}", checked.body);
    let (_, none) = app.get_json("/v1/integrations", &api_key).await;
    assert_eq!(none["integrations"], json!([]), "a check stores nothing");
    let connected = browser.post("/console/connect", &[("base_url", &base), ("secret", HOST_SECRET)]).await;
    assert_eq!(connected.status, 200);
    assert!(connected.body.contains("Connected.") && connected.body.contains("create_task"), "{}", connected.body);
    assert!(connected.body.contains("The host checker"), "{}", connected.body);
    assert!(!connected.body.contains(HOST_SECRET), "the secret is never shown back");
    let (_, integrations) = app.get_json("/v1/integrations", &api_key).await;
    assert_eq!(integrations["integrations"][0]["base_url"], format!("{base}/"));
    // A wrong secret: the API's refusal, nothing connected anew.
    let wrong = browser.post("/console/connect", &[("base_url", &base), ("secret", "wrong")]).await;
    assert!(wrong.status >= 400 && wrong.body.contains(r#"class="notice error""#), "{}", wrong.body);

    // The look: saved as the workspace's default theme; a bad value is named, nothing saved.
    let look = [("mode", "dark"), ("accent", "#aa3300"), ("radius", "4"), ("font", "Inter, sans-serif")];
    let saved = browser.post("/console/theme", &look).await;
    assert_eq!((saved.status, saved.location.as_deref()), (303, Some("/console?done=saved")));
    let (_, shown) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(shown["theme"], json!({"mode": "dark", "accent": "#aa3300", "radius": 4, "font": "Inter, sans-serif"}));
    let bad = browser.post("/console/theme", &[("mode", ""), ("accent", "red"), ("radius", "99"), ("font", "")]).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("accent #rrggbb"), "{}", bad.body);
    let (_, kept) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(kept["theme"], shown["theme"]);
    let page = browser.get("/console").await;
    assert!(
        page.body.contains(r##"value="#aa3300""##) && page.body.contains(r#"<option value="dark" selected"#),
        "{}",
        page.body
    );
    let reset = browser.post("/console/theme", &[("mode", ""), ("accent", ""), ("radius", ""), ("font", "")]).await;
    assert_eq!(reset.status, 303);
    let (_, cleared) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(cleared["theme"], json!({"mode": null, "accent": null, "radius": null, "font": null}));

    // What it says first: per language, prompts one per line; a bad one is named, nothing saved.
    let start = [
        ("greeting_en", "Welcome to the shop"),
        ("prompts_en", "Where is my order?\n\n  Opening hours  \n"),
        ("greeting_ar", "أهلاً بك"),
        ("prompts_ar", ""),
        ("greeting_fr", ""),
        ("prompts_fr", ""),
    ];
    let saved = browser.post("/console/welcome", &start).await;
    assert_eq!((saved.status, saved.location.as_deref()), (303, Some("/console?done=saved")));
    let (_, shown) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(
        shown["welcome"],
        json!({"en": {"greeting": "Welcome to the shop", "prompts": ["Where is my order?", "Opening hours"]},
               "ar": {"greeting": "أهلاً بك", "prompts": []}})
    );
    // What visitors may attach: every kind by default; some; none (no paperclip); all again.
    let page = browser.get("/console").await;
    assert!(page.body.contains(r#"value="application/pdf" checked"#), "{}", page.body);
    let photos = [("kind", "image/jpeg"), ("kind", "image/png")];
    let saved = browser.post("/console/attachments", &photos).await;
    assert_eq!((saved.status, saved.location.as_deref()), (303, Some("/console?done=saved")));
    let (_, shown) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(shown["attachment_types"], json!(["image/png", "image/jpeg"]));
    let page = browser.get("/console").await;
    assert!(!page.body.contains(r#"value="application/pdf" checked"#), "{}", page.body);
    assert_eq!(browser.post("/console/attachments", &[]).await.status, 303);
    let (_, shown) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(shown["attachment_types"], json!([]));
    let every: Vec<(&str, &str)> =
        ["image/png", "image/jpeg", "image/webp", "image/gif", "application/pdf", "text/plain"]
            .into_iter()
            .map(|kind| ("kind", kind))
            .collect();
    assert_eq!(browser.post("/console/attachments", &every).await.status, 303);
    let (_, shown) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(shown["attachment_types"].as_array().map(Vec::len), Some(6));

    let five = browser.post("/console/welcome", &[("prompts_de", "a\nb\nc\nd\ne")]).await;
    assert_eq!(five.status, 400);
    assert!(five.body.contains("welcome.de.prompts"), "{}", five.body);
    let (_, kept) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(kept["welcome"], shown["welcome"]);
    let page = browser.get("/console").await;
    assert!(
        page.body.contains(r#"value="Welcome to the shop""#) && page.body.contains("Opening hours"),
        "{}",
        page.body
    );

    // The snippets name this workspace and this assistant.
    let home = browser.get("/console").await;
    assert!(home.body.contains(&format!("data-workspace=\"{id}\"")), "{}", home.body);
    assert!(home.body.contains(&format!("{}/embed.js", app.url(""))), "{}", home.body);
    for file in ["mint-token.mjs", "mint_token.py", "mint_token.go", "mint_token.rs"] {
        assert!(home.body.contains(file), "{file}");
    }
    assert!(
        home.body.contains(&format!("WORKSPACE = &quot;{id}&quot;"))
            || home.body.contains(&format!("WORKSPACE = \"{id}\""))
    );
}

async fn the_onboarding_checks_connects_and_disconnects_an_mcp_server(db: Db) {
    let app = spawn_app(db).start().await;
    let (_, api_key) = workspace(&app).await;
    let url = crate::mcp::start_with_bearer(crate::mcp::Shop::default(), "s3cret-t0ken").await.to_string();
    let mut browser = Browser::new(&app);
    browser.post("/console/sign-in", &[("key", &api_key)]).await;
    let form = |name: &'static str, authorization: &'static str| {
        vec![("name", name), ("url", url.as_str()), ("authorization", authorization), ("trust_annotations", "1")]
    };

    let checked = browser.post("/console/mcp/check", &form("", "Bearer s3cret-t0ken")).await;
    assert_eq!(checked.status, 200, "{}", checked.body);
    assert!(checked.body.contains("mcp.handshake") && checked.body.contains("shop 1.2.3"), "{}", checked.body);
    let (_, none) = app.get_json("/v1/integrations", &api_key).await;
    assert_eq!(none["integrations"], json!([]), "a check stores nothing");

    let refused = browser.post("/console/mcp/connect", &form("shop", "Bearer wrong")).await;
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains(r#"class="notice error""#) && refused.body.contains("401"), "{}", refused.body);

    let connected = browser.post("/console/mcp/connect", &form("shop", "Bearer s3cret-t0ken")).await;
    assert_eq!(connected.status, 200, "{}", connected.body);
    assert!(
        connected.body.contains("Connected.") && connected.body.contains("search_orders (get)"),
        "{}",
        connected.body
    );
    assert!(connected.body.contains("headers: Authorization") && connected.body.contains("annotations trusted"));
    assert!(!connected.body.contains("s3cret-t0ken"), "the header's value is never shown back");
    let page = browser.get("/console").await;
    assert!(page.body.contains("Disconnect shop") && !page.body.contains("s3cret-t0ken"), "{}", page.body);

    let gone = browser.post("/console/mcp/disconnect", &[("name", "shop")]).await;
    assert_eq!((gone.status, gone.location.as_deref()), (303, Some("/console?done=disconnected")));
    let (_, none) = app.get_json("/v1/integrations", &api_key).await;
    assert_eq!(none["integrations"], json!([]));
    let again = browser.post("/console/mcp/disconnect", &[("name", "shop")]).await;
    assert_eq!(again.status, 404, "{}", again.body);
}

async fn the_operator_creates_a_workspace_and_sees_its_secrets_once(db: Db) {
    let app = spawn_app(db).start().await;
    let mut browser = Browser::new(&app);
    let signed = browser.post("/console/sign-in", &[("key", ADMIN_TOKEN)]).await;
    assert_eq!(signed.status, 303);
    let home = browser.get("/console").await;
    assert!(home.body.contains("Create a workspace"), "{}", home.body);

    let created =
        browser.post("/console/workspaces", &[("name", "Bakery"), ("origins", "https://bakery.example")]).await;
    assert_eq!(created.status, 200);
    assert!(
        created.body.contains("not shown again") && created.body.contains("Workspace “Bakery” created"),
        "{}",
        created.body
    );
    let api_key =
        created.body.split("<code>").filter_map(|s| s.split("</code>").next()).find(|s| s.starts_with("cak_"));
    let api_key = api_key.expect("the api key is shown once").to_owned();
    let (status, shown) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!((status, shown["name"].as_str()), (200, Some("Bakery")));
    // A workspace's own session cannot create workspaces.
    let mut owner = Browser::new(&app);
    owner.post("/console/sign-in", &[("key", &api_key)]).await;
    let refused = owner.post("/console/workspaces", &[("name", "Other")]).await;
    assert_eq!(refused.status, 403);

    // The operator's page lists every workspace: name, id, created, and
    // the conversations begun this month; each opens to its origins.
    let bakery = created.body.split("<code>").filter_map(|s| s.split("</code>").next()).find(|s| s.starts_with("ws_"));
    let bakery = bakery.expect("the id is shown").to_owned();
    let secret = server::db::workspace(&app.state.pool, &bakery).await.unwrap().map(|w| w.embed_secret_enc).unwrap();
    let secret = app.state.vault.open(&secret).unwrap();
    for user in ["ann", "ben"] {
        app.turn(&token(&bakery, secret.expose(), user), None, "hello").await;
    }
    let home = browser.get("/console").await;
    let table = home.body.split("</script>").last().unwrap();
    let row = table.split("<tr>").find(|r| r.contains(&bakery)).unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("<summary>Bakery</summary>") && row.contains("https://bakery.example"), "{row}");
    let today = server::ids::rfc3339(server::ids::now_ms());
    assert!(row.contains(&format!("<td>{}</td>", &today[..10])), "{row}");
    assert!(row.contains("<td>2</td>"), "two conversations this month: {row}");
    let (status, listed) = app.get_json("/v1/workspaces", ADMIN_TOKEN).await;
    assert_eq!(status, 200);
    let item = listed["items"].as_array().unwrap().iter().find(|w| w["id"] == bakery.as_str()).unwrap().clone();
    assert_eq!(item["conversations_this_month"], 2);
    assert_eq!(
        (item["allowed_origins"].clone(), item["integrations"].clone()),
        (json!(["https://bakery.example"]), json!([]))
    );
    let demo = listed["items"].as_array().unwrap().iter().find(|w| w["id"] == "ws_demo").unwrap().clone();
    assert_eq!(demo["integrations"], json!(["generic-rest"]), "the demo's bistro: {demo}");
    assert!(!listed.to_string().contains("cak_") && !listed.to_string().contains("embed_secret"), "{listed}");
    // Only the operator sees the list.
    assert_eq!(app.get_json("/v1/workspaces", &api_key).await.0, 401);
}

#[tokio::test]
async fn posts_from_another_site_are_refused_sign_in_included() {
    let app = spawn_app(Db::Sqlite).start().await;
    let (_, api_key) = workspace(&app).await;
    let mut browser = Browser::new(&app);
    for site in ["cross-site", "same-site", "none"] {
        let answer = browser.post_from("/console/sign-in", &[("key", &api_key)], Some(site)).await;
        assert_eq!(answer.status, 403, "{site}");
        assert!(answer.set_cookie.is_none());
    }
    browser.post("/console/sign-in", &[("key", &api_key)]).await;
    assert!(browser.cookie.is_some());
    // A browser without Fetch Metadata: its Origin must be ours.
    let foreign = browser
        .client
        .post(app.url("/console/workspace"))
        .header("origin", "https://evil.example")
        .header(COOKIE, browser.cookie.clone().unwrap())
        .form(&[("name", "Hijacked"), ("origins", "")])
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let (_, shown) = app.get_json("/v1/workspace", &api_key).await;
    assert_eq!(shown["name"], "Shop", "nothing changed");
    let ours = browser
        .client
        .post(app.url("/console/workspace"))
        .header("origin", app.url(""))
        .header(COOKIE, browser.cookie.clone().unwrap())
        .form(&[("name", "Shop 2"), ("origins", "https://shop.example")])
        .send()
        .await
        .unwrap();
    assert_eq!(ours.status(), 303);
}

#[tokio::test]
async fn over_https_the_session_cookie_is_host_prefixed_and_secure() {
    let app = spawn_app(Db::Sqlite).env("CA_PUBLIC_URL", "https://assistant.example").start().await;
    let (_, api_key) = workspace(&app).await;
    let mut browser = Browser::new(&app);
    let signed = browser.post("/console/sign-in", &[("key", &api_key)]).await;
    let cookie = signed.set_cookie.unwrap();
    assert!(cookie.starts_with("__Host-ca_console=") && cookie.contains("; Secure"), "{cookie}");
    // The snippets point at the public origin.
    let home = browser.get("/console").await;
    assert!(home.body.contains("https://assistant.example/embed.js"), "{}", home.body);
    // A plain cookie of the same value is not the session over https.
    let token = browser.cookie.clone().unwrap().split_once('=').unwrap().1.to_owned();
    browser.cookie = Some(format!("ca_console={token}"));
    let page = browser.get("/console").await;
    assert!(page.body.contains(r#"action="/console/sign-in""#));
}

/// Runs `program` with `args`, the embed secret in its environment; its
/// first line of output.
fn run(program: &str, args: &[&str], secret: &str, envs: &[(&str, String)]) -> String {
    let output = std::process::Command::new(program)
        .args(args)
        .env("CA_EMBED_SECRET", secret)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} ({e}): run ./dev test, which installs it"));
    assert!(output.status.success(), "{program}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().next().unwrap_or_default().trim().to_owned()
}

/// Each token snippet the console shows, run with its real library (Node's
/// jose, Python's PyJWT, Go's standard library, Rust's jsonwebtoken), mints
/// a token our server accepts for that visitor.
#[tokio::test]
async fn each_token_snippet_mints_a_token_the_server_accepts() {
    let app = spawn_app(Db::Sqlite).start().await;
    let made = made_workspace(&app).await;
    let (ws, secret) = (made.id.as_str(), made.secret.as_str());
    let cache = std::env::var("CA_CACHE")
        .unwrap_or_else(|_| format!("{}/.cache/context-assistant", std::env::var("HOME").unwrap()));
    let python = crate::helpers::test_python();
    let work = tempfile::tempdir().unwrap();
    let mut minted = Vec::new();
    for (language, file, source) in console::snippets::all(ws) {
        let user = format!("user_{}", file.split(['-', '_', '.']).next_back().unwrap());
        let token = match file {
            // Beside tests/oidc/node_modules, where jose is installed.
            "mint-token.mjs" => {
                let path = format!("{}/oidc/.snippet-{}.mjs", env!("CARGO_MANIFEST_DIR"), std::process::id());
                std::fs::write(&path, &source).unwrap();
                let token = run("node", &[&path, &user], secret, &[]);
                let _ = std::fs::remove_file(&path);
                token
            }
            "mint_token.py" => {
                let path = work.path().join(file);
                std::fs::write(&path, &source).unwrap();
                run(&python, &[path.to_str().unwrap(), &user], secret, &[])
            }
            "mint_token.go" => {
                let path = work.path().join(file);
                std::fs::write(&path, &source).unwrap();
                let envs = [
                    ("GOTOOLCHAIN", "local".to_owned()),
                    ("GOCACHE", format!("{cache}/go-build")),
                    ("GOPATH", format!("{cache}/go")),
                    ("GOFLAGS", String::new()),
                ];
                run("go", &["run", path.to_str().unwrap(), &user], secret, &envs)
            }
            _ => {
                assert!(source.contains(&format!("assistant_token(\"{ws}\"")), "the usage names the workspace");
                rust_snippet::assistant_token(ws, &user, &[], secret).unwrap()
            }
        };
        let (status, conversations) = app.get_json("/v1/conversations", &token).await;
        assert_eq!(status, 200, "{language}: {conversations}");
        let payload = token.split('.').nth(1).unwrap();
        use base64::Engine;
        let claims: serde_json::Value =
            serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        assert_eq!((claims["sub"].as_str(), claims["ws"].as_str()), (Some(user.as_str()), Some(ws)), "{language}");
        assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 3600, "{language}");
        minted.push(language);
    }
    assert_eq!(minted.len(), 4);
}

async fn the_audit_trail_is_filtered_paged_and_exported(db: Db) {
    let host = FakeHost::start(task_tools(), 200, json!({"output": {"status": "done"}})).await;
    let app = spawn_app(db).start().await;
    let (_, api_key) = workspace(&app).await;
    let mut browser = Browser::new(&app);
    browser.post("/console/sign-in", &[("key", &api_key)]).await;
    browser.post("/console/workspace", &[("name", "Shop <b>2</b>"), ("origins", "https://shop.example")]).await;
    browser.post("/console/connect", &[("base_url", &host.base_url()), ("secret", HOST_SECRET)]).await;

    let all = browser.get("/console/audit").await;
    assert_eq!(all.status, 200);
    assert!(all.body.contains("workspace.updated") && all.body.contains("integration.connected"), "{}", all.body);
    assert!(!all.body.contains("<b>2</b>"), "what changed is shown as text: {}", all.body);
    assert!(!all.body.contains(HOST_SECRET), "never a secret");
    let only = browser.get("/console/audit?action=integration.connected").await;
    assert!(only.body.contains("integration.connected") && !only.body.contains("workspace.updated"), "{}", only.body);
    assert!(only.body.contains(r#"value="integration.connected""#), "the filter is kept");
    // Days around now (whatever the hour, the entries fall within them).
    let day = |offset: i64| server::ids::rfc3339(server::ids::now_ms() + offset * 86_400_000)[..10].to_owned();
    let (yesterday, today, later) = (day(-1), day(0), day(2));
    let recent = browser.get(&format!("/console/audit?since={yesterday}&until={today}")).await;
    assert!(recent.body.contains("workspace.updated"), "the 'to' day is included: {}", recent.body);
    let none = browser.get(&format!("/console/audit?since={later}")).await;
    assert!(none.body.contains("No entry matches."), "{}", none.body);
    let bad = browser.get("/console/audit?since=yesterday").await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("From: not a day"), "{}", bad.body);

    // The export: every matching entry as JSON Lines, downloaded.
    let export = browser.get("/console/audit/export?action=workspace.updated").await;
    assert_eq!(export.status, 200);
    assert!(export.headers["content-disposition"].to_str().unwrap().contains("attachment"));
    let lines: Vec<serde_json::Value> = export.body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!lines.is_empty() && lines.iter().all(|l| l["action"] == "workspace.updated"), "{}", export.body);
    // Signed out: neither the page nor the export.
    let mut stranger = Browser::new(&app);
    assert!(stranger.get("/console/audit").await.body.contains(r#"action="/console/sign-in""#));
    assert_eq!(stranger.get("/console/audit/export").await.status, 401);
}

/// The text of the first `<code>` after `marker` in `body`.
fn code_after(body: &str, marker: &str) -> String {
    let rest = &body[body.find(marker).unwrap_or_else(|| panic!("{marker} in {body}"))..];
    rest.split("<code>").nth(1).unwrap().split("</code>").next().unwrap().to_owned()
}

async fn secrets_rotate_with_their_grace_shown_and_the_session_follows_its_new_key(db: Db) {
    let app = spawn_app(db).start().await;
    let made = made_workspace(&app).await;
    let (ws, old_secret, old_key) = (made.id.as_str(), made.secret.as_str(), made.api_key.as_str());
    let mut browser = Browser::new(&app);
    browser.post("/console/sign-in", &[("key", old_key)]).await;
    let page = browser.get("/console/operations").await;
    assert!(page.body.contains("Make a new embed secret") && page.body.contains("key id"), "{}", page.body);

    let rotated = browser.post("/console/rotate/embed-secret", &[("grace_seconds", "86400")]).await;
    assert_eq!(rotated.status, 200);
    let new_secret = code_after(&rotated.body, "Your new embed secret");
    assert_ne!(new_secret, old_secret);
    assert!(rotated.body.contains("The previous one still verifies tokens until"), "{}", rotated.body);
    // Both verify during the grace.
    for secret in [old_secret, new_secret.as_str()] {
        assert_eq!(app.get_json("/v1/conversations", &token(ws, secret, "u1")).await.0, 200);
    }
    // A bad grace is the API's refusal, nothing rotated.
    let bad = browser.post("/console/rotate/api-key", &[("grace_seconds", "9999999")]).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("grace_seconds"), "{}", bad.body);

    // A new api key, and none of the grace: the old key stops at once, the console goes on.
    let rotated = browser.post("/console/rotate/api-key", &[("grace_seconds", "0")]).await;
    assert_eq!(rotated.status, 200);
    let new_key = code_after(&rotated.body, "Your new api key");
    assert!(new_key.starts_with("cak_"));
    assert_eq!(app.get_json("/v1/workspace", old_key).await.0, 401);
    assert_eq!(app.get_json("/v1/workspace", &new_key).await.0, 200);
    let still = browser.get("/console/operations").await;
    assert_eq!(still.status, 200, "the session follows its new key: {}", still.body);
    assert!(!still.body.contains(&new_key), "shown once only");
}

async fn retention_is_set_and_a_user_is_erased_only_when_confirmed(db: Db) {
    let app = spawn_app(db).start().await;
    let made = made_workspace(&app).await;
    let (ws, secret, api_key) = (made.id.as_str(), made.secret.as_str(), made.api_key.as_str());
    let mut browser = Browser::new(&app);
    browser.post("/console/sign-in", &[("key", api_key)]).await;

    let saved = browser.post("/console/retention", &[("days", "30")]).await;
    assert_eq!((saved.status, saved.location.as_deref()), (303, Some("/console/operations?done=saved")));
    assert_eq!(app.get_json("/v1/workspace", api_key).await.1["retention_days"], 30);
    let bad = browser.post("/console/retention", &[("days", "0")]).await;
    assert_eq!(bad.status, 400);
    let cleared = browser.post("/console/retention", &[("days", "")]).await;
    assert_eq!(cleared.status, 303);
    assert_eq!(app.get_json("/v1/workspace", api_key).await.1["retention_days"], serde_json::Value::Null);

    // A user with a conversation.
    let user_token = token(ws, secret, "user/with odd id");
    let events = app.turn(&user_token, None, "hello").await;
    assert!(!crate::helpers::of(&events, "done").is_empty());
    let unconfirmed = browser.post("/console/erase", &[("user", "user/with odd id")]).await;
    assert_eq!(unconfirmed.status, 400);
    let (_, kept) = app.get_json("/v1/conversations", &user_token).await;
    assert_eq!(kept["conversations"].as_array().unwrap().len(), 1, "nothing erased unconfirmed");
    let erased = browser.post("/console/erase", &[("user", "user/with odd id"), ("confirm", "yes")]).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert!(erased.body.contains("conversations: 1"), "{}", erased.body);
    let (_, gone) = app.get_json("/v1/conversations", &user_token).await;
    assert_eq!(gone["conversations"], json!([]));
}

async fn the_workspaces_conversations_are_listed_by_user_and_day_and_read_as_the_user_saw_them(db: Db) {
    let app = spawn_app(db).start().await;
    let made = made_workspace(&app).await;
    let (ws, secret, api_key) = (made.id.as_str(), made.secret.as_str(), made.api_key.as_str());
    let (ada, bob) = (token(ws, secret, "ada"), token(ws, secret, "bob"));
    let mut ids = Vec::new();
    for (who, text) in [(&ada, "hello <script>alert(1)</script>"), (&bob, "hi there"), (&ada, "hello again")] {
        let events = app.turn(who, None, text).await;
        ids.push(crate::helpers::of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned());
    }
    // Another workspace's conversation is never listed nor read.
    let other = made_workspace(&app).await;
    let stranger = token(&other.id, &other.secret, "ada");
    let theirs = app.turn(&stranger, None, "not yours").await;
    let theirs = crate::helpers::of(&theirs, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();

    let (status, all) = app.get_json("/v1/workspace/conversations", api_key).await;
    assert_eq!(status, 200, "{all}");
    let listed: Vec<&str> = all["items"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(listed, [ids[2].as_str(), ids[1].as_str(), ids[0].as_str()], "most recently active first");
    let (_, adas) = app.get_json("/v1/workspace/conversations?user=ada", api_key).await;
    assert_eq!(adas["items"].as_array().unwrap().len(), 2);
    assert!(adas["items"].as_array().unwrap().iter().all(|c| c["user"] == "ada"));
    // A page at a time.
    let (_, first) = app.get_json("/v1/workspace/conversations?limit=2", api_key).await;
    let cursor = first["next_cursor"].as_str().unwrap();
    let (_, second) = app.get_json(&format!("/v1/workspace/conversations?limit=2&cursor={cursor}"), api_key).await;
    assert_eq!(second["items"][0]["id"], ids[0].as_str());
    assert_eq!(second["next_cursor"], serde_json::Value::Null);
    let (status, _) = app.get_json("/v1/workspace/conversations?since=2099-01-01T00:00:00Z", api_key).await;
    assert_eq!(status, 200);
    assert_eq!(app.get_json("/v1/workspace/conversations?since=tomorrow", api_key).await.0, 400);
    // One, as its user saw it; another workspace's is not found.
    let (status, one) = app.get_json(&format!("/v1/workspace/conversations/{}", ids[0]), api_key).await;
    assert_eq!((status, one["user"].as_str()), (200, Some("ada")));
    assert_eq!(one["messages"][0]["text"], "hello <script>alert(1)</script>");
    assert_eq!(one["messages"][1]["role"], "assistant");
    assert_eq!(app.get_json(&format!("/v1/workspace/conversations/{theirs}"), api_key).await.0, 404);

    // In the console: the list by user, and a transcript as text.
    let mut browser = Browser::new(&app);
    browser.post("/console/sign-in", &[("key", api_key)]).await;
    let list = browser.get("/console/conversations?user=bob").await;
    assert_eq!(list.status, 200);
    assert!(list.body.contains(&format!("/console/conversations/{}", ids[1])), "{}", list.body);
    assert!(!list.body.contains(&ids[0]), "only bob's: {}", list.body);
    let shown = browser.get(&format!("/console/conversations/{}", ids[0])).await;
    assert_eq!(shown.status, 200);
    assert!(shown.body.contains("hello &lt;script&gt;alert(1)&lt;/script&gt;"), "as text: {}", shown.body);
    assert!(!shown.body.contains("<script>alert(1)"), "{}", shown.body);
    assert_eq!(browser.get(&format!("/console/conversations/{theirs}")).await.status, 404);
    assert_eq!(browser.get("/console/conversations?since=nope").await.status, 400);
}

/// The live preview: the widget page with a token of its own, in the
/// workspace's look, framed only by the console.
#[tokio::test]
async fn the_live_preview_is_the_widget_page_in_the_saved_look_framed_only_by_the_console() {
    let app = spawn_app(Db::Sqlite).start().await;
    let (id, api_key) = workspace(&app).await;
    let look = json!({"theme": {"mode": "dark", "accent": "#aa3300"}});
    assert_eq!(app.patch_json("/v1/workspace", &api_key, &look).await.0, 200);
    let mut browser = Browser::new(&app);
    assert_eq!(browser.get("/console/preview").await.status, 401, "signed out: no preview");
    browser.post("/console/sign-in", &[("key", &api_key)]).await;
    let home = browser.get("/console").await;
    assert!(home.body.contains(r#"src="/console/preview""#), "{}", home.body);
    assert!(home.headers["content-security-policy"].to_str().unwrap().contains("frame-src 'self'"));

    let preview = browser.get("/console/preview").await;
    assert_eq!(preview.status, 200);
    let csp = preview.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.ends_with("frame-ancestors 'self'"), "the console's origin only: {csp}");
    assert!(preview.body.contains(r#"data-theme="dark""#), "the saved look");
    let boot = preview.body.split(r#"name="ca-boot" content=""#).nth(1).unwrap().split('"').next().unwrap();
    let boot: serde_json::Value = serde_json::from_str(&boot.replace("&quot;", "\"").replace("&amp;", "&")).unwrap();
    assert_eq!(boot["workspace_id"], id.as_str());
    let token = boot["token"].as_str().unwrap();
    assert_eq!(app.get_json("/v1/conversations", token).await.0, 200, "the preview's token works");
    use base64::Engine;
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(claims["sub"], "console-preview");
    // The look the console's controls hold, before it is saved: exactly
    // those values, each checked as the widget's own options are.
    let unsaved = browser.get("/console/preview?look=1&theme=light&accent=%2300aa55&radius=&font=").await;
    assert!(unsaved.body.contains(r#"data-theme="light""#) && unsaved.body.contains("#00aa55"), "{}", unsaved.body);
    let hostile = browser.get("/console/preview?look=1&theme=dark&accent=red%3B%7D%20body%7Bx%3Ay&radius=99").await;
    assert!(hostile.body.contains(r#"data-theme="dark""#), "{}", hostile.body);
    assert!(!hostile.body.contains("body{x") && !hostile.body.contains("#aa3300"), "{}", hostile.body);
    // Its token runs out after an hour: the widget asks the console for a
    // fresh one, with the session's cookie, from our own pages only.
    assert_eq!(boot["renew_path"], "/console/preview/token");
    let renewed = browser.post("/console/preview/token", &[]).await;
    assert_eq!(renewed.status, 200, "{}", renewed.body);
    assert_eq!(renewed.headers["cache-control"], "no-store");
    let fresh: serde_json::Value = serde_json::from_str(&renewed.body).unwrap();
    assert_eq!(app.get_json("/v1/conversations", fresh["token"].as_str().unwrap()).await.0, 200);
    assert_eq!(browser.post_from("/console/preview/token", &[], Some("cross-site")).await.status, 403);
    let mut stranger = Browser::new(&app);
    assert_eq!(stranger.post("/console/preview/token", &[]).await.status, 401);
    // The operator has no workspace to preview.
    let mut operator = Browser::new(&app);
    operator.post("/console/sign-in", &[("key", ADMIN_TOKEN)]).await;
    assert_eq!(operator.get("/console/preview").await.status, 303);
    assert_eq!(operator.post("/console/preview/token", &[]).await.status, 303);
}

/// Sign-in attempts are counted per client address: keys cannot be
/// guessed through the form, and the right key waits too.
#[tokio::test]
async fn sign_in_attempts_are_limited_per_address() {
    let app = spawn_app(Db::Sqlite).env("CA_CONSOLE_SIGN_INS_PER_MINUTE", "3").start().await;
    let (_, api_key) = workspace(&app).await;
    let mut browser = Browser::new(&app);
    crate::helpers::start_of_window(&app.clock, 60_000);
    for _ in 0..3 {
        assert_eq!(browser.post("/console/sign-in", &[("key", "ca_guess")]).await.status, 401);
    }
    let refused = browser.post("/console/sign-in", &[("key", &api_key)]).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.body.contains("Too many sign-in attempts"), "{}", refused.body);
    let wait: u64 = refused.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert!(browser.cookie.is_none());
    // The next minute, the right key signs in.
    app.clock.advance(std::time::Duration::from_secs(60));
    assert_eq!(browser.post("/console/sign-in", &[("key", &api_key)]).await.status, 303);
}

/// Usage per day: the page draws turns, tokens, tool calls and refusals
/// by limit as charts, with the numbers in a table.
#[tokio::test]
async fn the_usage_page_charts_each_day_with_its_numbers() {
    let rig = crate::helpers::Rig::start(
        Db::Sqlite,
        crate::helpers::HostSpec::new(task_tools()),
        vec![crate::helpers::Step::Call("lookup", json!({})), crate::helpers::Step::Text("found")],
        &[],
    )
    .await;
    let limit = json!({"limits": {"turns_per_user_per_minute": 1}});
    assert_eq!(rig.app.patch_json("/v1/workspace", &rig.api_key, &limit).await.0, 200);
    crate::helpers::start_of_window(&rig.app.clock, 60_000);
    rig.say("find it").await;
    let refused = rig.app.post("/v1/chat/turns", &rig.token, &json!({"message": "again"})).await;
    assert_eq!(refused.status(), 429);

    let mut browser = Browser::new(&rig.app);
    assert_eq!(browser.get("/console/usage").await.status, 401, "signed out");
    browser.post("/console/sign-in", &[("key", &rig.api_key)]).await;
    let page = browser.get("/console/usage").await;
    assert_eq!(page.status, 200, "{}", page.body);
    for chart in ["Turns per day", "Model tokens per day", "Tool calls per day", "Refused per day, by limit"] {
        assert!(page.body.contains(chart), "{chart}: {}", page.body);
    }
    assert_eq!(page.body.matches("<svg").count(), 4);
    assert!(page.body.contains("Turns per user a minute"), "the refusal's limit in words: {}", page.body);
    // Screen readers get each chart's sum; the table has the day's numbers.
    assert!(page.body.contains("1 turns from"), "{}", page.body);
    let (_, usage) = rig.app.get_json("/v1/workspace/usage", &rig.api_key).await;
    let today = usage["until"].as_str().unwrap();
    let row = format!("<th scope=\"row\">{today}</th><td>1</td><td>50</td><td>50</td><td>1</td>");
    assert!(page.body.contains(&row), "{row} in {}", page.body);
    // The range as given; a wrong day is named.
    let one = browser.get(&format!("/console/usage?since={today}&until={today}")).await;
    assert_eq!(one.status, 200);
    assert_eq!(one.body.matches("<th scope=\"row\">").count(), 1);
    let wrong = browser.get("/console/usage?since=2026-11-02&until=2026-11-01").await;
    assert_eq!(wrong.status, 400);
    assert!(wrong.body.contains("since must not be after until"), "{}", wrong.body);
}

/// The Tests page (issue #46): a suite that does not read comes back in
/// the editor as it was typed, with where it is wrong; a model named without
/// the workspace's own is refused the same way; another site's form starts
/// nothing; a run's page reloads itself while it runs, and says it passed.
async fn the_tests_page_keeps_a_refused_suite_in_the_editor_and_refuses_another_sites_form(db: Db) {
    let app = spawn_app(db).start().await;
    let (_, api_key) = workspace(&app).await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.post("/console/sign-in", &[("key", &api_key)]).await.status, 303);

    let page = browser.get("/console/tests").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Suite (YAML or JSON)") && page.body.contains("No run yet"), "{}", page.body);

    let typo = "name: s\ncases: [{name: c, steps: [{user: hi, expect: {reply_contain: x}}]}]";
    let refused = browser.post("/console/tests/run", &[("suite", typo), ("model", "")]).await;
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("reply_contain: no expectation is named"), "{}", refused.body);
    assert!(refused.body.contains("{reply_contain: x}"), "the suite stays in the editor as typed");

    let good = "name: s\ncases: [{name: c, steps: [{user: hi}]}]";
    let named = browser.post("/console/tests/run", &[("suite", good), ("model", "gpt-4o")]).await;
    assert_eq!(named.status, 400);
    assert!(named.body.contains("the workspace&#x27;s own model") || named.body.contains("the workspace's own model"));

    let forged = browser.post_from("/console/tests/run", &[("suite", good)], Some("cross-site")).await;
    assert_eq!(forged.status, 403, "another site's form starts no run");
    let (_, runs) = app.get_json("/v1/tests/runs", &api_key).await;
    assert_eq!(runs["runs"], json!([]), "nothing started");

    let started = browser.post("/console/tests/run", &[("suite", good), ("model", "")]).await;
    assert_eq!(started.status, 303, "{}", started.body);
    let location = started.location.unwrap();
    assert!(location.starts_with("/console/tests/run_"), "{location}");
    let mut shown = browser.get(&location).await;
    for _ in 0..200 {
        if !shown.headers.contains_key("refresh") {
            break;
        }
        assert_eq!(shown.headers["refresh"], "2", "it reloads itself while it runs");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        shown = browser.get(&location).await;
    }
    assert!(!shown.headers.contains_key("refresh"), "no reload once it ended");
    assert!(shown.body.contains(r#"data-status="passed""#) && shown.body.contains("PASS"), "{}", shown.body);
}
