//! Contract exactness (remote-tools-contract.md): each call to a host
//! carries its own `requestId`, and an Apply its action's; an Apply runs
//! only where it was previewed, and one the host finds stale runs nothing
//! and is offered again as a fresh preview (our extension).

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::{Db, HOST_SECRET, HostSpec, Rig, Step, of, pending, task_tools};
use crate::on_both_databases;

on_both_databases!(
    every_call_carries_its_own_request_id_and_an_apply_its_actions_id,
    an_apply_runs_only_on_the_integration_it_was_previewed_on_and_while_the_tool_is_offered,
    a_stale_apply_runs_nothing_and_offers_a_fresh_preview_of_the_same_arguments,
    a_stale_apply_whose_fresh_preview_fails_is_explained_by_the_model,
    a_conflict_without_stale_is_an_ordinary_failure,
);

fn request_id_of_query(query: &Value) -> String {
    let query = query.as_str().unwrap_or_default();
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "requestId")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

async fn every_call_carries_its_own_request_id_and_an_apply_its_actions_id(db: Db) {
    let script = vec![
        Step::Calls(vec![("lookup", json!({"q": "a"})), ("lookup", json!({"q": "b"}))]),
        Step::Call("create_task", json!({"title": "Ship it"})),
        Step::Text("Done."),
    ];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;

    let action = pending(&rig.say("look up a and b, then make a task").await)["action_id"].as_str().unwrap().to_owned();
    let (status, _, _) = rig.act(&action, "apply", None).await;
    assert_eq!(status, 200);

    let mut ids = Vec::new();
    for kind in ["tools", "context"] {
        ids.extend(rig.host.calls_of(kind).iter().map(request_id_of_query));
    }
    let executes = rig.host.calls_of("execute");
    let lookups: Vec<&Value> = executes.iter().filter(|c| c["tool"] == "lookup").collect();
    assert_eq!(lookups.len(), 2);
    ids.extend(lookups.iter().map(|c| c["execution"]["requestId"].as_str().unwrap().to_owned()));
    ids.extend(rig.host.calls_of("preview").iter().map(|c| c["execution"]["requestId"].as_str().unwrap().to_owned()));
    assert!(ids.iter().all(|id| !id.is_empty()), "{ids:?}");
    let distinct: HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "one requestId per call: {ids:?}");
    assert!(!ids.contains(&action), "only the Apply carries the action's id");
    let applied: Vec<&Value> = executes.iter().filter(|c| c["tool"] == "create_task").collect();
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0]["execution"]["requestId"], action.as_str(), "an Apply's retries are recognisable");
}

