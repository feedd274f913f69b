//! Assistant tests (issue #46): suites run over `POST /v1/tests/runs`
//! against a scripted model and a fake host — every expectation kind
//! shown to hold and to fail, Apply recorded as "would apply" with the
//! host executing nothing (and executing against a test host when a case
//! says so), repeats and pass rates, a judge model, the stream of cases,
//! one run at a time, nothing counted against the visitors; and the
//! command line against a running server, its JUnit XML and JSON.

use std::time::Duration;

use serde_json::{Value, json};
use sqlx::Connection;

use crate::helpers::{Db, HostSpec, Rig, Step, of, parse_sse, pending, task_tools};
use crate::on_both_databases;

on_both_databases!(
    every_expectation_kind_holds_and_fails_saying_why,
    apply_is_recorded_not_made_unless_the_case_executes_and_nothing_counts_against_visitors,
    repeats_give_a_pass_rate_held_against_the_one_required,
    a_judge_model_grades_the_reply_against_the_rubric,
    runs_go_one_at_a_time_stream_their_cases_and_refuse_a_bad_suite,
    a_conversation_saved_as_a_test_replays_and_passes,
    files_and_another_model_reach_the_model,
    runs_are_read_while_another_writer_holds_the_database_and_a_lapsed_one_ends_interrupted,
);

/// Starts a run of `suite`; its id.
async fn start(rig: &Rig, suite: Value) -> String {
    let (status, run) = rig.app.post_json("/v1/tests/runs", &rig.api_key, &json!({ "suite": suite })).await;
    assert_eq!(status, 202, "{run}");
    assert_eq!(run["status"], "running");
    run["id"].as_str().unwrap().to_owned()
}

