//! Limits that hold across replicas: turns per user, per client address
//! and per workspace, one running turn per conversation, daily token
//! budgets, and the process's own cap on running turns.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use crate::helpers::{Db, HostSpec, Rig, Step, of, parse_sse, restart, start_of_window, task_tools, token};
use crate::on_both_databases;

on_both_databases!(
    a_users_turn_limit_holds_across_two_replicas,
    one_turn_runs_per_conversation_on_any_replica,
    every_steps_tokens_count_against_the_budgets_with_the_reply_or_on_their_own,
    a_step_that_spends_the_budget_is_the_turns_last,
    a_workspaces_daily_tokens_are_checked_before_every_model_step,
    a_users_daily_tokens_leave_other_users_alone,
);

/// POSTs a turn to `base`: the status, the `Retry-After`, and the body.
async fn post_turn(base: &str, token: &str, conversation: Option<&str>, message: &str) -> (u16, Option<u64>, String) {
    let response = crate::helpers::http()
        .post(format!("{base}/v1/chat/turns"))
        .bearer_auth(token)
        .json(&json!({"message": message, "conversation_id": conversation}))
        .send()
        .await
        .unwrap();
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
    (response.status().as_u16(), retry, response.text().await.unwrap())
}

async fn a_users_turn_limit_holds_across_two_replicas(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let model = rig.model.base_url();
    let limited = [("CA_TURNS_PER_USER_PER_MINUTE", "3".to_owned()), ("OPENAI_BASE_URL", model)];
    let (one, two) = (restart(&rig.app, &limited).await, restart(&rig.app, &limited).await);
    let (one, two) = (format!("http://{one}"), format!("http://{two}"));

    start_of_window(&rig.app.clock, 60_000);
    for base in [&one, &two, &one] {
        assert_eq!(post_turn(base, &rig.token, None, "hello").await.0, 200);
    }
    let (status, retry, body) = post_turn(&two, &rig.token, None, "hello").await;
    assert_eq!(status, 429, "the fourth turn in a minute, on the other replica: {body}");
    assert!(retry.is_some_and(|s| (1..=60).contains(&s)), "{retry:?}");
    let refused: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(refused["code"], "rate_limited");
    let told = refused["error"].as_str().unwrap();
    assert!(told.contains(&format!("Try again in {} s", retry.unwrap())), "the widget shows this: {told}");
    let other = token(&rig.workspace, &rig.secret, "someone_else");
    assert_eq!(post_turn(&one, &other, None, "hello").await.0, 200, "another user is not limited");

    // The minute passes (the replicas share the test's clock).
    rig.app.clock.advance(Duration::from_secs(60));
    assert_eq!(post_turn(&two, &rig.token, None, "hello").await.0, 200, "a new minute");
}

#[tokio::test]
async fn the_client_address_and_the_workspace_have_their_own_minutes() {
    let rig = Rig::start(
        Db::Sqlite,
        HostSpec::new(task_tools()),
        vec![Step::Text("hi")],
        &[("CA_TURNS_PER_IP_PER_MINUTE", "2")],
    )
    .await;
    let base = rig.app.url("");
    start_of_window(&rig.app.clock, 60_000);
    for user in ["a", "b"] {
        assert_eq!(post_turn(&base, &token(&rig.workspace, &rig.secret, user), None, "hi").await.0, 200);
    }
    let (status, ..) = post_turn(&base, &token(&rig.workspace, &rig.secret, "c"), None, "hi").await;
    assert_eq!(status, 429, "a third user from the same address");

    let rig = Rig::start(
        Db::Sqlite,
        HostSpec::new(task_tools()),
        vec![Step::Text("hi")],
        &[("CA_TURNS_PER_WORKSPACE_PER_MINUTE", "1")],
    )
    .await;
    let base = rig.app.url("");
    start_of_window(&rig.app.clock, 60_000);
    assert_eq!(post_turn(&base, &token(&rig.workspace, &rig.secret, "a"), None, "hi").await.0, 200);
    assert_eq!(post_turn(&base, &token(&rig.workspace, &rig.secret, "b"), None, "hi").await.0, 429);
}