async fn an_apply_runs_only_on_the_integration_it_was_previewed_on_and_while_the_tool_is_offered(db: Db) {
    let script = vec![
        Step::Call("create_task", json!({"title": "Ship it"})),
        Step::Text("I will prepare it again."),
        Step::Call("create_task", json!({"title": "Ship it"})),
    ];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;
    let events = rig.say("create a task").await;
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let first = pending(&events)["action_id"].as_str().unwrap().to_owned();

    // The host is connected again (a new secret, say) between the preview and the Apply.
    let again = json!({"base_url": rig.host.base_url(), "secret": HOST_SECRET});
    let (status, _) = rig.app.post_json("/v1/integrations/generic-rest/connect", &rig.api_key, &again).await;
    assert_eq!(status, 200);
    let (status, _, body) = rig.act(&first, "apply", None).await;

    assert_eq!((status, body["code"].as_str()), (409, Some("integration_changed")), "{body}");
    assert_eq!(body["action"]["status"], "failed");
    assert_eq!(rig.host.count("execute"), 0, "nothing ran");
    // The model hears why with the next message.
    rig.app.turn(&rig.token, Some(&conversation), "what happened?").await;
    let told = rig.model.last_tool_messages().join(" ");
    assert!(told.contains("integration_changed") && told.contains("connection changed"), "{told}");

    // The workspace stops allowing the tool between the preview and the Apply.
    let second = pending(&rig.say("create it again").await)["action_id"].as_str().unwrap().to_owned();
    let narrow = json!({"allowed_tools": ["lookup"]});
    assert_eq!(rig.app.patch_json("/v1/integrations/generic-rest", &rig.api_key, &narrow).await.0, 200);
    let (status, _, body) = rig.act(&second, "apply", None).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("tool_gone")), "{body}");
    assert_eq!(rig.host.count("execute"), 0);
    let (_, trail) = rig.app.get_json("/v1/audit?action=action.refused", &rig.api_key).await;
    let outcomes: Vec<&str> =
        trail["items"].as_array().unwrap().iter().map(|i| i["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["tool_gone", "integration_changed"]);
    // A second Apply of a refused action is the usual refusal.
    let (status, _, _) = rig.act(&second, "apply", None).await;
    assert_eq!(status, 409);
}

const STALE: &str = "This changed in the app since you saw it, so nothing was done.";

async fn a_stale_apply_runs_nothing_and_offers_a_fresh_preview_of_the_same_arguments(db: Db) {
    let host = HostSpec::new(task_tools())
        .preview_once(200, json!({"preview": "Create “Ship it” in Apollo, due Friday"}))
        .preview_once(200, json!({"preview": "Create “Ship it” in Apollo, due Monday (Friday is full)"}))
        .execute_once(409, json!({"error": "the slot was taken", "stale": true}));
    let script = vec![Step::Call("create_task", json!({"title": "Ship it"})), Step::Text("Created it.")];
    let rig = Rig::start(db, host, script, &[]).await;
    let events = rig.say("create a task").await;
    let first = pending(&events);
    let first_id = first["action_id"].as_str().unwrap().to_owned();

    let (status, applied, _) = rig.act(&first_id, "apply", None).await;
    assert_eq!(status, 200);
    // The host ran nothing; the user is told, and sees the fresh preview to apply.
    let tool = of(&applied, "tool");
    assert_eq!(tool.last().unwrap()["status"], "failed");
    let text: String = of(&applied, "text").iter().map(|t| t["delta"].as_str().unwrap()).collect();
    assert!(text.starts_with(STALE) && text.contains("apply it if it is still what you want"), "{text}");
    let fresh = pending(&applied);
    assert_eq!(fresh["replaces"], first_id.as_str());
    assert_ne!(fresh["action_id"], first_id.as_str());
    assert_eq!(fresh["preview"], "Create “Ship it” in Apollo, due Monday (Friday is full)");
    assert_eq!(fresh["arguments"], first["arguments"], "the same arguments");
    assert_eq!(fresh["status"], "pending");
    assert_eq!(of(&applied, "done")[0]["stop_reason"], "pending_action");
    assert_eq!(of(&applied, "message")[0]["text"].as_str().unwrap(), text, "the reply is saved as shown");
    let previews = rig.host.calls_of("preview");
    assert_eq!(previews.len(), 2);
    assert_eq!(previews[1]["arguments"], previews[0]["arguments"]);
    assert_ne!(previews[1]["callId"], previews[0]["callId"], "the fresh preview is a call of its own");
    assert_eq!(rig.host.count("execute"), 1, "no model step, no second execute");

    // The stale action cannot be applied again; it stays stale in the trail.
    let (status, _, body) = rig.act(&first_id, "apply", None).await;
    assert_eq!((status, body["code"].as_str(), body["action"]["status"].as_str()), (409, Some("stale"), Some("stale")));
    assert_eq!(rig.host.count("execute"), 1);
    let (_, trail) = rig.app.get_json("/v1/audit?action=action.executed", &rig.api_key).await;
    assert_eq!(trail["items"][0]["outcome"], "stale", "{trail}");
    // A reload shows the fresh action waiting, with what it replaces.
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let (_, shown) = rig.app.get_json(&format!("/v1/conversations/{conversation}"), &rig.token).await;
    assert_eq!(shown["pending_action"]["action_id"], fresh["action_id"]);
    assert_eq!(shown["pending_action"]["replaces"], first_id.as_str());

    // Applying the fresh one runs the same arguments once, under its own id.
    let fresh_id = fresh["action_id"].as_str().unwrap();
    let (status, done, _) = rig.act(fresh_id, "apply", None).await;
    assert_eq!(status, 200);
    assert_eq!(of(&done, "message")[0]["text"], "Created it.");
    let executes = rig.host.calls_of("execute");
    assert_eq!(executes.len(), 2);
    assert_eq!(executes[1]["arguments"], executes[0]["arguments"]);
    assert_eq!(executes[1]["execution"]["requestId"], fresh_id);
    assert_eq!(executes[1]["callId"], previews[1]["callId"], "executed as the call it was previewed as");
    // The model heard that the first did not run, then the fresh call's result.
    let told = rig.model.last_tool_messages().join(" ");
    assert!(told.contains("\"code\":\"stale\"") && told.contains("done"), "{told}");
}

async fn a_stale_apply_whose_fresh_preview_fails_is_explained_by_the_model(db: Db) {
    let host = HostSpec::new(task_tools())
        .preview_once(200, json!({"preview": "Create “Ship it”"}))
        .preview_once(400, json!({"error": "the project is archived"}))
        .execute_once(409, json!({"error": "archived", "stale": true}));
    let script =
        vec![Step::Call("create_task", json!({"title": "Ship it"})), Step::Text("The project can no longer take it.")];
    let rig = Rig::start(db, host, script, &[]).await;
    let first = pending(&rig.say("create a task").await)["action_id"].as_str().unwrap().to_owned();

    let (status, applied, _) = rig.act(&first, "apply", None).await;
    assert_eq!(status, 200);
    assert!(of(&applied, "pending_action").is_empty(), "nothing to apply");
    let message = of(&applied, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(message.starts_with(STALE) && message.ends_with("The project can no longer take it."), "{message}");
    assert!(!message.contains("apply it"), "{message}");
    assert_eq!(of(&applied, "done")[0]["stop_reason"], "completed");
    let told = rig.model.last_tool_messages().join(" ");
    assert!(told.contains("host_bad_request"), "the model hears the fresh preview failed: {told}");
    assert!(!told.contains("archived"), "never the host's own words: {told}");
    assert_eq!(rig.host.count("execute"), 1);
}

async fn a_conflict_without_stale_is_an_ordinary_failure(db: Db) {
    let host = HostSpec::new(task_tools()).execute_once(409, json!({"error": "duplicate", "stale": "yes"}));
    let script = vec![Step::Call("create_task", json!({"title": "Ship it"})), Step::Text("It failed.")];
    let rig = Rig::start(db, host, script, &[]).await;
    let first = pending(&rig.say("create a task").await)["action_id"].as_str().unwrap().to_owned();
    let (status, applied, _) = rig.act(&first, "apply", None).await;
    assert_eq!(status, 200);
    assert!(of(&applied, "pending_action").is_empty());
    assert_eq!(of(&applied, "message")[0]["text"], "It failed.");
    assert_eq!(rig.host.count("preview"), 1, "no fresh preview");
    let (status, _, body) = rig.act(&first, "apply", None).await;
    assert_eq!((status, body["action"]["status"].as_str()), (409, Some("failed")));
}
