//! Remote Tools hosts over HTTP/2 (issue #47): a host that offers `h2` by
//! ALPN carries a node's calls as streams of a few connections, a
//! connection's share is capped so no call waits behind others, a host
//! behind a private CA is trusted only through `CA_TOOL_HOSTS_CA_FILE`,
//! and an HTTP/1.1-only host is called as before. An MCP server behind
//! the same private CA is trusted through the same file.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::http::Version;
use axum::routing::{get, post};
use serde_json::{Value, json};
use server::host::{ExecutionScope, HostClient, HostConnections, HostError, HostTarget};
use server::secret::Secret;
use tokio::sync::watch;

use crate::helpers::{ADMIN_TOKEN, Db, ScriptedModel, Step, of, spawn_app, token};
use crate::tls_host::{Alpn, TestCa, serve_tls};

/// A host whose every request is recorded with its HTTP version; its
/// `lookup` answers once `hold` calls have arrived (at once when 0).
async fn host(ca: &TestCa, alpn: Alpn, hold: usize) -> (String, Arc<Mutex<Vec<(String, Version)>>>, Arc<AtomicUsize>) {
    let seen: Arc<Mutex<Vec<(String, Version)>>> = Arc::default();
    let (arrived, _) = watch::channel(0usize);
    let arrived = Arc::new(arrived);
    let (on_tools, on_context, on_execute) = (seen.clone(), seen.clone(), seen.clone());
    let router = axum::Router::new()
        .route(
            "/tools",
            get(move |version: Version| async move {
                on_tools.lock().unwrap().push(("tools".into(), version));
                Json(json!({"tools": [{"name": "lookup", "verb": "get", "description": "Look up",
                    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]}))
            }),
        )
        .route(
            "/context",
            get(move |version: Version| async move {
                on_context.lock().unwrap().push(("context".into(), version));
                Json(json!({"page": "h2"}))
            }),
        )
        .route(
            "/tools/execute",
            post(move |version: Version, Json(body): Json<Value>| {
                let (seen, arrived) = (on_execute.clone(), arrived.clone());
                async move {
                    seen.lock().unwrap().push(("execute".into(), version));
                    arrived.send_modify(|n| *n += 1);
                    let mut all = arrived.subscribe();
                    let _ = tokio::time::timeout(Duration::from_secs(20), all.wait_for(|n| *n >= hold)).await;
                    Json(json!({"output": {"status": "ok", "q": body["arguments"]["q"],
                        "display": [{"title": "A result", "url": "https://example.com/a"}]}}))
                }
            }),
        );
    let (address, accepted) = serve_tls(ca, alpn, router).await;
    (format!("https://{address}"), seen, accepted)
}

fn scope() -> ExecutionScope {
    ExecutionScope {
        workspace_id: "ws_h2".into(),
        external_user_id: "u".into(),
        permissions: vec![],
        request_id: "r".into(),
    }
}

fn target(base: &str) -> HostTarget {
    HostTarget { base_url: url::Url::parse(base).unwrap(), secret: Secret::new("s"), trusted: false }
}

fn trusting(ca: &TestCa, calls_per_connection: usize) -> HostClient {
    let connections = HostConnections { calls_per_connection, extra_roots: vec![ca.pem().into_bytes()] };
    HostClient::with_connections(Duration::from_secs(20), true, &connections)
}

#[tokio::test]
async fn a_turn_calls_a_host_behind_a_private_ca_over_http2() {
    let ca = TestCa::new("Context Assistant test CA");
    let (base, seen, _) = host(&ca, Alpn::H2, 0).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let model = ScriptedModel::start(vec![Step::Call("lookup", json!({"q": "h2"})), Step::Text("found it")]).await;
    let app = spawn_app(Db::Sqlite)
        .env("OPENAI_BASE_URL", model.base_url())
        .env("CA_TOOL_HOSTS_CA_FILE", ca_file.display().to_string())
        .start()
        .await;
    let (status, created) = app.post_json("/v1/workspaces", ADMIN_TOKEN, &json!({"name": "H2"})).await;
    assert_eq!(status, 201, "{created}");
    let connect = json!({"base_url": base, "secret": "s"});
    let (status, connected) =
        app.post_json("/v1/integrations/generic-rest/connect", created["api_key"].as_str().unwrap(), &connect).await;
    assert_eq!(status, 200, "the host's certificate is trusted through CA_TOOL_HOSTS_CA_FILE: {connected}");

    let user = token(created["id"].as_str().unwrap(), created["embed_secret"].as_str().unwrap(), "user_h2");
    let events = app.turn(&user, None, "look it up").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    let told = model.last_tool_messages();
    assert!(told.iter().any(|m| m.contains("h2")), "the host's answer reached the model: {told:?}");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().any(|(path, _)| path == "execute"), "{seen:?}");
    assert!(seen.iter().all(|(_, version)| *version == Version::HTTP_2), "every call over HTTP/2: {seen:?}");
}