/// Waits for the run to end; the run with its report.
async fn ended(rig: &Rig, id: &str) -> Value {
    for _ in 0..600 {
        let (status, run) = rig.app.get_json(&format!("/v1/tests/runs/{id}"), &rig.api_key).await;
        assert_eq!(status, 200, "{run}");
        if run["status"] != "running" {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the run {id} never ended");
}

fn case<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["report"]["cases"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("{run}"))
}

fn failures(case: &Value) -> Vec<String> {
    case["failures"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_owned()).collect()
}

/// One conversation, twice: once with expectations that all hold, once
/// with each of them turned around (every one must fail).
async fn every_expectation_kind_holds_and_fails_saying_why(db: Db) {
    let asked = Step::Call("search_knowledge", json!({"query": "children sundays"}));
    let answer =
        Step::Text("Children under twelve dine free with us on Sundays, and the whole family is welcome [S1].");
    let task = Step::Call("create_task", json!({"title": "Ship it"}));
    let script = vec![asked.clone(), answer.clone(), task.clone(), asked, answer, task];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[("CA_KNOWLEDGE_POLL_MS", "100")]).await;
    let source = json!({"kind": "text", "title": "Family meals", "url": "https://shop.example/help/family",
                        "text": "Children under twelve dine free on Sundays."});
    let (status, added) = rig.app.post_json("/v1/knowledge/sources", &rig.api_key, &source).await;
    assert_eq!(status, 201, "{added}");
    let id = added["id"].as_str().unwrap();
    for _ in 0..200 {
        let (_, source) = rig.app.get_json(&format!("/v1/knowledge/sources/{id}"), &rig.api_key).await;
        if source["status"] == "ready" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let holding = json!({
        "tool_called": {"name": "search_knowledge", "arguments": {"query": "children sundays"}},
        "tool_not_called": "create_task",
        "no_pending_action": true,
        "reply_contains": "sundays",
        "reply_not_contains": "monday",
        "contains": "Children",
        "icontains": "CHILDREN",
        "not-contains": "children",
        "not-icontains": "mondays",
        "contains-any": ["nothing", "Sundays"],
        "contains-all": ["Children", "Sundays"],
        "icontains-any": ["SUNDAYS"],
        "icontains-all": ["children", "SUNDAYS"],
        "regex": "Sun\\w+",
        "not-regex": "Mon\\w+",
        "language": "en",
        "sources_include": "help/family",
        "says_it_does_not_know": false,
        "max_latency_ms": 60000,
        "max_tokens": 100000,
    });
    let failing = json!({
        "tool_called": {"name": "search_knowledge", "arguments": {"query": "adults"}},
        "tool_not_called": "search_knowledge",
        "pending_action": "create_task",
        "reply_contains": "mondays",
        "reply_not_contains": "SUNDAYS",
        "contains": "children",
        "icontains": "tuesday",
        "not-contains": "Children",
        "not-icontains": "CHILDREN",
        "contains-any": ["nothing", "none"],
        "contains-all": ["Children", "Mondays"],
        "icontains-any": ["MONDAYS"],
        "icontains-all": ["children", "MONDAYS"],
        "regex": "Mon\\w+",
        "not-regex": "Sun\\w+",
        "language": "es",
        "sources_include": "refunds",
        "says_it_does_not_know": true,
        "max_latency_ms": 0,
        "max_tokens": 1,
    });
    let then_holding = json!({"pending_action": {"tool": "create_task", "arguments": {"title": "Ship it"}},
                              "tool_called": "create_task"});
    let then_failing = json!({"no_pending_action": true,
                              "pending_action": {"tool": "create_task", "arguments": {"title": "Other"}}});
    let suite = json!({"name": "kinds", "cases": [
        {"name": "every kind holds", "steps": [
            {"user": "do kids eat free?", "expect": holding},
            {"user": "make a task", "expect": then_holding}]},
        {"name": "every kind fails", "steps": [
            {"user": "do kids eat free?", "expect": failing},
            {"user": "make a task", "expect": then_failing,
             "assert": [{"type": "latency", "threshold": 0}]}]},
    ]});
    let run = ended(&rig, &start(&rig, suite).await).await;
    let holds = case(&run, "every kind holds");
    assert_eq!(
        (run["status"].as_str(), run["passed"].as_i64(), run["failed"].as_i64()),
        (Some("failed"), Some(1), Some(1)),
        "{:#}",
        holds["failures"]
    );
    assert_eq!(
        (holds["passed"].as_bool(), holds["failures"].as_array().map(Vec::len)),
        (Some(true), Some(0)),
        "{holds}"
    );
    let fails = case(&run, "every kind fails");
    let said = failures(fails);
    assert_eq!(said.len(), 20 + 3, "each expectation failed once: {said:#?}");
    for expected in [
        "step 1: expected a call of search_knowledge with {\"query\":\"adults\"}; got search_knowledge({\"query\":\"children sundays\"})",
        "step 1: expected no call of search_knowledge",
        "step 1: expected a change of create_task waiting for Apply; got no change waiting (the turn ended completed)",
        "step 1: expected the reply to contain \"mondays\"; got \"Children under twelve dine free with us on Sundays, and the whole family is welcome [1].\"",
        "step 1: expected a reply in es; got eng",
        "step 1: expected a cited source with \"refunds\"; got https://shop.example/help/family",
        "step 1: expected the reply to say it does not know",
        "step 1: expected the reply within 0 ms",
        "step 1: expected at most 1 tokens",
        "step 1: expected the reply to match /Mon\\w+/",
        "step 1: expected the reply not to match /Sun\\w+/",
        "step 2: expected no change waiting for Apply; got create_task({\"title\":\"Ship it\"}) waiting",
        "step 2: expected a change of create_task with {\"title\":\"Other\"} waiting for Apply",
        "step 2: expected the reply within 0 ms",
    ] {
        assert!(said.iter().any(|s| s.starts_with(expected)), "no failure starts with {expected:?}: {said:#?}");
    }
    let transcript = fails["transcript"].as_array().unwrap();
    let kinds: Vec<&str> = transcript.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    for kind in ["user", "tool", "assistant", "failed", "pending_action"] {
        assert!(kinds.contains(&kind), "the transcript has {kind}: {kinds:?}");
    }
}

async fn apply_is_recorded_not_made_unless_the_case_executes_and_nothing_counts_against_visitors(db: Db) {
    let script = vec![
        // would apply
        Step::Call("create_task", json!({"title": "Ship it"})),
        Step::Text("Created the task."),
        // a delete, confirmed then applied (would apply)
        Step::Call("delete_project", json!({})),
        Step::Text("The project is deleted."),
        // declined
        Step::Call("create_task", json!({"title": "Later"})),
        Step::Text("All right, I left it."),
        // executed against the (test) host
        Step::Call("create_task", json!({"title": "Really"})),
        Step::Text("Created it for real."),
        // a search that finds nothing: no content gap
        Step::Call("search_knowledge", json!({"query": "parking"})),
        Step::Text("I don't know."),
    ];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[("CA_KNOWLEDGE_POLL_MS", "100")]).await;
    let source = json!({"kind": "text", "title": "Hours", "text": "We open at nine."});
    assert_eq!(rig.app.post_json("/v1/knowledge/sources", &rig.api_key, &source).await.0, 201);
    for _ in 0..200 {
        let (_, found) = rig.app.post_json("/v1/knowledge/search", &rig.api_key, &json!({"query": "open"})).await;
        if found["results"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let suite = json!({"name": "changes", "cases": [
        {"name": "would apply", "steps": [
            {"user": "create a task", "expect": {"pending_action": {"tool": "create_task", "arguments": {"title": "Ship it"}}}},
            {"apply": true, "expect": {"no_pending_action": true, "reply_contains": "created"}}]},
        {"name": "a delete needs two confirmations", "steps": [
            {"user": "delete the project", "expect": {"pending_action": "delete_project"}},
            {"confirm": true, "expect": {"pending_action": "delete_project"}},
            {"apply": true, "expect": {"reply_contains": "deleted"}}]},
        {"name": "declined", "steps": [
            {"user": "create a task for later", "expect": {"pending_action": "create_task"}},
            {"cancel": "not now", "expect": {"no_pending_action": true, "reply_contains": "left it"}}]},
        {"name": "executed on a test host", "execute": true, "steps": [
            {"user": "create a real task", "expect": {"pending_action": "create_task"}},
            {"apply": true, "expect": {"reply_contains": "for real"}}]},
        {"name": "no gap", "steps": [
            {"user": "where do I park?", "expect": {"says_it_does_not_know": true}}]},
    ]});
    let run = ended(&rig, &start(&rig, suite).await).await;
    assert_eq!(run["status"], "passed", "{run:#}");
    let executed: Vec<Value> = rig.host.calls_of("execute").into_iter().filter(|c| c["tool"] != "lookup").collect();
    assert_eq!(executed.len(), 1, "only the case that executes reached the host's execute: {executed:?}");
    assert_eq!(executed[0]["arguments"]["title"], "Really");
    let would = case(&run, "would apply")["transcript"].as_array().unwrap().clone();
    assert!(
        would.iter().any(|e| e["kind"] == "would_apply" && e["text"].as_str().unwrap().contains("Create the task")),
        "the frozen preview is recorded as would apply: {would:?}"
    );
    let really = case(&run, "executed on a test host")["transcript"].as_array().unwrap().clone();
    assert!(really.iter().any(|e| e["kind"] == "applied"), "{really:?}");
    // Nothing of the visitors': their usage, conversations and gaps.
    let (_, usage) = rig.app.get_json("/v1/workspace/usage", &rig.api_key).await;
    let totals = &usage["totals"];
    assert_eq!((totals["turns"].as_u64(), totals["input_tokens"].as_u64()), (Some(0), Some(0)), "{usage}");
    assert!(totals["test_turns"].as_u64().unwrap() >= 9 && totals["test_tokens"].as_u64().unwrap() > 0, "{usage}");
    let (_, gaps) = rig.app.get_json("/v1/knowledge/gaps", &rig.api_key).await;
    assert_eq!(gaps["gaps"], json!([]), "a test run records no content gap");
    let (_, listed) = rig.app.get_json("/v1/workspace/conversations", &rig.api_key).await;
    assert_eq!(listed["items"], json!([]), "{listed}");
    let (left,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM conversations WHERE workspace_id = $1")
        .bind(&rig.workspace)
        .fetch_one(&rig.app.state.pool)
        .await
        .unwrap();
    assert_eq!(left, 0, "a run's conversations are erased when it ends");
}

async fn repeats_give_a_pass_rate_held_against_the_one_required(db: Db) {
    let script = vec![Step::Text("yes"), Step::Text("no"), Step::Text("yes"), Step::Text("no")];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;
    let suite = json!({"name": "flaky", "cases": [
        {"name": "two of three", "repeat": 3, "pass_rate": 0.6, "steps": [{"user": "ok?", "expect": {"reply_contains": "yes"}}]},
        {"name": "every run", "repeat": 1, "steps": [{"user": "ok?", "expect": {"reply_contains": "yes"}}]},
    ]});
    let run = ended(&rig, &start(&rig, suite).await).await;
    let two = case(&run, "two of three");
    assert_eq!((two["passed"].as_bool(), two["runs"].as_u64()), (Some(true), Some(3)), "{two}");
    assert!((two["pass_rate"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9, "{two}");
    assert_eq!(failures(two), ["run 2, step 1: expected the reply to contain \"yes\"; got \"no\""]);
    let every = case(&run, "every run");
    assert_eq!((every["passed"].as_bool(), every["pass_rate"].as_f64()), (Some(false), Some(0.0)), "{every}");
    assert_eq!(run["status"], "failed");
}

async fn a_judge_model_grades_the_reply_against_the_rubric(db: Db) {
    let script = vec![
        Step::Text("OK"),
        Step::Text("Hello there, friend! How can I help?"),
        Step::Text("Sure: ```json\n{\"pass\": true, \"reason\": \"warm and helpful\"}\n```"),
        Step::Text("Go away."),
        Step::Text("{\"pass\": false, \"reason\": \"curt and unhelpful\"}"),
        Step::Text("Fine."),
        Step::Text("I cannot grade that."),
    ];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[("CA_ALLOW_PRIVATE_MODEL_HOSTS", "1")]).await;
    let rubric = "The reply greets the visitor warmly";
    let suite = json!({"name": "tone", "judge_model": "judge-1", "cases": [
        {"name": "warm", "steps": [{"user": "hi", "expect": {"judge": rubric}}]},
        {"name": "curt", "steps": [{"user": "hi", "assert": [{"type": "llm-rubric", "value": rubric}]}]},
        {"name": "no grade", "steps": [{"user": "hi", "expect": {"judge": rubric}}]},
    ]});
    // Another model is named with the workspace's own key only, never the operator's.
    let (status, refused) = rig.app.post_json("/v1/tests/runs", &rig.api_key, &json!({ "suite": suite })).await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("the workspace's own model"), "{refused}");
    let own = json!({"base_url": rig.model.base_url(), "api_key": "sk-own", "model": "own-model"});
    assert_eq!(
        rig.app.put_json("/v1/workspace/model", &rig.api_key, &own).await.0,
        200,
        "checked with the script's OK"
    );
    let run = ended(&rig, &start(&rig, suite).await).await;
    assert_eq!(case(&run, "warm")["passed"], true, "{run:#}");
    assert_eq!(
        failures(case(&run, "curt")),
        [format!("step 1: expected the reply to meet \"{rubric}\"; the judge said: curt and unhelpful")]
    );
    assert!(failures(case(&run, "no grade"))[0].contains("the judge said \"I cannot grade that.\""));
    let requests = rig.model.requests.lock().unwrap().clone();
    assert_eq!(requests[1]["model"], "own-model", "the turn asks the workspace's model");
    let judged = &requests[2];
    assert_eq!(judged["model"], "judge-1", "the suite's judge model, at the workspace's endpoint");
    let asked = judged["messages"].to_string();
    assert!(asked.contains(rubric) && asked.contains("Hello there, friend!"), "{asked}");
    assert!(judged["tools"].as_array().is_none_or(Vec::is_empty), "the judge is offered no tool");
}

async fn runs_go_one_at_a_time_stream_their_cases_and_refuse_a_bad_suite(db: Db) {
    let script = vec![Step::Call("lookup", json!({"q": "apollo"})), Step::Text("Apollo is on track.")];
    let limit = [("CA_TEST_RUNS_PER_WORKSPACE_PER_DAY", "2")];
    let rig = Rig::start(db, HostSpec::new(task_tools()).delay(1500), script, &limit).await;
    // A suite as YAML text.
    let yaml = "name: slow\ncases:\n  - name: looks up\n    steps:\n      - user: how is apollo?\n        expect:\n          \
                tool_called: {name: lookup, arguments: {q: apollo}}\n          icontains: on track\n";
    // Four at once: one starts, the others are told a run goes on.
    let body = json!({"suite": yaml});
    let posts = (0..4).map(|_| rig.app.post_json("/v1/tests/runs", &rig.api_key, &body));
    let answers = futures::future::join_all(posts).await;
    let started: Vec<&Value> = answers.iter().filter(|(s, _)| *s == 202).map(|(_, b)| b).collect();
    assert_eq!(started.len(), 1, "{answers:?}");
    assert!(
        answers.iter().filter(|(s, _)| *s != 202).all(|(s, b)| *s == 409 && b["code"] == "test_run_in_progress"),
        "{answers:?}"
    );
    let id = started[0]["id"].as_str().unwrap().to_owned();
    let id = id.as_str();
    let events = rig.app.get(&format!("/v1/tests/runs/{id}/events"), &rig.api_key).await;
    assert_eq!(events.status(), 200);
    let events = parse_sse(&events.text().await.unwrap());
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["case", "done"], "{events:?}");
    assert_eq!((events[0].1["name"].as_str(), events[0].1["passed"].as_bool()), (Some("looks up"), Some(true)));
    assert_eq!(events[1].1["status"], "passed");
    let (_, listed) = rig.app.get_json("/v1/tests/runs", &rig.api_key).await;
    assert_eq!(listed["runs"][0]["id"], id);
    assert_eq!((listed["runs"][0]["passed"].as_i64(), listed["runs"][0].get("report")), (Some(1), None));
    let junit = rig.app.get(&format!("/v1/tests/runs/{id}/junit"), &rig.api_key).await;
    assert_eq!(junit.headers()["content-type"], "application/xml; charset=utf-8");
    let xml = junit.text().await.unwrap();
    assert!(
        xml.contains("<testsuite name=\"slow\" tests=\"1\" failures=\"0\"") && xml.contains("name=\"looks up\""),
        "{xml}"
    );

    let bad = json!({"suite": {"name": "s", "cases": [{"name": "c", "steps": [{"user": "hi", "expect": {"reply_contain": "x"}}]}]}});
    let (status, refused) = rig.app.post_json("/v1/tests/runs", &rig.api_key, &bad).await;
    assert_eq!(status, 400);
    assert!(refused["error"].as_str().unwrap().contains("cases[0] \"c\" step 1 expect.reply_contain"), "{refused}");
    let by_path =
        json!({"suite": {"name": "s", "cases": [{"name": "c", "steps": [{"user": "hi", "files": ["a.png"]}]}]}});
    let (status, refused) = rig.app.post_json("/v1/tests/runs", &rig.api_key, &by_path).await;
    assert_eq!(status, 400);
    assert!(refused["error"].as_str().unwrap().contains("base64"), "{refused}");
    assert_eq!(rig.app.get_json("/v1/tests/runs/run_nope", &rig.api_key).await.0, 404);
    // Two runs a day here: the second starts, the third waits for tomorrow.
    ended(&rig, &start(&rig, json!(yaml)).await).await;
    let third = rig.app.post("/v1/tests/runs", &rig.api_key, &json!({"suite": yaml})).await;
    assert_eq!(third.status(), 429);
    let retry: u64 = third.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=86_400).contains(&retry), "until the day ends: {retry}");
    assert_eq!(rig.app.get_json(&format!("/v1/tests/runs/{id}"), "wrong-key").await.0, 401);
}

