//! Contract exactness (remote-tools-contract.md): each call to a host
//! carries its own `requestId`, and an Apply its action's.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::{Db, HostSpec, Rig, Step, pending, task_tools};
use crate::on_both_databases;

on_both_databases!(every_call_carries_its_own_request_id_and_an_apply_its_actions_id);

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