async fn one_turn_runs_per_conversation_on_any_replica(db: Db) {
    let script = vec![Step::Text("first"), Step::Call("lookup", json!({})), Step::Text("done"), Step::Text("third")];
    let rig = Rig::start(db, HostSpec::new(task_tools()).delay(1500), script, &[]).await;
    let first = rig.say("start").await;
    let conversation = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let base = rig.app.url("");
    let other = format!("http://{}", restart(&rig.app, &[("OPENAI_BASE_URL", rig.model.base_url())]).await);

    let slow = {
        let (base, token, conversation) = (base.clone(), rig.token.clone(), conversation.clone());
        tokio::spawn(async move { post_turn(&base, &token, Some(&conversation), "look it up").await })
    };
    // Wait for exactly what is asserted: the slow turn is at its host call.
    while rig.host.count("execute") == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for base in [&base, &other] {
        let (status, _, body) = post_turn(base, &rig.token, Some(&conversation), "and now?").await;
        assert_eq!(status, 409, "{body}");
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["code"], "turn_in_progress");
    }
    let said = || async {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM messages WHERE conversation_id = $1 AND content = $2")
            .bind(&conversation)
            .bind("and now?")
            .fetch_one(&rig.app.state.pool)
            .await
            .unwrap();
        n
    };
    assert_eq!(said().await, 0, "a turn refused its conversation writes nothing in it");
    let (status, _, body) = slow.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(of(&parse_sse(&body), "done")[0]["stop_reason"], "completed");
    let (status, _, body) = post_turn(&other, &rig.token, Some(&conversation), "and now?").await;
    assert_eq!((status, of(&parse_sse(&body), "message")[0]["text"].as_str()), (200, Some("third")));
    assert_eq!(said().await, 1);
}

#[tokio::test]
async fn a_turn_left_running_by_a_dead_process_does_not_hold_its_conversation() {
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let first = rig.say("start").await;
    let conversation = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let long_ago = server::ids::now_ms() - 3_600_000;
    sqlx::query("INSERT INTO turns (id, conversation_id, started_at) VALUES ('turn_dead', $1, $2)")
        .bind(&conversation)
        .bind(long_ago)
        .execute(&rig.app.state.pool)
        .await
        .unwrap();
    let (status, ..) = post_turn(&rig.app.url(""), &rig.token, Some(&conversation), "again").await;
    assert_eq!(status, 200);
    let (reason,): (String,) = sqlx::query_as("SELECT stop_reason FROM turns WHERE id = 'turn_dead'")
        .fetch_one(&rig.app.state.pool)
        .await
        .unwrap();
    assert_eq!(reason, "interrupted");
}

/// The first step's check is read with the turn's admission (issue #47),
/// the later ones from the totals each step's spending returned.
async fn a_workspaces_daily_tokens_are_checked_before_every_model_step(db: Db) {
    // Each model step reports 50 tokens of usage.
    let rig =
        Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[("CA_WORKSPACE_DAILY_TOKENS", "60")])
            .await;
    start_of_window(&rig.app.clock, 86_400_000);
    for _ in 0..2 {
        assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "completed");
    }
    let events = rig.say("hello").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "budget_exhausted");
    assert!(of(&events, "message")[0]["text"].as_str().unwrap().contains("allowance for today"));
    assert_eq!(rig.model.requests.lock().unwrap().len(), 2, "the model was not called a third time");

    // Tomorrow (UTC) the budget is whole again.
    rig.app.clock.advance(Duration::from_secs(86_400));
    assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "completed");
}