/// `context-assistant test SUITE --url …`: the built program against a
/// running server, as a host's CI runs it — each case printed, the exit
/// status, the JUnit XML and the JSON; and a usage mistake.
#[tokio::test]
async fn the_command_line_runs_a_suite_against_a_server_and_writes_its_reports() {
    let program = crate::helpers::server_program().expect("build the server first (./dev test does)");
    let script = vec![Step::Text("We open at nine."), Step::Text("We open at nine.")];
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), script, &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("hours.yaml");
    std::fs::write(
        &suite,
        "name: hours\ncases:\n  - name: opening time\n    steps:\n      - user: when do you open?\n        expect:\n          \
         reply_contains: nine\n  - name: a wrong expectation\n    steps:\n      - user: when do you open?\n        \
         expect:\n          reply_contains: ten\n",
    )
    .unwrap();
    let (junit, json_out) = (dir.path().join("out.xml"), dir.path().join("out.json"));
    let output = tokio::process::Command::new(&program)
        .arg("test")
        .arg(&suite)
        .args(["--url", &rig.app.url(""), "--junit"])
        .arg(&junit)
        .arg("--json")
        .arg(&json_out)
        .env("CA_API_KEY", &rig.api_key)
        .output()
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "a failed case fails the run: {out}");
    assert!(out.contains("PASS  opening time"), "{out}");
    assert!(out.contains("FAIL  a wrong expectation"), "{out}");
    assert!(out.contains("step 1: expected the reply to contain \"ten\"; got \"We open at nine.\""), "{out}");
    assert!(out.contains("hours: 1 passed, 1 failed"), "{out}");
    let report: Value = serde_json::from_slice(&std::fs::read(&json_out).unwrap()).unwrap();
    assert_eq!((report["passed"].as_u64(), report["failed"].as_u64()), (Some(1), Some(1)), "{report}");
    assert_eq!(report["cases"][1]["transcript"][0], json!({"step": 1, "kind": "user", "text": "when do you open?"}));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testsuite name=\"hours\" tests=\"2\" failures=\"1\""), "{xml}");
    assert!(xml.contains("<failure message=\"step 1: expected the reply to contain &quot;ten&quot;"), "{xml}");

    let missing = tokio::process::Command::new(&program).args(["test", "nowhere.yaml"]).output().await.unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--workspace ID or --url URL"));
}

