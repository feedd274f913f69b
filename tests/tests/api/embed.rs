//! The demo page, the loader and the widget page as a browser gets them.

use crate::helpers::{Db, spawn_app};

#[tokio::test]
async fn the_demo_page_carries_a_verifiable_token_and_no_secret() {
    let app = spawn_app(Db::Sqlite).start().await;
    let response = app.client.get(app.url("/")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["set-cookie"].to_str().unwrap().starts_with("acme_guest=guest_"));
    let page = response.text().await.unwrap();
    assert!(page.contains(r#"<script src="/embed.js" data-workspace="ws_demo""#));
    let token = page.split(r#"data-token=""#).nth(1).unwrap().split('"').next().unwrap();
    // The token works against the API; the page holds no secret of ours.
    let list = app.get("/v1/conversations", token).await;
    assert_eq!(list.status(), 200);
    let workspace = server::db::workspace(&app.state.pool, "ws_demo").await.unwrap().unwrap();
    let secret = app.state.vault.open(&workspace.embed_secret_enc).unwrap();
    assert!(!page.contains(secret.expose()));
    assert!(!page.contains(app.state.bistro.secret.expose()));
}

#[tokio::test]
async fn the_loader_is_small_javascript() {
    let app = spawn_app(Db::Sqlite).start().await;
    let response = app.client.get(app.url("/embed.js")).send().await.unwrap();
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/javascript"));
    assert_eq!(response.headers()["cross-origin-resource-policy"], "cross-origin");
    let js = response.text().await.unwrap();
    assert!(js.contains("postMessage") && js.contains("/widget?"));
    assert!(!js.contains("?token=") && !js.contains("&token="), "the token never travels in a URL");
    // The budget a host page pays before the chat is opened (docs/benchmarks.md).
    let gzipped = {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(js.as_bytes()).unwrap();
        encoder.finish().unwrap().len()
    };
    assert!(gzipped <= LOADER_BUDGET_GZIP_BYTES, "the loader is {gzipped} bytes gzipped");
}

/// The loader's budget: 3.5 KB gzipped (3 KB until it carried the widget's
/// storage on hosts that refuse a cross-site frame its own, and `logout()`:
/// docs/benchmarks.md).
const LOADER_BUDGET_GZIP_BYTES: usize = 3584;

#[tokio::test]
async fn the_widget_page_may_be_framed_only_by_allowed_origins() {
    let app = spawn_app(Db::Sqlite).start().await;
    let response = app.client.get(app.url("/widget?ws=ws_demo")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains(&format!("frame-ancestors 'self' http://{}", app.address)), "{csp}");
    assert!(csp.contains("script-src 'self' 'nonce-"), "{csp}");
    // Isolated itself, and consenting to be framed by an isolated host (which
    // frame-ancestors still limits to the workspace's origins).
    assert_eq!(response.headers()["cross-origin-embedder-policy"], "credentialless");
    assert_eq!(response.headers()["cross-origin-resource-policy"], "cross-origin");
    let html = response.text().await.unwrap();
    assert!(html.contains(r#"name="ca-boot""#), "{html}");
    assert!(html.contains("Demo model (offline)"));
    assert!(html.contains(r#"role="log""#));
    // The composer's field is drawn read-only: Enter sends nothing until
    // the browser code has taken over, and opens it.
    let field = &html[html.find(r#"<textarea id="ca-input""#).expect("the composer's field")..];
    assert!(field[..field.find('>').unwrap()].contains("readonly"), "{field}");

    let unknown = app.client.get(app.url("/widget?ws=ws_unknown")).send().await.unwrap();
    assert_eq!(unknown.status(), 404);
}

/// `ContextAssistant.logout()`'s hidden page: it empties what the widget
/// kept for the workspace in the frame's storage, framed only by the
/// workspace's pages, its one script allowed by its hash and nothing else.
#[tokio::test]
async fn the_forget_page_empties_the_workspaces_keys_framed_only_by_its_pages() {
    let app = spawn_app(Db::Sqlite).start().await;
    let response = app.client.get(app.url("/widget/forget?ws=ws_demo")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let csp = response.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.starts_with("default-src 'none'; script-src 'sha256-"), "{csp}");
    assert!(csp.contains(&format!("frame-ancestors 'self' http://{}", app.address)), "{csp}");
    assert!(!csp.contains("unsafe") && !csp.contains("connect-src"), "{csp}");
    let html = response.text().await.unwrap();
    let script = html.split("<script data-ws=\"ws_demo\">").nth(1).unwrap().split("</script>").next().unwrap();
    // The hash in the policy is the script's own: the browser runs it.
    let hash = {
        use base64::Engine as _;
        use sha2::Digest as _;
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script))
    };
    assert!(csp.contains(&format!("'sha256-{hash}'")), "{csp}");
    assert!(script.contains("localStorage.removeItem") && script.contains("ca:forgotten"), "{script}");

    for unknown in ["/widget/forget?ws=ws_unknown", "/widget/forget", "/widget/forget?ws=%3Cscript%3E"] {
        assert_eq!(app.client.get(app.url(unknown)).send().await.unwrap().status(), 404, "{unknown}");
    }
}

#[tokio::test]
async fn the_demo_model_speaks_openai_without_streaming_too() {
    let app = spawn_app(Db::Sqlite).start().await;
    let body = serde_json::json!({"model": "demo", "messages": [{"role": "user", "content": "show me the menu"}],
        "tools": [{"type": "function", "function": {"name": "show_menu", "parameters": {"type": "object"}}}]});
    let answer: serde_json::Value = app
        .client
        .post(app.url("/demo-model/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["object"], "chat.completion");
    assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "show_menu");
}

/// The widget's files go out compressed: the server writes brotli and gzip
/// copies at start and sends the one the browser accepts.
#[tokio::test]
async fn the_widgets_files_are_served_precompressed() {
    let site = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(site.path().join("pkg")).unwrap();
    let wasm: Vec<u8> = (0..100_000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
    std::fs::write(site.path().join("pkg/context-assistant.wasm"), &wasm).unwrap();
    let app =
        crate::helpers::spawn_app(Db::Sqlite).env("LEPTOS_SITE_ROOT", site.path().display().to_string()).start().await;
    let url = app.url("/pkg/context-assistant.wasm");

    // The copies are written at start, off the request path: wait for each
    // one that is asserted, not for one and then assume the other.
    let brotli = served_as(&app, &url, "br, gzip", "br").await;
    assert!(brotli < wasm.len() / 10, "{brotli} bytes for {}", wasm.len());
    let gzip = served_as(&app, &url, "gzip", "gzip").await;
    assert!(gzip < wasm.len() / 10, "{gzip} bytes for {}", wasm.len());
    let plain = app.client.get(&url).send().await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    assert_eq!(plain.bytes().await.unwrap().len(), wasm.len());
}

/// The demo page's `data-token-url`: a fresh token for the guest of the
/// cookie, nothing without one.
#[tokio::test]
async fn the_demo_renews_its_guests_token() {
    let app = spawn_app(Db::Sqlite).start().await;
    let page = app.client.get(app.url("/")).send().await.unwrap();
    let cookie = page.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    assert!(page.text().await.unwrap().contains(r#"data-token-url="/demo/token""#));

    let fresh = app.client.get(app.url("/demo/token")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(fresh.status(), 200);
    assert_eq!(fresh.headers()["cache-control"], "no-store");
    let token = fresh.text().await.unwrap();
    let events = app.turn(&token, None, "hello").await;
    assert!(!events.is_empty(), "the renewed token is accepted");
    let guest = cookie.split('=').nth(1).unwrap();
    use base64::Engine;
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(claims["sub"], guest, "the same guest, so the conversation carries on");

    let without = app.client.get(app.url("/demo/token")).send().await.unwrap();
    assert_eq!(without.status(), 401);
    let forged =
        app.client.get(app.url("/demo/token")).header("cookie", "acme_guest=guest_../../x").send().await.unwrap();
    assert_eq!(forged.status(), 401);
}

/// Waits (up to 30 s) until `url` is served with `encoding` when the client
/// accepts `accept`; returns the size on the wire.
async fn served_as(app: &crate::helpers::TestApp, url: &str, accept: &str, encoding: &str) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let response = app.client.get(url).header("accept-encoding", accept).send().await.unwrap();
        assert_eq!(response.status(), 200);
        if response.headers().get("content-encoding").is_some_and(|v| v == encoding) {
            return response.bytes().await.unwrap().len();
        }
        assert!(std::time::Instant::now() < deadline, "no {encoding} copy of {url} was served within 30 s");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
