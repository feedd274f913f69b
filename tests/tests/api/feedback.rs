//! Thumbs up or down on a reply, with a comment: given, changed and taken
//! back by its user, shown with the conversation, listed for the host,
//! erased with the user (issue #19).

use serde_json::json;

use crate::helpers::{Db, HostSpec, Rig, Step, lookup_tool, of, token};
use crate::on_both_databases;

on_both_databases!(a_user_rates_a_reply_and_the_host_reads_it);

async fn a_user_rates_a_reply_and_the_host_reads_it(db: Db) {
    let script = vec![Step::Call("lookup", json!({})), Step::Text("Found it")];
    let rig = Rig::start(db, HostSpec::new(lookup_tool()), script, &[]).await;
    let events = rig.say("find my order").await;
    let streamed = of(&events, "message")[0]["message_id"].as_str().unwrap().to_owned();
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let (_, view) = rig.app.get_json(&format!("/v1/conversations/{conversation}"), &rig.token).await;
    let (asked, answer) = (&view["messages"][0], &view["messages"][1]);
    assert_eq!(answer["role"], "assistant");
    assert!(answer.get("feedback").is_none(), "none given yet");
    // The reply spans a tool step and its text: either id names it.
    let viewed = answer["id"].as_str().unwrap().to_owned();
    assert_ne!(viewed, streamed, "the view names the reply by its first message");

    let body = json!({"rating": "down", "comment": "  Wrong store  "});
    let (status, given) = rig.app.put_json(&format!("/v1/messages/{viewed}/feedback"), &rig.token, &body).await;
    assert_eq!(status, 200, "{given}");
    assert_eq!(
        (given["message_id"].as_str(), &given["rating"], &given["comment"]),
        (Some(streamed.as_str()), &json!("down"), &json!("Wrong store"))
    );
    let (_, view) = rig.app.get_json(&format!("/v1/conversations/{conversation}"), &rig.token).await;
    assert_eq!(view["messages"][1]["feedback"], json!({"rating": "down", "comment": "Wrong store"}));
    assert!(view["messages"][0].get("feedback").is_none());

    // Changed, by the other id: still one per reply.
    let (status, _) =
        rig.app.put_json(&format!("/v1/messages/{streamed}/feedback"), &rig.token, &json!({"rating": "up"})).await;
    assert_eq!(status, 200);
    let (status, page) = rig.app.get_json("/v1/workspace/feedback", &rig.api_key).await;
    assert_eq!(status, 200, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{page}");
    assert_eq!(items[0]["rating"], "up");
    assert_eq!(items[0]["comment"], json!(null), "the new feedback has no comment");
    assert_eq!(items[0]["reply"], "Found it");
    assert_eq!(
        (items[0]["user"].as_str(), items[0]["conversation_id"].as_str()),
        (Some("user_42"), Some(conversation.as_str()))
    );
    let (_, downs) = rig.app.get_json("/v1/workspace/feedback?rating=down", &rig.api_key).await;
    assert_eq!(downs["items"], json!([]));

    // Only the user's own replies, only replies, and only in shape.
    let stranger = token(&rig.workspace, &rig.secret, "someone_else");
    let up = json!({"rating": "up"});
    let (status, _) = rig.app.put_json(&format!("/v1/messages/{streamed}/feedback"), &stranger, &up).await;
    assert_eq!(status, 404);
    let user_message = asked["id"].as_str().unwrap();
    let (status, _) = rig.app.put_json(&format!("/v1/messages/{user_message}/feedback"), &rig.token, &up).await;
    assert_eq!(status, 404, "a user's own message takes no feedback");
    for bad in [
        json!({"rating": "sideways"}),
        json!({"comment": "no rating"}),
        json!({"rating": "up", "comment": "x".repeat(1001)}),
    ] {
        let (status, refused) = rig.app.put_json(&format!("/v1/messages/{streamed}/feedback"), &rig.token, &bad).await;
        assert_eq!(status, 400, "{bad}: {refused}");
    }
    let (status, page) = rig.app.get_json("/v1/workspace/feedback?limit=0", &rig.api_key).await;
    assert_eq!(status, 400, "{page}");

    // Taken back.
    let gone = rig.app.client.delete(rig.app.url(&format!("/v1/messages/{streamed}/feedback"))).bearer_auth(&rig.token);
    assert_eq!(gone.send().await.unwrap().status(), 204);
    let (_, view) = rig.app.get_json(&format!("/v1/conversations/{conversation}"), &rig.token).await;
    assert!(view["messages"][1].get("feedback").is_none());

    // Erased with its user.
    rig.app.put_json(&format!("/v1/messages/{streamed}/feedback"), &rig.token, &json!({"rating": "down"})).await;
    let erase = rig.app.client.delete(rig.app.url("/v1/users/user_42")).bearer_auth(&rig.api_key);
    let erased: serde_json::Value = erase.send().await.unwrap().json().await.unwrap();
    assert_eq!(erased["deleted"]["feedback"], 1, "{erased}");
    let (_, page) = rig.app.get_json("/v1/workspace/feedback", &rig.api_key).await;
    assert_eq!(page["items"], json!([]));
}