/// **Save as test**: a visitor's conversation (a lookup, then a change
/// applied) becomes a case — its messages, the calls with their arguments,
/// the change and its Apply — that runs and passes as it stands.
async fn a_conversation_saved_as_a_test_replays_and_passes(db: Db) {
    let once = [
        Step::Call("lookup", json!({"q": "apollo"})),
        Step::Text("Apollo is on track."),
        Step::Call("create_task", json!({"title": "Ship it"})),
        Step::Text("Created the task."),
    ];
    let script = once.iter().chain(once.iter()).cloned().collect();
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;
    let events = rig.say("how is apollo?").await;
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let events = rig.app.turn(&rig.token, Some(&conversation), "create the task").await;
    let action = pending(&events)["action_id"].as_str().unwrap().to_owned();
    let (status, _, _) = rig.act(&action, "apply", None).await;
    assert_eq!(status, 200);

    let (status, saved) =
        rig.app.get_json(&format!("/v1/workspace/conversations/{conversation}/suite"), &rig.api_key).await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(
        saved["suite"]["cases"][0]["steps"],
        json!([
            {"user": "how is apollo?", "expect": {"tool_called": {"name": "lookup", "arguments": {"q": "apollo"}}}},
            {"user": "create the task",
             "expect": {"pending_action": {"tool": "create_task", "arguments": {"title": "Ship it"}}}},
            {"apply": true},
        ])
    );
    let yaml = saved["yaml"].as_str().unwrap();
    assert!(yaml.starts_with("# Saved from a conversation"), "{yaml}");
    let run = ended(&rig, &start(&rig, json!(yaml)).await).await;
    assert_eq!(run["status"], "passed", "{run:#}");
    assert_eq!(rig.app.get_json("/v1/workspace/conversations/conv_nope/suite", &rig.api_key).await.0, 404);
}