#[tokio::test]
async fn calls_past_a_connections_share_open_the_next_connection_and_none_waits_in_line() {
    let ca = TestCa::new("Context Assistant test CA");
    // Every call is held until all five have arrived: one queued behind
    // the others would never arrive, and the calls would time out.
    let (base, seen, accepted) = host(&ca, Alpn::H2, 5).await;
    let client = Arc::new(trusting(&ca, 2));
    let mut calls = Vec::new();
    for i in 0..5 {
        let client = client.clone();
        let target = target(&base);
        calls.push(tokio::spawn(async move {
            client.execute(&target, "lookup", &format!("call_{i}"), &json!({"q": i}), &scope()).await
        }));
        // One at a time, so each finds the lanes as the last one left them.
        let arrived = i + 1;
        tokio::time::timeout(Duration::from_secs(10), async {
            while seen.lock().unwrap().len() < arrived {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("call {i} reached the host"));
    }
    for (i, call) in calls.into_iter().enumerate() {
        let output = call.await.unwrap().unwrap_or_else(|e| panic!("call {i}: {e}"));
        assert_eq!(output["q"], json!(i));
    }
    assert!(seen.lock().unwrap().iter().all(|(_, version)| *version == Version::HTTP_2));
    assert_eq!(accepted.load(Ordering::SeqCst), 3, "two calls a connection: five calls on three connections");
}

#[tokio::test]
async fn a_host_whose_certificate_no_trusted_ca_signed_is_unreachable() {
    let ca = TestCa::new("Context Assistant test CA");
    let (base, seen, _) = host(&ca, Alpn::H2, 0).await;
    // The system's roots only; then another CA's.
    let stranger = TestCa::new("Some other CA");
    for client in [HostClient::new(Duration::from_secs(5), true), trusting(&stranger, 100)] {
        let error = client.context(&target(&base), &scope()).await.unwrap_err();
        assert!(matches!(error, HostError::Unreachable(_)), "{error}");
    }
    assert!(seen.lock().unwrap().is_empty(), "no request got through");
}

#[tokio::test]
async fn a_host_that_speaks_only_http1_over_tls_is_called_as_before() {
    let ca = TestCa::new("Context Assistant test CA");
    let (base, seen, _) = host(&ca, Alpn::Http1, 0).await;
    let client = trusting(&ca, 100);
    let output = client.execute(&target(&base), "lookup", "call_1", &json!({"q": "one"}), &scope()).await.unwrap();
    assert_eq!(output["q"], "one");
    assert_eq!(seen.lock().unwrap().clone(), vec![("execute".to_owned(), Version::HTTP_11)]);
}

/// A shop's MCP server (rmcp's server side) over TLS, its certificate
/// signed by `ca`; its endpoint as a source.
async fn mcp_shop(ca: &TestCa) -> (crate::mcp::Shop, server::sources::Source) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let shop = crate::mcp::Shop::default();
    let served = shop.clone();
    let service = StreamableHttpService::new(
        move || Ok(served.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let (address, _) = serve_tls(ca, Alpn::Http1, axum::Router::new().nest_service("/mcp", service)).await;
    let url = url::Url::parse(&format!("https://{address}/mcp")).unwrap();
    let source = crate::mcp::shop_source("ws_h2", url);
    (shop, source)
}

#[tokio::test]
async fn an_mcp_server_behind_the_private_ca_is_trusted_through_the_same_file() {
    use server::sources::Sources;
    let ca = TestCa::new("Context Assistant test CA");
    let (shop, source) = mcp_shop(&ca).await;

    // Without the CA (the system's roots only; another CA's): no handshake.
    let stranger = TestCa::new("Some other CA");
    for host in [HostClient::new(Duration::from_secs(5), true), trusting(&stranger, 100)] {
        let error = Sources::new(host, true).tools(&source, &scope()).await.unwrap_err();
        assert!(matches!(error, HostError::Unreachable(_)), "{error}");
    }
    assert_eq!(shop.inits.load(Ordering::SeqCst), 0, "nothing got through");

    let sources = Sources::new(trusting(&ca, 100), true);
    let tools = sources.tools(&source, &scope()).await.unwrap();
    let search = tools.iter().find(|t| t.name == "search_orders").unwrap_or_else(|| panic!("{tools:?}"));
    let read = sources.read(&source, search, "call_1", &json!({"query": "shoes"}), &scope(), None).await;
    assert!(read.is_ok(), "{read:?}");
    assert_eq!(shop.calls_of("search_orders").len(), 1);
}

#[tokio::test]
async fn an_mcp_server_behind_the_private_ca_connects_when_the_file_names_it() {
    let ca = TestCa::new("Context Assistant test CA");
    let (shop, source) = mcp_shop(&ca).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let app = spawn_app(Db::Sqlite).env("CA_TOOL_HOSTS_CA_FILE", ca_file.display().to_string()).start().await;
    let (_, created) = app.post_json("/v1/workspaces", ADMIN_TOKEN, &json!({"name": "Private CA"})).await;
    let connect = json!({"name": "shop", "url": source.url});
    let (status, body) =
        app.post_json("/v1/integrations/mcp/connect", created["api_key"].as_str().unwrap(), &connect).await;
    assert_eq!(status, 200, "{body}");
    assert!(shop.inits.load(Ordering::SeqCst) >= 1, "the server was reached");
}

/// `check-host --mcp` trusts the same file as the server, and says so when
/// it cannot be read.
#[tokio::test]
async fn the_command_checks_an_mcp_server_behind_the_private_ca_through_the_same_file() {
    let binary = crate::helpers::built_server_program();
    let ca = TestCa::new("Context Assistant test CA");
    let (shop, source) = mcp_shop(&ca).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let run = |ca_file: Option<String>| {
        let (binary, url) = (binary.clone(), source.url.clone());
        tokio::task::spawn_blocking(move || {
            let mut command = std::process::Command::new(binary);
            command
                .args(["check-host", "--mcp", &url])
                .env_remove("CA_MCP_HEADERS")
                .env_remove("CA_TOOL_HOSTS_CA_FILE");
            if let Some(file) = ca_file {
                command.env("CA_TOOL_HOSTS_CA_FILE", file);
            }
            let out = command.output().unwrap();
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            (out.status.code(), said)
        })
    };

    let (code, text) = run(None).await.unwrap();
    assert_eq!(code, Some(1), "the system's roots only: {text}");
    assert!(text.contains("mcp_unreachable"), "{text}");
    assert_eq!(shop.inits.load(Ordering::SeqCst), 0, "nothing got through");

    let (code, text) = run(Some(dir.path().join("missing.pem").display().to_string())).await.unwrap();
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("CA_TOOL_HOSTS_CA_FILE") && text.contains("missing.pem"), "{text}");

    let (code, text) = run(Some(ca_file.display().to_string())).await.unwrap();
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("PASS  mcp.handshake"), "{text}");
}
