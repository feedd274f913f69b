//! Conversations of the caller (assistant-api.md §3), so a reload restores
//! the chat. A caller sees only its own workspace's and user's.

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::i18n;
use widget::wire::{ComponentView, ConversationMessage, ConversationView, DisplayCard, Feedback, Role};

use super::state::ApiState;
use crate::auth::Caller;
use crate::db::{self, actions, components};
use crate::engine::pending_action;
use crate::http::ApiError;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list_conversations)).routes(routes!(get_conversation))
}

#[derive(Serialize, utoipa::ToSchema)]
struct ConversationSummary {
    id: String,
    title: String,
    updated_at: i64,
}

#[derive(Serialize, utoipa::ToSchema)]
struct ConversationListResponse {
    conversations: Vec<ConversationSummary>,
}

/// The caller's conversations, the most recently updated first.
#[utoipa::path(
    get,
    path = "/v1/conversations",
    tag = "chat",
    security(("embed_token" = [])),
    responses((status = 200, description = "The caller's conversations, newest first", body = ConversationListResponse)),
)]
async fn list_conversations(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<ConversationListResponse>, ApiError> {
    let rows = db::list_conversations(&state.pool, &caller.workspace_id, &caller.external_user_id).await?;
    let conversations =
        rows.into_iter().map(|c| ConversationSummary { id: c.id, title: c.title, updated_at: c.updated_at }).collect();
    Ok(Json(ConversationListResponse { conversations }))
}

/// One of the caller's conversations, as the user saw it.
///
/// Each user message, then the turn's answer as one assistant message (its
/// text from every model step, its cards and components from every tool
/// result), and the open action, if any.
#[utoipa::path(
    get,
    path = "/v1/conversations/{id}",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "The conversation's id")),
    responses((status = 200, description = "The conversation with its messages, cards, components and pending actions", body = ConversationView)),
)]
async fn get_conversation(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ConversationView>, ApiError> {
    let conversation = db::owned_conversation(&state.pool, &id, &caller.workspace_id, &caller.external_user_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let mut messages = transcript(&state, &conversation).await?;
    let now = state.clock.now_ms();
    // The owner's browser shows its files by short-lived signed links,
    // drawn under the message's text in the visitor's language.
    let links = state.attachments.links();
    let lang = match messages.iter().any(|m| !m.attachments.is_empty()) {
        true => db::reads(conversation.lang.as_deref()),
        false => "en",
    };
    for message in messages.iter_mut().filter(|m| !m.attachments.is_empty()) {
        for attachment in &mut message.attachments {
            attachment.url = Some(links.sign(&caller.workspace_id, &attachment.id, now));
        }
        message.html = Some(files_html(&message.text, &message.attachments, lang));
    }
    // An MCP App comes back framed anew, with a fresh app token for this
    // caller; without a sandbox origin it is not shown.
    for message in &mut messages {
        message.components.retain_mut(|c| {
            if c.kind != db::apps::KIND {
                return true;
            }
            let Some(frames) = &state.engine.apps else { return false };
            let title = c.data.get("title").cloned().unwrap_or_default();
            c.data = serde_json::json!({ "title": title, "src": frames.src(&c.component_id, &caller, now / 1000) });
            true
        });
    }
    let pending_action = match actions::open_in_conversation(&state.pool, &conversation.id).await? {
        Some(action) if action.is_expired(now) => {
            actions::expire(&state.pool, &action.id, now).await?;
            None
        }
        Some(action) => Some(pending_action(&action)),
        None => None,
    };
    Ok(Json(ConversationView { id: conversation.id, messages, pending_action }))
}

/// A user message with files as the widget shows it (the same markup as
/// `widget/src/js/attach.js` draws for a message just sent): its text, then
/// each image as a thumbnail that opens larger and any other file as a
/// download, by their signed links; every text escaped.
fn files_html(text: &str, files: &[widget::wire::AttachmentRef], lang: &str) -> String {
    use std::fmt::Write;
    use widget::html::escape;
    let mut html = if text.is_empty() { String::new() } else { format!("<p>{}</p>", escape(text)) };
    html.push_str("<ul class=\"ca-atts\">");
    for file in files {
        let (name, url) = (escape(&file.name), escape(file.url.as_deref().unwrap_or_default()));
        let _ = if file.media_type.starts_with("image/") {
            let label = escape(&i18n::fill(&i18n::text(lang, "open_image"), "{name}", &file.name));
            write!(
                html,
                "<li><button type=\"button\" class=\"ca-att-img\" aria-label=\"{label}\"><img src=\"{url}\" alt=\"{name}\"></button></li>"
            )
        } else {
            write!(html, "<li><a class=\"ca-att-file\" href=\"{url}\" download=\"{name}\">{name}</a></li>")
        };
    }
    html.push_str("</ul>");
    html
}

/// A conversation as its user saw it: each user message, then the turn's
/// answer as one assistant message (its text from every model step, its
/// cards and components from every tool result; the HTML sanitized).
pub(super) async fn transcript(
    state: &ApiState,
    conversation: &db::ConversationRow,
) -> Result<Vec<ConversationMessage>, ApiError> {
    let conversation_id = conversation.id.as_str();
    let rows = db::messages(&state.pool, conversation_id).await?;
    let feedback = db::feedback::in_conversation(&state.pool, conversation_id).await?;
    // Each answer's last assistant message: its feedback is kept under it.
    let mut last_of_answer: Vec<Option<String>> = Vec::new();
    let mut shown = components::in_conversation(&state.pool, conversation_id).await?;
    let mut sent = db::attachments::sent_in(&state.pool, conversation_id).await?;
    let mut messages: Vec<ConversationMessage> = Vec::new();
    for row in rows {
        if row.role == Role::User {
            messages.push(ConversationMessage {
                role: Role::User,
                text: row.content,
                html: None,
                cards: Vec::new(),
                components: Vec::new(),
                created_at: row.created_at,
                feedback: None,
                attachments: sent.remove(&row.id).unwrap_or_default(),
                sources: Vec::new(),
                id: row.id,
            });
            last_of_answer.push(None);
            continue;
        }
        if messages.last().is_none_or(|m| m.role != Role::Assistant) {
            messages.push(ConversationMessage {
                id: row.id.clone(),
                role: Role::Assistant,
                text: String::new(),
                html: None,
                cards: Vec::new(),
                components: Vec::new(),
                created_at: row.created_at,
                feedback: None,
                attachments: Vec::new(),
                sources: Vec::new(),
            });
            last_of_answer.push(None);
        }
        if row.role == Role::Assistant
            && let Some(last) = last_of_answer.last_mut()
        {
            *last = Some(row.id.clone());
        }
        let answer = messages.last_mut().expect("just pushed");
        let cited: Vec<widget::wire::CitedSource> =
            row.sources.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
        for source in cited {
            if !answer.sources.contains(&source) {
                answer.sources.push(source);
            }
        }
        match row.role {
            Role::Assistant if !row.content.is_empty() => {
                if !answer.text.is_empty() {
                    answer.text.push_str("\n\n");
                }
                answer.text.push_str(&row.content);
            }
            Role::Tool => {
                let cards: Vec<DisplayCard> =
                    row.cards.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default();
                answer.cards.extend(cards);
                for c in shown.extract_if(.., |c| c.message_id == row.id) {
                    answer.components.push(ComponentView {
                        data: c.data(),
                        component_id: c.id,
                        call_id: c.call_id,
                        kind: c.kind,
                    });
                }
            }
            Role::Assistant | Role::User => {}
        }
    }
    for (message, last) in messages.iter_mut().zip(&last_of_answer) {
        let given = feedback.iter().find(|f| last.as_deref() == Some(f.message_id.as_str()));
        message.feedback = given.map(|f| Feedback { rating: f.rating, comment: f.comment.clone() });
    }
    messages.retain(|m| m.role == Role::User || !m.text.is_empty() || !m.cards.is_empty() || !m.components.is_empty());
    // A reply's sources are headed in the conversation's language.
    let lang = match messages.iter().any(|m| !m.sources.is_empty()) {
        true => db::reads(conversation.lang.as_deref()),
        false => "en",
    };
    for m in messages.iter_mut().filter(|m| m.role == Role::Assistant) {
        m.html = Some(crate::markdown::render(&m.text) + &crate::knowledge::cite::sources_html(&m.sources, lang));
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use widget::wire::AttachmentRef;

    #[test]
    fn a_messages_files_are_drawn_escaped_by_their_links() {
        let file = |id: &str, name: &str, media_type: &str| AttachmentRef {
            id: id.into(),
            name: name.into(),
            media_type: media_type.into(),
            size: 3,
            url: Some(format!("https://a.example/v1/attachments/{id}/content?exp=1&sig=ab")),
        };
        let files = [
            file("att_1", "\"><img src=x onerror=alert(1)>.png", "image/png"),
            file("att_2", "notes.txt", "text/plain"),
        ];
        let html = super::files_html("<b>look</b>", &files, "es");
        assert_eq!(
            html,
            "<p>&lt;b&gt;look&lt;/b&gt;</p><ul class=\"ca-atts\"><li><button type=\"button\" class=\"ca-att-img\" \
             aria-label=\"Ver &quot;&gt;&lt;img src=x onerror=alert(1)&gt;.png en grande\"><img \
             src=\"https://a.example/v1/attachments/att_1/content?exp=1&amp;sig=ab\" \
             alt=\"&quot;&gt;&lt;img src=x onerror=alert(1)&gt;.png\"></button></li><li><a class=\"ca-att-file\" \
             href=\"https://a.example/v1/attachments/att_2/content?exp=1&amp;sig=ab\" download=\"notes.txt\">notes.txt</a></li></ul>"
        );
        assert!(super::files_html("", &files[1..], "en").starts_with("<ul class=\"ca-atts\">"));
    }
}