/// A step's file (as the API takes it) reaches the model with its message,
/// and a run's `model` asks that model at the workspace's own endpoint.
async fn files_and_another_model_reach_the_model(db: Db) {
    use base64::Engine as _;
    let script = vec![Step::Text("OK"), Step::Text("Read it.")];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[("CA_ALLOW_PRIVATE_MODEL_HOSTS", "1")]).await;
    let own = json!({"base_url": rig.model.base_url(), "api_key": "sk-own", "model": "model-a"});
    assert_eq!(rig.app.put_json("/v1/workspace/model", &rig.api_key, &own).await.0, 200);
    let note = base64::engine::general_purpose::STANDARD.encode("The secret word is tangerine.");
    let suite = json!({"name": "files", "cases": [{"name": "reads a note", "steps": [
        {"user": "read this note", "files": [{"name": "note.txt", "content_type": "text/plain", "base64": note}],
         "expect": {"reply_contains": "read it"}}]}]});
    let (status, run) =
        rig.app.post_json("/v1/tests/runs", &rig.api_key, &json!({"suite": suite, "model": "model-b"})).await;
    assert_eq!(status, 202, "{run}");
    let run = ended(&rig, run["id"].as_str().unwrap()).await;
    assert_eq!((run["status"].as_str(), run["model"].as_str()), (Some("passed"), Some("model-b")), "{run:#}");
    let requests = rig.model.requests.lock().unwrap().clone();
    let asked = requests.last().unwrap();
    assert_eq!(asked["model"], "model-b", "the run's model, at the workspace's endpoint");
    assert!(asked["messages"].to_string().contains("tangerine"), "the file's text went with the message");
    let (left,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM attachments WHERE workspace_id = $1")
        .bind(&rig.workspace)
        .fetch_one(&rig.app.state.pool)
        .await
        .unwrap();
    assert_eq!(left, 0, "a run's files are erased with its conversation");
}

