//! MCP servers as a workspace's tool sources, through the API (issue #30):
//! connecting one (its errors named by cause, its headers sealed and never
//! shown), the classification as the model meets it, a read with the
//! caller's scope in `_meta`, a change staged readable and applied exactly
//! once, a destructive one after two confirmations, `isError` told to the
//! model, names prefixed only where two sources collide, a staged action
//! refused when its tool was redefined, a server gone mid-conversation, and
//! the reference server-everything end to end.

use futures::StreamExt;
use serde_json::{Value, json};

use crate::helpers::{ADMIN_TOKEN, Db, FakeHost, ScriptedModel, Step, TestApp, of, pending, restart, spawn_app, token};
use crate::mcp::{Everything, Shop, start, start_with_bearer, until};
use crate::on_both_databases;

on_both_databases!(
    an_mcp_server_is_connected_its_tools_classified_and_its_headers_never_shown,
    a_read_past_half_the_timeout_is_reported_slow_and_not_waited_for,
    connect_errors_name_their_cause,
    a_read_runs_by_itself_with_the_callers_scope_in_meta,
    untrusted_annotations_make_every_tool_wait_for_apply_with_its_arguments_shown,
    a_change_is_applied_exactly_once_under_twenty_concurrent_applies,
    a_destructive_tool_needs_two_confirmations,
    is_error_is_told_to_the_model_and_the_turn_goes_on,
    names_are_prefixed_only_where_two_sources_collide,
    a_staged_action_is_refused_when_its_tool_was_redefined,
    a_staged_action_is_refused_when_its_server_was_connected_anew,
    a_server_that_changes_its_tools_is_listed_again_when_it_says_so,
    a_server_gone_mid_turn_fails_the_call_not_the_turn,
    progress_is_shown_as_the_tools_activity,
    stop_cancels_the_tools_call_on_the_server,
    an_elicitation_is_answered_through_any_replica_and_reaches_the_tool,
    an_elicitation_declined_reaches_the_tool_as_declined,
    an_assistant_test_answers_a_tools_question,
    a_connection_no_turn_uses_is_closed_and_opened_again_when_needed,
    the_reference_server_everything_is_read_through_a_turn,
);

/// A workspace with a scripted model and nothing connected yet.
struct McpRig {
    app: TestApp,
    model: ScriptedModel,
    api_key: String,
    workspace: String,
    /// The workspace's embed secret (to mint another user's token).
    secret: String,
    token: String,
}

impl McpRig {
    async fn start(db: Db, script: Vec<Step>) -> McpRig {
        Self::start_with(db, script, &[]).await
    }

    /// [`McpRig::start`] with more of the server's environment.
    async fn start_with(db: Db, script: Vec<Step>, env: &[(&str, &str)]) -> McpRig {
        let model = ScriptedModel::start(script).await;
        let mut app = spawn_app(db).env("OPENAI_BASE_URL", model.base_url());
        for (name, value) in env {
            app = app.env(name, *value);
        }
        let app = app.start().await;
        let workspace = json!({"name": "Shop", "allowed_origins": ["https://shop.example"]});
        let (status, created) = app.post_json("/v1/workspaces", ADMIN_TOKEN, &workspace).await;
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_str().unwrap().to_owned();
        let secret = created["embed_secret"].as_str().unwrap().to_owned();
        let token = token(&id, &secret, "user_42");
        McpRig { app, model, api_key: created["api_key"].as_str().unwrap().to_owned(), workspace: id, secret, token }
    }

    async fn connect(&self, body: Value) -> (u16, Value) {
        self.app.post_json("/v1/integrations/mcp/connect", &self.api_key, &body).await
    }