async fn a_users_daily_tokens_leave_other_users_alone(db: Db) {
    let budgets = [("CA_USER_DAILY_TOKENS", "10"), ("CA_TURNS_PER_USER_PER_MINUTE", "3")];
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &budgets).await;
    start_of_window(&rig.app.clock, 86_400_000);
    assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "completed");
    assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "budget_exhausted");
    // The budget and the minute's counts are read in one call: a turn the
    // budget stops still counts in its user's minute.
    assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "budget_exhausted");
    let (status, retry, body) = post_turn(&rig.app.url(""), &rig.token, None, "hello").await;
    assert_eq!((status, retry.is_some()), (429, true), "the user's fourth turn in the minute: {body}");
    let other = token(&rig.workspace, &rig.secret, "another");
    assert_eq!(of(&rig.app.turn(&other, None, "hello").await, "done")[0]["stop_reason"], "completed");
    assert_eq!(rig.model.requests.lock().unwrap().len(), 2, "the model was called for the completed turns only");
}

/// A rig whose process runs at most `cap` turns at once, each held 1.5 s
/// by its `lookup` call.
async fn capped_rig(cap: &str) -> Rig {
    let script = vec![Step::Call("lookup", json!({})), Step::Text("done")];
    Rig::start(Db::Sqlite, HostSpec::new(task_tools()).delay(1500), script, &[("CA_MAX_CONCURRENT_TURNS", cap)]).await
}