/// Runs are listed and read while another writer holds the database (the
/// console polls them while runs write; SQLite has one writer): a listing
/// writes only when a run's server stopped, and then ends that run as
/// interrupted.
async fn runs_are_read_while_another_writer_holds_the_database_and_a_lapsed_one_ends_interrupted(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("We open at nine.")], &[]).await;
    let yaml = "name: hours\ncases:\n  - name: opening\n    steps:\n      - user: when do you open?\n        expect:\n          \
                icontains: nine\n";
    let id = start(&rig, json!(yaml)).await;
    assert_eq!(ended(&rig, &id).await["status"], "passed");

    let mut other = sqlx::AnyConnection::connect(&rig.app.database_url).await.unwrap();
    if rig.app.state.pool.is_postgres() {
        sqlx::query("BEGIN").execute(&mut other).await.unwrap();
        sqlx::query("LOCK TABLE test_runs IN EXCLUSIVE MODE").execute(&mut other).await.unwrap();
    } else {
        sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.unwrap();
    }
    for path in ["/v1/tests/runs".to_owned(), format!("/v1/tests/runs/{id}")] {
        // Bounded only so that a listing that waits fails here rather than hangs.
        let answered = tokio::time::timeout(Duration::from_secs(30), rig.app.get_json(&path, &rig.api_key)).await;
        let (status, body) = answered.unwrap_or_else(|_| panic!("{path} waited for the other writer"));
        assert_eq!(status, 200, "{path}: {body}");
    }
    sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();

    // Its server stopped while it ran: the lease lapsed.
    sqlx::query("UPDATE test_runs SET status = 'running', finished_at = NULL, lease_until = 1 WHERE id = $1")
        .bind(&id)
        .execute(&mut other)
        .await
        .unwrap();
    let (_, listed) = rig.app.get_json("/v1/tests/runs", &rig.api_key).await;
    assert_eq!(listed["runs"][0]["id"], id.as_str());
    assert_eq!(listed["runs"][0]["status"], "error", "{listed}");
    assert!(listed["runs"][0]["error"].as_str().unwrap().starts_with("interrupted"), "{listed}");
}