    /// Connects the shop as `shop`, its annotations trusted or not.
    async fn connect_shop(&self, url: &url::Url, trust: bool) -> Value {
        let (status, body) =
            self.connect(json!({"name": "shop", "url": url.as_str(), "trust_annotations": trust})).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    async fn say(&self, message: &str) -> Vec<(String, Value)> {
        self.app.turn(&self.token, None, message).await
    }

    async fn act_at(&self, base: &str, id: &str, verb: &str) -> (u16, Vec<(String, Value)>, Value) {
        let response = self
            .app
            .client
            .post(format!("{base}/v1/actions/{id}/{verb}"))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        match serde_json::from_str::<Value>(&text) {
            Ok(body) => (status, Vec::new(), body),
            Err(_) => (status, crate::helpers::parse_sse(&text), Value::Null),
        }
    }

    async fn act(&self, id: &str, verb: &str) -> (u16, Vec<(String, Value)>, Value) {
        self.act_at(&self.app.url(""), id, verb).await
    }
}

fn verbs_of(connected: &Value) -> Vec<(String, String)> {
    connected["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t["verb"].as_str().unwrap().to_owned()))
        .collect()
}

async fn an_mcp_server_is_connected_its_tools_classified_and_its_headers_never_shown(db: Db) {
    let rig = McpRig::start(db, vec![Step::Text("hi")]).await;
    let url = start_with_bearer(Shop::default(), "s3cret-token").await;
    let body = json!({"name": "shop", "url": url.as_str(), "headers": {"Authorization": "Bearer s3cret-token"},
                      "trust_annotations": true, "verbs": {"hang": "delete"}, "allowed_tools": []});

    let (status, connected) = rig.connect(body).await;

    assert_eq!(status, 200, "{connected}");
    assert_eq!(connected["provider"], "shop");
    let expected = [
        ("search_orders", "get"),
        ("add_note", "create"),
        ("cancel_order", "delete"),
        ("hang", "delete"),
        ("fail", "get"),
        ("count_stock", "get"),
        ("choose_size", "get"),
    ];
    let expected: Vec<(String, String)> = expected.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
    assert_eq!(verbs_of(&connected), expected, "the annotations, trusted, and the host's word over them");
    assert_eq!(connected["tools"][1]["title"], "Add a note");
    assert_eq!(connected["tools"][0]["app"], false);
    let rules: Vec<&str> =
        connected["report"]["rules"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    for rule in [
        "mcp.handshake",
        "mcp.tools_list",
        "tools.names",
        "tools.descriptions",
        "tools.schemas",
        "tools.count",
        "tools.classification",
        "mcp.list_changed",
        "reads.time",
    ] {
        assert!(rules.contains(&rule), "{rule} in {rules:?}");
    }

    let (status, listed) = rig.app.get_json("/v1/integrations", &rig.api_key).await;
    assert_eq!(status, 200);
    let shop = &listed["integrations"][0];
    assert_eq!((shop["provider"].as_str(), shop["kind"].as_str()), (Some("shop"), Some("mcp")));
    assert_eq!(shop["headers"], json!(["Authorization"]), "names, never values");
    assert_eq!(shop["trust_annotations"], true);
    assert_eq!(shop["verbs"], json!({"hang": "delete"}));
    let (status, one) = rig.app.get_json("/v1/integrations/shop", &rig.api_key).await;
    assert_eq!((status, one["base_url"].as_str()), (200, Some(url.as_str())));

    // Sealed at rest, and absent from the audit trail.
    let pool = &rig.app.state.pool;
    let (sealed,): (String,) =
        sqlx::query_as("SELECT secret_enc FROM integrations WHERE provider = 'shop'").fetch_one(pool).await.unwrap();
    assert!(!sealed.contains("s3cret"), "{sealed}");
    let (status, audit) = rig.app.get_json("/v1/audit", &rig.api_key).await;
    assert_eq!(status, 200, "{audit}");
    assert!(audit.to_string().contains("integration.connected"), "{audit}");
    assert!(!audit.to_string().contains("s3cret") && !listed.to_string().contains("s3cret"));

    // Narrowed and re-classified without calling the server; then removed.
    let patch = json!({"allowed_tools": ["search_orders"], "trust_annotations": false});
    let (status, patched) = rig.app.patch_json("/v1/integrations/shop", &rig.api_key, &patch).await;
    assert_eq!((status, patched["trust_annotations"].as_bool()), (200, Some(false)), "{patched}");
    assert_eq!(patched["allowed_tools"], json!(["search_orders"]));
    let response =
        rig.app.client.delete(rig.app.url("/v1/integrations/shop")).bearer_auth(&rig.api_key).send().await.unwrap();
    assert_eq!(response.status(), 204);
    let (_, listed) = rig.app.get_json("/v1/integrations", &rig.api_key).await;
    assert_eq!(listed["integrations"], json!([]));
}

/// The connect report calls each read once, a few at a time, and stops
/// waiting for one at half the tool timeout: that read is reported slow,
/// by name (not as a failure), and ended on the server.
async fn a_read_past_half_the_timeout_is_reported_slow_and_not_waited_for(db: Db) {
    let rig = McpRig::start_with(db, vec![Step::Text("hi")], &[("CA_TOOL_TIMEOUT_MS", "3000")]).await;
    let shop = Shop::default();
    shop.hang_for_the_check.store(true, std::sync::atomic::Ordering::SeqCst);
    let url = start(shop.clone()).await;
    let body = json!({"name": "shop", "url": url.as_str(), "trust_annotations": true});

    let (status, connected) = rig.connect(body).await;

    assert_eq!(status, 200, "{connected}");
    let rule = |id: &str| {
        let rules = connected["report"]["rules"].as_array().unwrap();
        rules.iter().find(|r| r["id"] == id).cloned().unwrap_or_else(|| panic!("{id} in {rules:?}"))
    };
    let time = rule("reads.time");
    assert_eq!(time["status"], "warn", "{time}");
    let detail = time["detail"].as_str().unwrap();
    assert!(detail.contains("`hang` had not answered after 1500 ms, half the timeout (3000 ms)"), "{detail}");
    assert!(!rule("reads.calls")["detail"].as_str().unwrap().contains("hang"), "slow is not failed");
    until(|| shop.cancelled.lock().unwrap().iter().any(|c| c == "hang")).await;
    assert_eq!(shop.calls_of("search_orders").len(), 1, "the other reads ran, once");
}

async fn connect_errors_name_their_cause(db: Db) {
    let rig = McpRig::start(db, vec![Step::Text("hi")]).await;
    let guarded = start_with_bearer(Shop::default(), "right").await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let not_mcp = FakeHost::start(json!([]), 200, json!({})).await;

    let (status, body) = rig
        .connect(json!({"name": "shop", "url": guarded.as_str(), "headers": {"Authorization": "Bearer wrong"}}))
        .await;
    assert_eq!((status, body["code"].as_str()), (400, Some("mcp_unauthorized")), "{body}");
    assert!(body["error"].as_str().unwrap().contains("401"), "its status in the message: {body}");
    assert!(!body.to_string().contains("wrong"), "the header's value is never echoed");

    let (status, body) = rig.connect(json!({"name": "shop", "url": format!("http://{closed}/mcp")})).await;
    assert_eq!((status, body["code"].as_str()), (502, Some("mcp_unreachable")), "{body}");

    let (status, body) = rig.connect(json!({"name": "shop", "url": not_mcp.base_url()})).await;
    assert_eq!((status, body["code"].as_str()), (502, Some("mcp_protocol")), "{body}");

    for (name, why) in [("generic-rest", "reserved"), ("mcp", "reserved"), ("Shop", "a-z"), ("", "a-z"), ("a_b", "a-z")]
    {
        let (status, body) = rig.connect(json!({"name": name, "url": guarded.as_str()})).await;
        assert_eq!(status, 400, "{name}: {body}");
        assert!(body["error"].as_str().unwrap().contains(why), "{name}: {body}");
    }
    let (status, body) =
        rig.connect(json!({"name": "shop", "url": guarded.as_str(), "headers": {"Mcp-Session-Id": "x"}})).await;
    assert_eq!(status, 400, "a reserved header: {body}");
    let (status, body) = rig.connect(json!({"name": "shop", "url": guarded.as_str(), "verbs": {"x": "destroy"}})).await;
    assert_eq!(status, 400, "an unknown verb: {body}");
    let (status, _) = rig.app.post_json("/v1/integrations/mcp/connect", "cak_wrong", &json!({})).await;
    assert_eq!(status, 401);
    let (_, listed) = rig.app.get_json("/v1/integrations", &rig.api_key).await;
    assert_eq!(listed["integrations"], json!([]), "nothing was stored");
}

async fn a_read_runs_by_itself_with_the_callers_scope_in_meta(db: Db) {
    let script = vec![Step::Call("search_orders", json!({"q": "7"})), Step::Text("Found: {last_tool}")];
    let rig = McpRig::start(db, script).await;
    let shop = Shop::default();
    rig.connect_shop(&start(shop.clone()).await, true).await;
    let checked = shop.metas.lock().unwrap().clone();
    assert_eq!(
        checked[0]["context-assistant/execution"]["externalUserId"], "context-assistant-check",
        "the report's own read"
    );
    shop.calls.lock().unwrap().clear();

    let events = rig.say("where is order 7?").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    let tools = of(&events, "tool");
    assert_eq!(tools.iter().map(|t| t["status"].as_str().unwrap()).collect::<Vec<_>>(), ["started", "succeeded"]);
    let reply = of(&events, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(reply.contains("Order 7 shipped."), "{reply}");
    let cards = of(&events, "display");
    assert_eq!(cards[0]["cards"][0]["url"], "https://shop.example/orders/7", "a resource link as a card");
    assert_eq!(shop.calls_of("search_orders"), [json!({"q": "7"})]);
    let meta = shop.metas.lock().unwrap().last().cloned().unwrap();
    let scope = &meta["context-assistant/execution"];
    assert_eq!(scope["workspaceId"], rig.workspace.as_str(), "{meta}");
    assert_eq!(scope["externalUserId"], "user_42");
    assert_eq!(scope["permissions"], json!(["tasks:read"]));
    assert!(scope["requestId"].as_str().unwrap().starts_with("req"), "{meta}");
    // Tools are listed once per connection, not per turn.
    let lists = shop.lists.load(std::sync::atomic::Ordering::SeqCst);
    rig.say("and again?").await;
    assert_eq!(shop.lists.load(std::sync::atomic::Ordering::SeqCst), lists, "kept while nothing changed");
}

async fn untrusted_annotations_make_every_tool_wait_for_apply_with_its_arguments_shown(db: Db) {
    let script = vec![Step::Call("search_orders", json!({"q": "7"})), Step::Text("Done: {last_tool}")];
    let rig = McpRig::start(db, script).await;
    let shop = Shop::default();
    let connected = rig.connect_shop(&start(shop.clone()).await, false).await;
    assert!(verbs_of(&connected).iter().all(|(_, verb)| verb != "get"), "nothing runs by itself: {connected}");

    let events = rig.say("where is order 7?").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "pending_action");
    let action = pending(&events);
    assert_eq!(action["tool"], "search_orders");
    assert_eq!(action["preview"], "Search orders\nq: 7", "the title and the frozen arguments, readable");
    assert!(shop.calls_of("search_orders").is_empty(), "nothing ran before Apply");
    let id = action["action_id"].as_str().unwrap();
    let (status, applied, _) = rig.act(id, "apply").await;
    assert_eq!(status, 200);
    assert_eq!(of(&applied, "done")[0]["stop_reason"], "completed");
    assert_eq!(shop.calls_of("search_orders"), [json!({"q": "7"})]);
}

async fn a_change_is_applied_exactly_once_under_twenty_concurrent_applies(db: Db) {
    let script = vec![Step::Call("add_note", json!({"q": "gift wrap"})), Step::Text("Done: {last_tool}")];
    let rig = McpRig::start(db, script).await;
    let shop = Shop::default();
    shop.note_delay_ms.store(100, std::sync::atomic::Ordering::SeqCst);
    rig.connect_shop(&start(shop.clone()).await, true).await;
    let events = rig.say("add a note").await;
    let action = pending(&events);
    assert_eq!(action["verb"], "create");
    let id = action["action_id"].as_str().unwrap().to_owned();

    let other = format!("http://{}", restart(&rig.app, &[("OPENAI_BASE_URL", rig.model.base_url())]).await);
    let here = rig.app.url("");
    let attempts = (0..20).map(|i| rig.act_at(if i % 2 == 0 { &here } else { &other }, &id, "apply"));
    let results = futures::future::join_all(attempts).await;

    assert_eq!(results.iter().filter(|(s, _, _)| *s == 200).count(), 1, "exactly one Apply wins");
    assert_eq!(results.iter().filter(|(s, _, _)| *s == 409).count(), 19);
    assert_eq!(shop.calls_of("add_note"), [json!({"q": "gift wrap"})], "one tools/call, the frozen arguments");
    let metas = shop.metas.lock().unwrap().clone();
    let applied = metas.iter().find(|m| m["context-assistant/execution"]["requestId"] == id.as_str());
    assert!(applied.is_some(), "the action's id is the call's requestId: {metas:?}");
}

async fn a_destructive_tool_needs_two_confirmations(db: Db) {
    let script = vec![Step::Call("cancel_order", json!({"q": "7"})), Step::Text("Cancelled.")];
    let rig = McpRig::start(db, script).await;
    let shop = Shop::default();
    rig.connect_shop(&start(shop.clone()).await, true).await;
    let action = pending(&rig.say("cancel order 7").await);
    assert_eq!((action["verb"].as_str(), action["confirmations_required"].as_u64()), (Some("delete"), Some(2)));
    let id = action["action_id"].as_str().unwrap();

    let (status, _, body) = rig.act(id, "apply").await;
    assert_eq!((status, body["code"].as_str()), (409, Some("confirmation_required")));
    let (status, _, _) = rig.act(id, "confirm").await;
    assert_eq!(status, 200);
    assert!(shop.calls_of("cancel_order").is_empty(), "the first confirmation runs nothing");
    let (status, events, _) = rig.act(id, "apply").await;
    assert_eq!((status, of(&events, "done")[0]["stop_reason"].as_str()), (200, Some("completed")));
    assert_eq!(shop.calls_of("cancel_order").len(), 1);
}

async fn is_error_is_told_to_the_model_and_the_turn_goes_on(db: Db) {
    let script = vec![Step::Call("fail", json!({"q": "9"})), Step::Text("Sorry: {last_tool}")];
    let rig = McpRig::start(db, script).await;
    rig.connect_shop(&start(Shop::default()).await, true).await;

    let events = rig.say("find order 9").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
    assert_eq!(of(&events, "tool")[1]["status"], "failed");
    let told = rig.model.last_tool_messages().join("\n");
    assert!(told.contains("no such order") && told.contains("tool_failed"), "{told}");
}

async fn names_are_prefixed_only_where_two_sources_collide(db: Db) {
    let script = vec![Step::Call("shop__search_orders", json!({"q": "7"})), Step::Text("{last_tool}")];
    let rig = McpRig::start(db, script).await;
    let host = FakeHost::start(
        json!([{"name": "search_orders", "description": "Remote search", "verb": "get", "inputSchema": {"type": "object"}},
               {"name": "lookup", "description": "Look up", "verb": "get", "inputSchema": {"type": "object"}}]),
        200,
        json!({"output": {"from": "remote"}}),
    )
    .await;
    let connect = json!({"base_url": host.base_url(), "secret": crate::helpers::HOST_SECRET});
    let (status, body) = rig.app.post_json("/v1/integrations/generic-rest/connect", &rig.api_key, &connect).await;
    assert_eq!(status, 200, "{body}");
    let shop = Shop::default();
    rig.connect_shop(&start(shop.clone()).await, true).await;
    shop.calls.lock().unwrap().clear();

    let events = rig.say("where is order 7?").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    let offered: Vec<String> = rig.model.requests.lock().unwrap()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(offered.contains(&"generic-rest__search_orders".to_owned()), "{offered:?}");
    assert!(offered.contains(&"shop__search_orders".to_owned()), "{offered:?}");
    assert!(
        offered.contains(&"lookup".to_owned()) && offered.contains(&"add_note".to_owned()),
        "unique names stay: {offered:?}"
    );
    assert_eq!(shop.calls_of("search_orders"), [json!({"q": "7"})], "the call went to the source it names");
    assert_eq!(host.count("execute"), 0);
}

async fn a_staged_action_is_refused_when_its_tool_was_redefined(db: Db) {
    let script = vec![Step::Call("add_note", json!({"q": "x"})), Step::Text("ok")];
    let rig = McpRig::start(db, script).await;
    let shop = Shop::default();
    rig.connect_shop(&start(shop.clone()).await, true).await;
    let action = pending(&rig.say("add a note").await);
    let id = action["action_id"].as_str().unwrap();

    // The server defines the tool anew (without saying so): Apply lists
    // the tools afresh and finds a different definition.
    shop.redefined.store(true, std::sync::atomic::Ordering::SeqCst);
    let (status, _, body) = rig.act(id, "apply").await;

    assert_eq!((status, body["code"].as_str()), (409, Some("tool_gone")), "{body}");
    assert!(shop.calls_of("add_note").is_empty(), "nothing ran");
}

async fn a_staged_action_is_refused_when_its_server_was_connected_anew(db: Db) {
    let script = vec![Step::Call("add_note", json!({"q": "x"})), Step::Text("ok")];
    let rig = McpRig::start(db, script).await;
    let shop = Shop::default();
    let url = start(shop.clone()).await;
    rig.connect_shop(&url, true).await;
    let action = pending(&rig.say("add a note").await);
    let id = action["action_id"].as_str().unwrap();

    // Connected again under the same name (the same server, even): a new
    // version of the integration, on which nothing was previewed.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    rig.connect_shop(&url, true).await;
    let (status, _, body) = rig.act(id, "apply").await;

    assert_eq!((status, body["code"].as_str()), (409, Some("integration_changed")), "{body}");
    assert!(shop.calls_of("add_note").is_empty(), "nothing ran");
}

async fn a_server_that_changes_its_tools_is_listed_again_when_it_says_so(db: Db) {
    let rig = McpRig::start(db, vec![Step::Text("ok")]).await;
    let shop = Shop::default();
    rig.connect_shop(&start(shop.clone()).await, true).await;
    let described = |rig: &McpRig| -> String {
        let requests = rig.model.requests.lock().unwrap();
        let tools = requests.last().unwrap()["tools"].as_array().unwrap().clone();
        let note = tools.iter().find(|t| t["function"]["name"] == "add_note").unwrap();
        note["function"]["description"].as_str().unwrap().to_owned()
    };
    rig.say("hello").await;
    assert_eq!(described(&rig), "Adds a note");

    // Redefined, not yet said: the kept list is offered.
    shop.redefined.store(true, std::sync::atomic::Ordering::SeqCst);
    rig.say("hello again").await;
    assert_eq!(described(&rig), "Adds a note", "kept while the server says nothing");

    // Said: the next turns list again (the notification travels on its own).
    shop.announce_tool_changes().await;
    let mut seen = String::new();
    for _ in 0..100 {
        rig.say("and now?").await;
        seen = described(&rig);
        if seen == "Adds a note (v2)" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(seen, "Adds a note (v2)", "listed again after notifications/tools/list_changed");
}

async fn a_server_gone_mid_turn_fails_the_call_not_the_turn(db: Db) {
    let script = vec![Step::Call("hang", json!({})), Step::Text("after: {last_tool}")];
    let rig = McpRig::start(db, script).await;
    let shop = Shop::default();
    let (url, relay) = crate::mcp::relay(&start(shop.clone()).await).await;
    rig.connect_shop(&url, true).await;
    shop.calls.lock().unwrap().clear();

    // The read is under way when every connection to the server is cut.
    let (mut rest, mut seen) =
        crate::helpers::turn_until(&rig.app, &rig.token, "wait for it", r#""status":"started""#).await;
    until(|| !shop.calls_of("hang").is_empty()).await;
    assert_eq!(shop.calls_of("hang").len(), 1);
    relay.abort();
    while let Some(chunk) = rest.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let events = crate::helpers::parse_sse(&seen);

    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    assert_eq!(of(&events, "tool").last().unwrap()["status"], "failed");
    let reply = of(&events, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(reply.starts_with("after:") && reply.contains("host_"), "the model heard why: {reply}");
}

async fn the_reference_server_everything_is_read_through_a_turn(db: Db) {
    let script = vec![Step::Call("echo", json!({"message": "hello from a turn"})), Step::Text("{last_tool}")];
    let rig = McpRig::start(db, script).await;
    let everything = Everything::start();
    let connected = rig.connect_shop(&everything.url, true).await;
    assert!(verbs_of(&connected).contains(&("echo".to_owned(), "get".to_owned())), "{connected}");

    let events = rig.say("echo something").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    let reply = of(&events, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(reply.contains("Echo: hello from a turn"), "{reply}");
}

async fn progress_is_shown_as_the_tools_activity(db: Db) {
    let script = vec![Step::Call("count_stock", json!({"q": "socks"})), Step::Text("{last_tool}")];
    let rig = McpRig::start(db, script).await;
    rig.connect_shop(&start(Shop::default()).await, true).await;

    let events = rig.say("how many socks?").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    let activity: Vec<(String, Value, Value)> = of(&events, "tool")
        .iter()
        .map(|t| (t["status"].as_str().unwrap().to_owned(), t["progress"].clone(), t["message"].clone()))
        .collect();
    assert_eq!(activity.first().unwrap().0, "started");
    assert_eq!(activity.last().unwrap().0, "succeeded");
    let progress: Vec<&(String, Value, Value)> = activity.iter().filter(|(s, _, _)| s == "progress").collect();
    assert_eq!(progress.len(), 3, "{activity:?}");
    assert_eq!((progress[0].1.clone(), progress[0].2.clone()), (json!(1.0), json!("Counting shelf 1")));
    assert_eq!(of(&events, "tool")[1]["total"], json!(3.0));
    assert!(of(&events, "message")[0]["text"].as_str().unwrap().contains("42 in stock"));
}

async fn stop_cancels_the_tools_call_on_the_server(db: Db) {
    let rig = McpRig::start(db, vec![Step::Call("hang", json!({})), Step::Text("never")]).await;
    let shop = Shop::default();
    rig.connect_shop(&start(shop.clone()).await, true).await;
    // The connect report's own read of `hang` is not the turn's.
    shop.calls.lock().unwrap().clear();
    let (mut rest, mut seen) = crate::helpers::turn_until(&rig.app, &rig.token, "wait", r#""status":"started""#).await;
    let turn_id = crate::helpers::parse_sse(&seen)[0].1["turn_id"].as_str().unwrap().to_owned();
    until(|| !shop.calls_of("hang").is_empty()).await;
    assert!(shop.cancelled.lock().unwrap().is_empty());

    let stop = rig.app.client.post(rig.app.url(&format!("/v1/turns/{turn_id}/stop"))).bearer_auth(&rig.token);
    assert!(stop.send().await.unwrap().status().is_success());
    while let Some(chunk) = rest.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }

    let events = crate::helpers::parse_sse(&seen);
    assert_eq!(of(&events, "done")[0]["stop_reason"], "cancelled");
    until(|| !shop.cancelled.lock().unwrap().is_empty()).await;
    assert_eq!(*shop.cancelled.lock().unwrap(), ["hang"], "notifications/cancelled reached the server");
}

/// Starts a turn in which `choose_size` asks the user; the open stream,
/// what was read, and the request's id.
async fn asked(rig: &McpRig) -> (crate::helpers::OpenStream, String, Value) {
    let (rest, seen) = crate::helpers::turn_until(&rig.app, &rig.token, "which size?", "elicitation_id").await;
    // The event may arrive in pieces: read on to its end.
    let (mut rest, mut seen) = (rest, seen);
    while !crate::helpers::parse_sse(&seen).iter().any(|(name, _)| name == "elicitation") {
        seen.push_str(&String::from_utf8_lossy(&rest.next().await.unwrap().unwrap()));
    }
    let request = crate::helpers::parse_sse(&seen).into_iter().find(|(name, _)| name == "elicitation").unwrap().1;
    (rest, seen, request)
}

async fn answer_at(rig: &McpRig, base: &str, token: &str, id: &str, body: Value) -> (u16, Value) {
    let response = rig
        .app
        .client
        .post(format!("{base}/v1/elicitations/{id}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    crate::helpers::status_and_json(response).await
}

async fn an_elicitation_is_answered_through_any_replica_and_reaches_the_tool(db: Db) {
    let rig = McpRig::start(db, vec![Step::Call("choose_size", json!({})), Step::Text("{last_tool}")]).await;
    let shop = Shop::default();
    rig.connect_shop(&start(shop.clone()).await, true).await;
    let (mut rest, mut seen, request) = asked(&rig).await;

    assert_eq!(request["message"], "Which size would you like?");
    assert_eq!(request["name"], "choose_size");
    let size = &request["fields"][1];
    assert_eq!(
        (size["name"].as_str(), size["kind"].as_str(), size["required"].as_bool()),
        (Some("size"), Some("choice"), Some(true))
    );
    assert_eq!(size["options"][1], json!({"value": "m", "label": "Medium"}));
    let id = request["elicitation_id"].as_str().unwrap().to_owned();

    // Hostile and broken answers change nothing.
    let here = rig.app.url("");
    let stranger = token(&rig.workspace, &rig.secret, "someone_else");
    let (status, _) =
        answer_at(&rig, &here, &stranger, &id, json!({"action": "accept", "content": {"size": "m"}})).await;
    assert_eq!(status, 404, "another user's request is not found");
    for (bad, why) in [
        (json!({"action": "accept", "content": {"size": "xl"}}), "`size`: must be one of the options"),
        (json!({"action": "accept", "content": {}}), "`size` is required"),
        (json!({"action": "accept", "content": {"size": "m", "admin": true}}), "`admin` is not a field"),
        (json!({"action": "decline", "content": {"size": "m"}}), "content goes with accept only"),
    ] {
        let (status, body) = answer_at(&rig, &here, &rig.token, &id, bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["error"].as_str().unwrap().contains(why), "{bad}: {body}");
    }

    // Answered on another replica: the waiting turn reads it from the database.
    let other = format!("http://{}", restart(&rig.app, &[("OPENAI_BASE_URL", rig.model.base_url())]).await);
    let answer = json!({"action": "accept", "content": {"size": "m", "note": "gift"}});
    let (status, body) = answer_at(&rig, &other, &rig.token, &id, answer.clone()).await;
    assert_eq!((status, body["action"].as_str()), (200, Some("accept")), "{body}");
    let (status, body) = answer_at(&rig, &here, &rig.token, &id, answer).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("elicitation_answered")), "answered once");
    while let Some(chunk) = rest.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }

    let events = crate::helpers::parse_sse(&seen);
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    let heard = shop.answers.lock().unwrap().clone();
    assert_eq!(heard.len(), 1);
    let heard: Value = serde_json::from_str(&heard[0]).unwrap();
    assert_eq!(heard, json!({"action": "accept", "content": {"size": "m", "note": "gift"}}));
    let (_, audit) = rig.app.get_json("/v1/audit", &rig.api_key).await;
    assert!(audit.to_string().contains("elicitation.answered") && !audit.to_string().contains("gift"), "{audit}");
}

async fn an_elicitation_declined_reaches_the_tool_as_declined(db: Db) {
    let rig = McpRig::start(db, vec![Step::Call("choose_size", json!({})), Step::Text("{last_tool}")]).await;
    let shop = Shop::default();
    rig.connect_shop(&start(shop.clone()).await, true).await;
    let (mut rest, mut seen, request) = asked(&rig).await;
    let id = request["elicitation_id"].as_str().unwrap().to_owned();

    let (status, _) = answer_at(&rig, &rig.app.url(""), &rig.token, &id, json!({"action": "decline"})).await;

    assert_eq!(status, 200);
    while let Some(chunk) = rest.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    assert_eq!(of(&crate::helpers::parse_sse(&seen), "done")[0]["stop_reason"], "completed");
    let heard: Value = serde_json::from_str(&shop.answers.lock().unwrap()[0]).unwrap();
    assert_eq!(heard, json!({"action": "decline"}));
}

/// An assistant test (issue #46) whose step answers the question a tool
/// asked the previous one: the tool hears the answer, the reply follows.
async fn an_assistant_test_answers_a_tools_question(db: Db) {
    let rig = McpRig::start(db, vec![Step::Call("choose_size", json!({})), Step::Text("Done: {last_tool}")]).await;
    let shop = Shop::default();
    rig.connect_shop(&start(shop.clone()).await, true).await;
    let suite = json!({"name": "sizes", "cases": [{"name": "asks the size", "steps": [
        {"user": "which size?", "expect": {"tool_called": "choose_size", "no_pending_action": true}},
        {"answer": {"size": "m", "note": "gift"}, "expect": {"reply_contains": ["accept", "gift"]}},
    ]}]});
    let (status, run) = rig.app.post_json("/v1/tests/runs", &rig.api_key, &json!({ "suite": suite })).await;
    assert_eq!(status, 202, "{run}");
    let id = run["id"].as_str().unwrap();
    let mut run = run.clone();
    for _ in 0..400 {
        run = rig.app.get_json(&format!("/v1/tests/runs/{id}"), &rig.api_key).await.1;
        if run["status"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(run["status"], "passed", "{run:#}");
    let transcript = run["report"]["cases"][0]["transcript"].to_string();
    assert!(transcript.contains("Which size would you like?") && transcript.contains("answered"), "{transcript}");
    let heard: Value = serde_json::from_str(&shop.answers.lock().unwrap()[0]).unwrap();
    assert_eq!(heard, json!({"action": "accept", "content": {"size": "m", "note": "gift"}}));
}

/// A connection idle past `CA_MCP_IDLE_SECS` is closed (the server's
/// session ended, the gauge down, the reason counted), and the next turn
/// opens one again: many workspaces do not hold sessions for ever.
async fn a_connection_no_turn_uses_is_closed_and_opened_again_when_needed(db: Db) {
    let read = [Step::Call("search_orders", json!({"q": "7"})), Step::Text("Done: {last_tool}")];
    let model = ScriptedModel::start(read.iter().chain(read.iter()).cloned().collect()).await;
    let app = spawn_app(db).env("OPENAI_BASE_URL", model.base_url()).env("CA_MCP_IDLE_SECS", "1").start().await;
    let (_, created) = app.post_json("/v1/workspaces", ADMIN_TOKEN, &json!({"name": "Idle"})).await;
    let key = created["api_key"].as_str().unwrap();
    let user = token(created["id"].as_str().unwrap(), created["embed_secret"].as_str().unwrap(), "u");
    let shop = Shop::default();
    let url = start(shop.clone()).await;
    let (status, body) = app
        .post_json(
            "/v1/integrations/mcp/connect",
            key,
            &json!({"name": "shop", "url": url.as_str(), "trust_annotations": true}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let sources = &app.state.api.engine.sources;
    assert_eq!(of(&app.turn(&user, None, "stock?").await, "done")[0]["stop_reason"], "completed");
    assert_eq!(sources.open_mcp_connections(), 1, "kept for the next turn");
    let inits = shop.inits.load(std::sync::atomic::Ordering::SeqCst);
    for _ in 0..100 {
        if sources.open_mcp_connections() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(sources.open_mcp_connections(), 0, "closed once idle");
    let metrics = server::metrics::render();
    assert!(metrics.contains("ca_mcp_connections_closed_total{reason=\"idle\"}"), "{metrics}");
    assert_eq!(of(&app.turn(&user, None, "stock again?").await, "done")[0]["stop_reason"], "completed");
    assert_eq!(shop.inits.load(std::sync::atomic::Ordering::SeqCst), inits + 1, "opened again: one more handshake");
    assert_eq!(sources.open_mcp_connections(), 1);
}

/// `context-assistant check-host --mcp`: the connect report as text, its
/// headers from CA_MCP_HEADERS (never an argument), exit status by it.
#[tokio::test]
async fn the_command_reports_on_an_mcp_server() {
    let binary = crate::helpers::built_server_program();
    let url = start_with_bearer(Shop::default(), "cli-token").await;
    let run = |headers: Option<&'static str>| {
        let (binary, url) = (binary.clone(), url.to_string());
        tokio::task::spawn_blocking(move || {
            let mut command = std::process::Command::new(binary);
            command.args(["check-host", "--mcp", &url, "--trust-annotations"]).env_remove("CA_MCP_HEADERS");
            if let Some(headers) = headers {
                command.env("CA_MCP_HEADERS", headers);
            }
            let out = command.output().unwrap();
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            (out.status.code(), said)
        })
    };

    let (code, text) = run(Some(r#"{"Authorization": "Bearer cli-token"}"#)).await.unwrap();
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("PASS  mcp.handshake") && text.contains("shop 1.2.3"), "{text}");
    assert!(text.contains("tools.classification") && text.contains("0 failed"), "{text}");

    let (code, text) = run(None).await.unwrap();
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("mcp_unauthorized") && !text.contains("cli-token"), "{text}");
}

/// The address rules of Remote Tools hosts: without
/// CA_ALLOW_PRIVATE_TOOL_HOSTS a loopback or private server is refused
/// before it is dialled, by literal and by name.
#[tokio::test]
async fn a_private_address_is_refused_unless_allowed() {
    let app = spawn_app(Db::Sqlite).env("CA_ALLOW_PRIVATE_TOOL_HOSTS", "0").start().await;
    let workspace = json!({"name": "Shop", "allowed_origins": []});
    let (_, created) = app.post_json("/v1/workspaces", ADMIN_TOKEN, &workspace).await;
    let api_key = created["api_key"].as_str().unwrap();
    let shop = Shop::default();
    let url = start(shop.clone()).await;
    let by_name = format!("http://localhost:{}/mcp", url.port().unwrap());
    // Loopback only (127.0.0.2 as well): a test never names an address the
    // server could dial off this machine; host.rs's unit tests cover the
    // private ranges.
    for url in [url.as_str(), by_name.as_str(), "http://127.0.0.2:9/mcp", "http://[::1]:9/mcp"] {
        let (status, body) =
            app.post_json("/v1/integrations/mcp/connect", api_key, &json!({"name": "shop", "url": url})).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert!(body["error"].as_str().unwrap().contains("CA_ALLOW_PRIVATE_TOOL_HOSTS"), "{url}: {body}");
    }
    assert_eq!(shop.inits.load(std::sync::atomic::Ordering::SeqCst), 0, "never dialled");
}

/// A server that answers with a redirect is not followed there.
#[tokio::test]
async fn a_redirect_is_not_followed() {
    let rig = McpRig::start(Db::Sqlite, vec![Step::Text("hi")]).await;
    let shop = Shop::default();
    let target = start(shop.clone()).await;
    let redirecting = crate::helpers::serve(axum::Router::new().fallback(move || {
        let target = target.to_string();
        async move { axum::response::Redirect::temporary(&target) }
    }))
    .await;

    let (status, body) = rig.connect(json!({"name": "shop", "url": format!("http://{redirecting}/mcp")})).await;

    assert_eq!((status, body["code"].as_str()), (502, Some("mcp_protocol")), "{body}");
    assert_eq!(shop.inits.load(std::sync::atomic::Ordering::SeqCst), 0, "the redirect's target was never reached");
}
