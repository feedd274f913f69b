//! Thumbs up or down on a reply, and a comment (`PUT`/`DELETE
//! /v1/messages/{id}/feedback`): saved at once, said once by the live
//! region; the same thumb again takes it back.

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

use super::{WidgetError, api, token};
use crate::js;
use crate::state::{Bubble, Chat};
use crate::wire::Rating;
use crate::wire::i18n::Msg;

/// Saves (or, for the thumb already given, takes back) the user's rating;
/// a thumb opens the comment field.
pub fn rate(chat: Chat, reply: Bubble, rating: Rating) {
    let (Some(id), Some(token)) = (reply.state.with_untracked(|s| s.message_id.clone()), chat.token.get_untracked())
    else {
        return;
    };
    let taking_back = reply.state.with_untracked(|s| s.rating == Some(rating));
    spawn_local(async move {
        let path = format!("/v1/messages/{id}/feedback");
        let outcome = if taking_back {
            api::call("DELETE", &path, &token, None).await
        } else {
            let body = js::stringify(&js::object(&[("rating", JsValue::from_str(rating.as_str()))]));
            api::call("PUT", &path, &token, Some(body)).await
        };
        // A thumb opens the comment field; taking it back closes it.
        if outcome.is_ok() {
            reply.state.update(|s| s.commenting = !taking_back);
        }
        settle(chat, reply, outcome.map(|_| (!taking_back).then_some(rating)));
    });
}

/// Adds `text` to the rating the user gave.
pub fn comment(chat: Chat, reply: Bubble, text: String) {
    let (Some(id), Some(token), Some(rating)) =
        reply.state.with_untracked(|s| (s.message_id.clone(), chat.token.get_untracked(), s.rating))
    else {
        return;
    };
    spawn_local(async move {
        let body = js::stringify(&js::object(&[
            ("rating", JsValue::from_str(rating.as_str())),
            ("comment", JsValue::from_str(text.trim())),
        ]));
        let outcome = api::call("PUT", &format!("/v1/messages/{id}/feedback"), &token, Some(body)).await;
        if outcome.is_ok() {
            reply.state.update(|s| s.commenting = false);
        }
        settle(chat, reply, outcome.map(|_| Some(rating)));
    });
}

/// Shows what was saved and says so once; an expired token is renewed.
fn settle(chat: Chat, reply: Bubble, outcome: Result<Option<Rating>, WidgetError>) {
    match outcome {
        Ok(rating) => {
            reply.state.update(|s| s.rating = rating);
            chat.announce.set(chat.t(if rating.is_some() { Msg::FeedbackThanks } else { Msg::FeedbackRemoved }));
        }
        Err(error) => {
            if let WidgetError::Expired = error {
                token::renew(chat);
            }
            chat.announce.set(chat.t(Msg::FeedbackFailed));
        }
    }
}
