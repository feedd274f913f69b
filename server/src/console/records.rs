//! What happened, read-only: the audit trail (filtered, paged, exported as
//! JSON Lines) and the conversations (by user and day, one as its user saw
//! it). Both lists share their shape: filters as the form holds them
//! (days as `YYYY-MM-DD`) → the API's query → a page and the next one's link.

use ::console::{
    Audit, AuditEntry, AuditFilters, Body as PageBody, ConversationItem, Conversations, Page, Transcript,
    TranscriptMessage,
};
use axum::extract::{Path, Query};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;

use super::shared::{InWorkspace, day_range, page, problem, query_of, render, segment, text};

/// Entries (and conversations) shown per page.
const PAGE: usize = 50;
/// Characters of an entry's detail shown in the table.
const DETAIL_CHARS: usize = 300;

/// The API's query for a list's `filters` (pairs as the form holds them)
/// between the days `since` and `until` (included), a page at a time when
/// `paged`, after `cursor`; or what is wrong with them.
fn api_query(filters: &[(&str, &str)], since: &str, until: &str, paged: bool, cursor: &str) -> Result<String, String> {
    let (since, until) = day_range(since, until)?;
    let page = PAGE.to_string();
    let mut pairs = filters.to_vec();
    pairs.extend([("since", since.as_str()), ("until", until.as_str())]);
    if paged {
        pairs.extend([("limit", page.as_str()), ("cursor", cursor)]);
    }
    Ok(query_of(&pairs))
}

/// The API's answer at `path` for `page`; or the page with what is wrong
/// with its filters (`400`) or what the API said.
pub(super) async fn read_list(
    console: &InWorkspace,
    page: &mut Page,
    path: Result<String, String>,
) -> Result<Value, Response> {
    let mut refused = |status, notice| {
        page.notice = notice;
        render(status, std::mem::take(page))
    };
    let path = path.map_err(|why| refused(StatusCode::BAD_REQUEST, problem(why)))?;
    let answer = console.call(Method::GET, &path, None).await?;
    if !answer.ok() {
        return Err(refused(answer.status, answer.problem()));
    }
    Ok(answer.json)
}

/// The items of a list answer, each made by `item`.
fn items<T>(answer: &Value, item: impl Fn(&Value) -> T) -> Vec<T> {
    answer["items"].as_array().map(|items| items.iter().map(item).collect()).unwrap_or_default()
}

/// What the audit page's form sends (every field optional, empty when absent).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct AuditForm {
    user: String,
    action: String,
    tool: String,
    outcome: String,
    since: String,
    until: String,
    cursor: String,
}

impl AuditForm {
    fn filters(&self) -> AuditFilters {
        AuditFilters {
            user: self.user.trim().to_owned(),
            action: self.action.trim().to_owned(),
            tool: self.tool.trim().to_owned(),
            outcome: self.outcome.trim().to_owned(),
            since: self.since.trim().to_owned(),
            until: self.until.trim().to_owned(),
        }
    }

    /// The API's path for the filters, a page at a time when `paged`.
    fn api_path(&self, paged: bool) -> Result<String, String> {
        let f = self.filters();
        let pairs = [("user", &*f.user), ("action", &*f.action), ("tool", &*f.tool), ("outcome", &*f.outcome)];
        Ok(format!("/v1/audit?{}", api_query(&pairs, &f.since, &f.until, paged, &self.cursor)?))
    }
}

/// The form's query string for `filters` (and a cursor).
fn audit_query(f: &AuditFilters, cursor: &str) -> String {
    query_of(&[
        ("user", &f.user),
        ("action", &f.action),
        ("tool", &f.tool),
        ("outcome", &f.outcome),
        ("since", &f.since),
        ("until", &f.until),
        ("cursor", cursor),
    ])
}

