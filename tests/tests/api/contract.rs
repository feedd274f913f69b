//! Contract exactness (remote-tools-contract.md): each call to a host
//! carries its own `requestId`, and an Apply its action's.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::{Db, HOST_SECRET, HostSpec, Rig, Step, of, pending, task_tools};
use crate::on_both_databases;

on_both_databases!(
    every_call_carries_its_own_request_id_and_an_apply_its_actions_id,
    an_apply_runs_only_on_the_integration_it_was_previewed_on_and_while_the_tool_is_offered,
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