#[tokio::test]
async fn beyond_the_processes_cap_new_turns_are_shed_with_retry_after() {
    let rig = capped_rig("1").await;
    let slow = {
        let (base, token) = (rig.app.url(""), rig.token.clone());
        tokio::spawn(async move { post_turn(&base, &token, None, "look it up").await })
    };
    while rig.host.count("execute") == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let other = token(&rig.workspace, &rig.secret, "another");
    let (status, retry, body) = post_turn(&rig.app.url(""), &other, None, "hello").await;
    assert_eq!((status, retry), (503, Some(5)), "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["code"], "overloaded");
    assert_eq!(slow.await.unwrap().0, 200);
}

/// A burst arriving at once cannot all slip past the cap while the first
/// turns are still being written: exactly the cap's turns run, the rest
/// are shed, and every place comes back when its turn ends.
#[tokio::test]
async fn a_burst_of_turns_at_once_runs_exactly_the_cap_and_sheds_the_rest() {
    let rig = capped_rig("3").await;
    let burst = (0..12).map(|i| {
        let (base, token) = (rig.app.url(""), token(&rig.workspace, &rig.secret, &format!("burst_{i}")));
        tokio::spawn(async move { post_turn(&base, &token, None, "look it up").await })
    });
    let answers: Vec<_> = futures::future::join_all(burst).await.into_iter().map(Result::unwrap).collect();

    let ran = answers.iter().filter(|(status, ..)| *status == 200).count();
    let shed = answers.iter().filter(|(status, retry, _)| (*status, *retry) == (503, Some(5))).count();
    assert_eq!((ran, shed), (3, 9), "{:?}", answers.iter().map(|a| a.0).collect::<Vec<_>>());
    // Every place comes back once its turn's task has ended (a moment
    // after its stream did): three more run, one after the other.
    for i in 0..3 {
        let again = token(&rig.workspace, &rig.secret, &format!("again_{i}"));
        let mut tries = 0;
        loop {
            let (status, _, body) = post_turn(&rig.app.url(""), &again, None, "look it up").await;
            if status == 503 && tries < 100 {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            assert_eq!(status, 200, "{body}");
            break;
        }
    }
}

#[tokio::test]
async fn beyond_the_processes_cap_on_open_streams_a_resume_is_shed_with_retry_after() {
    let script = vec![Step::Call("lookup", json!({})), Step::Text("done")];
    let rig =
        Rig::start(Db::Sqlite, HostSpec::new(task_tools()).delay(1500), script, &[("CA_MAX_OPEN_STREAMS", "1")]).await;
    // The running turn's own stream is the one open stream.
    let (mut body, seen) = crate::helpers::turn_until(&rig.app, &rig.token, "look it up", "event: turn").await;
    let turn_id = of(&parse_sse(&seen), "turn")[0]["turn_id"].as_str().unwrap().to_owned();
    let resume =
        || rig.app.client.get(rig.app.url(&format!("/v1/turns/{turn_id}/events"))).bearer_auth(&rig.token).send();

    let refused = resume().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
    assert_eq!(refused.json::<Value>().await.unwrap()["code"], "overloaded");

    // Once the turn's stream has ended and closed, a resume gets its slot.
    while body.next().await.is_some() {}
    drop(body);
    let resumed = resume().await.unwrap();
    assert_eq!(resumed.status(), 200);
    assert!(resumed.text().await.unwrap().contains("event: done"));
}

/// Every model step's tokens count against the day's budgets: the last
/// one's are written with the reply and the turn's end, and on their own
/// when the reply is refused.
async fn every_steps_tokens_count_against_the_budgets_with_the_reply_or_on_their_own(db: Db) {
    let lookup = || Step::Call("lookup", json!({}));
    let script = vec![lookup(), Step::Text("kept"), lookup(), Step::Text("refused")];
    let budgets = [("CA_USER_DAILY_TOKENS", "100000"), ("CA_WORKSPACE_DAILY_TOKENS", "100000")];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &budgets).await;
    start_of_window(&rig.app.clock, 86_400_000);
    let pool = &rig.app.state.pool;
    let used = || async {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT key, tokens FROM token_usage ORDER BY key").fetch_all(pool).await.unwrap();
        rows
    };
    let expect = |tokens: i64| {
        vec![
            (format!("tokens:user:{}:user_42", rig.workspace), tokens),
            (format!("tokens:ws:{}", rig.workspace), tokens),
        ]
    };

    // Two steps of 50 tokens each.
    let events = rig.say("look it up").await;
    assert_eq!(of(&events, "message")[0]["text"], "kept");
    assert_eq!(used().await, expect(100));

    let refuse = if pool.is_postgres() {
        vec![
            "CREATE FUNCTION refuse_reply() RETURNS trigger AS $$ BEGIN
               IF NEW.content = 'refused' THEN RAISE EXCEPTION 'refused by the test'; END IF;
               RETURN NEW; END $$ LANGUAGE plpgsql",
            "CREATE TRIGGER refuse_reply BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_reply()",
        ]
    } else {
        vec![
            "CREATE TRIGGER refuse_reply BEFORE INSERT ON messages WHEN NEW.content = 'refused'
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
        ]
    };
    for statement in refuse {
        sqlx::query(statement).execute(pool).await.unwrap();
    }
    let events = rig.say("look again").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
    assert!(of(&events, "message").is_empty(), "the reply was not saved");
    assert_eq!(used().await, expect(200), "the refused reply's step counted all the same");
}

/// A step that called tools and spent the day's budget is the turn's
/// last: its tool runs, the model is not asked again.
async fn a_step_that_spends_the_budget_is_the_turns_last(db: Db) {
    let script = vec![Step::Call("lookup", json!({})), Step::Text("never said")];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[("CA_USER_DAILY_TOKENS", "40")]).await;
    start_of_window(&rig.app.clock, 86_400_000);
    // The first step's 50 tokens are more than the day's 40.
    let events = rig.say("look it up").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "budget_exhausted");
    assert_eq!(rig.model.requests.lock().unwrap().len(), 1, "the model was not asked after the budget was spent");
    assert_eq!(rig.host.count("execute"), 1, "the tool the spending step called ran");
    let (used,): (i64,) = sqlx::query_as("SELECT tokens FROM token_usage WHERE key LIKE 'tokens:user:%'")
        .fetch_one(&rig.app.state.pool)
        .await
        .unwrap();
    assert_eq!(used, 50);
}