/// The audit trail, filtered, a page at a time.
pub(super) async fn audit(console: InWorkspace, Query(form): Query<AuditForm>) -> Result<Response, Response> {
    let filters = form.filters();
    let body = Audit { export: audit_query(&filters, ""), filters: filters.clone(), ..Audit::default() };
    let mut page = page("Audit trail", "Your workspace".into(), None, PageBody::Audit(body));
    let answer = read_list(&console, &mut page, form.api_path(true)).await?;
    if let PageBody::Audit(audit) = &mut page.body {
        audit.entries = items(&answer, |i| AuditEntry {
            at: text(&i["at"]),
            actor: text(&i["actor"]),
            action: text(&i["action"]),
            user: text(&i["user"]),
            tool: text(&i["tool"]),
            outcome: text(&i["outcome"]),
            detail: i["detail"].to_string().chars().take(DETAIL_CHARS).collect(),
        });
        audit.next = answer["next_cursor"].as_str().map(|cursor| audit_query(&filters, cursor));
    }
    Ok(render(StatusCode::OK, page))
}

/// The whole trail for the filters, as JSON Lines, downloaded.
pub(super) async fn export_audit(console: InWorkspace, Query(form): Query<AuditForm>) -> Result<Response, Response> {
    let path = form.api_path(false).map_err(|why| {
        render(StatusCode::BAD_REQUEST, Page { title: "Audit trail".into(), notice: problem(why), ..Page::default() })
    })?;
    let state = &console.state;
    let answer =
        state.send(Method::GET, &path, &console.session.key, None, "application/jsonl", console.client()).await;
    if answer.status() != StatusCode::OK {
        return Err(super::shared::failure("The export could not be made. Try again."));
    }
    let mut response = Response::new(answer.into_body());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/jsonl"));
    headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment; filename=\"audit.jsonl\""));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    Ok(response)
}

/// What the conversations page's form sends (every field optional, empty when absent).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ConversationForm {
    user: String,
    since: String,
    until: String,
    cursor: String,
}

/// The workspace's conversations, by user and day of last activity.
pub(super) async fn conversations(
    console: InWorkspace,
    Query(form): Query<ConversationForm>,
) -> Result<Response, Response> {
    let (user, since, until) = (form.user.trim(), form.since.trim(), form.until.trim());
    let list = Conversations { user: user.into(), since: since.into(), until: until.into(), ..Default::default() };
    let mut page = page("Conversations", "Your workspace".into(), None, PageBody::Conversations(list));
    let path = api_query(&[("user", user)], since, until, true, &form.cursor)
        .map(|query| format!("/v1/workspace/conversations?{query}"));
    let answer = read_list(&console, &mut page, path).await?;
    if let PageBody::Conversations(list) = &mut page.body {
        list.items = items(&answer, |c| ConversationItem {
            id: text(&c["id"]),
            user: text(&c["user"]),
            title: text(&c["title"]),
            updated_at: text(&c["updated_at"]),
        });
        list.next = answer["next_cursor"]
            .as_str()
            .map(|cursor| query_of(&[("user", user), ("since", since), ("until", until), ("cursor", cursor)]));
    }
    Ok(render(StatusCode::OK, page))
}

/// One conversation, read-only, as its user saw it.
pub(super) async fn conversation(console: InWorkspace, Path(id): Path<String>) -> Result<Response, Response> {
    let answer = console.call(Method::GET, &format!("/v1/workspace/conversations/{}", segment(&id)), None).await?;
    if !answer.ok() {
        let page = Page { title: "Conversation".into(), nav: true, notice: answer.problem(), ..Page::default() };
        return Ok(render(answer.status, page));
    }
    let json = &answer.json;
    let messages = json["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| TranscriptMessage {
                    role: text(&m["role"]),
                    text: text(&m["text"]),
                    cards: m["cards"]
                        .as_array()
                        .map(|cards| cards.iter().map(|c| text(&c["title"])).collect())
                        .unwrap_or_default(),
                    at: m["created_at"].as_i64().map(crate::ids::rfc3339).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    let transcript = Transcript {
        id: text(&json["id"]),
        user: text(&json["user"]),
        title: text(&json["title"]),
        updated_at: text(&json["updated_at"]),
        messages,
    };
    Ok(render(StatusCode::OK, page("Conversation", "Your workspace".into(), None, PageBody::Transcript(transcript))))
}
