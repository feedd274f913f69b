//! The audit trail of a workspace (api key auth): `GET /v1/audit`, newest
//! first, filtered by `user`, `action`, `tool`, `outcome`, `since` and
//! `until`, a page at a time (`next_cursor`); with `Accept:
//! application/jsonl` every matching entry as JSON Lines, streamed.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::WorkspaceKey;
use super::state::ApiState;
use crate::db::audit::{self, AuditRow, Filter};
use crate::http::{ApiError, ApiQuery};
use crate::ids::rfc3339;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(read_audit))
}

const PAGE: i64 = 100;
const MAX_PAGE: i64 = 1000;
const EXPORT_CHUNK: i64 = 500;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct AuditQuery {
    /// Entries about this end user (`sub`).
    #[param(min_length = 1, max_length = 256)]
    user: Option<String>,
    /// Entries of this kind (`workspace.updated`, `api_key.rotated`, …).
    #[param(min_length = 1, max_length = 64)]
    action: Option<String>,
    /// Entries about this tool.
    #[param(min_length = 1, max_length = 64)]
    tool: Option<String>,
    /// Entries with this outcome.
    #[param(min_length = 1, max_length = 64)]
    outcome: Option<String>,
    /// From this time on (RFC 3339, inclusive).
    #[param(format = DateTime)]
    since: Option<String>,
    /// Before this time (RFC 3339, exclusive).
    #[param(format = DateTime)]
    until: Option<String>,
    /// 1 to 1000 entries (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<i64>,
    /// The `next_cursor` of the page before.
    #[param(min_length = 1, max_length = 200)]
    cursor: Option<String>,
}

/// One entry of the trail.
#[derive(Serialize, utoipa::ToSchema)]
struct AuditItem {
    id: String,
    /// When (RFC 3339).
    at: String,
    /// Who: `api-key`, an end user (`user:{sub}`), `caddie-hub`, `caddie-launch`, `system`.
    actor: String,
    action: String,
    user: Option<String>,
    tool: Option<String>,
    outcome: Option<String>,
    /// What changed: never a secret.
    #[schema(value_type = Object)]
    detail: serde_json::Value,
}

impl From<AuditRow> for AuditItem {
    fn from(row: AuditRow) -> Self {
        Self {
            detail: serde_json::from_str(&row.detail).unwrap_or(serde_json::Value::Null),
            at: rfc3339(row.at),
            id: row.id,
            actor: row.actor,
            action: row.action,
            user: row.username,
            tool: row.tool,
            outcome: row.outcome,
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
struct AuditPage {
    items: Vec<AuditItem>,
    /// Pass as `cursor` for the next page; null on the last one.
    next_cursor: Option<String>,
}

/// The workspace's audit trail, newest first.
///
/// With `Accept: application/jsonl` (or `application/x-ndjson`), every
/// matching entry as JSON Lines (`limit` and `cursor` then start and bound
/// nothing: the export is whole).
#[utoipa::path(
    get,
    path = "/v1/audit",
    tag = "setup",
    security(("api_key" = [])),
    params(AuditQuery),
    responses((status = 200, description = "A page of entries, or (`Accept: application/jsonl`) one `AuditItem` per line", content(
        (AuditPage = "application/json"),
        (String = "application/jsonl"),
    ))),
)]
async fn read_audit(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> Result<Response, ApiError> {
    let mut filter = Filter {
        username: query.user,
        action: query.action,
        tool: query.tool,
        outcome: query.outcome,
        since: query.since.as_deref().map(|t| time_ms("since", t)).transpose()?,
        until: query.until.as_deref().map(|t| time_ms("until", t)).transpose()?,
        after: query.cursor.as_deref().map(decode_cursor).transpose()?,
    };
    for (name, value, longest) in [
        ("user", &filter.username, 256),
        ("action", &filter.action, 64),
        ("tool", &filter.tool, 64),
        ("outcome", &filter.outcome, 64),
    ] {
        if value.as_ref().is_some_and(|v| v.is_empty() || v.chars().count() > longest) {
            return Err(ApiError::BadRequest(format!("{name} must be 1 to {longest} characters")));
        }
    }
    if wants_jsonl(&headers) {
        filter.after = None;
        return Ok(export(state, workspace.id, filter));
    }
    let limit = page_size(query.limit, PAGE, MAX_PAGE)?;
    let rows = audit::list(&state.pool, &workspace.id, &filter, limit + 1).await?;
    let (rows, next_cursor) = paged(rows, limit, |r: &AuditRow| (r.at, &r.id));
    Ok(Json(AuditPage { items: rows.into_iter().map(Into::into).collect(), next_cursor }).into_response())
}

/// Every matching entry as JSON Lines, read a chunk at a time as it streams.
fn export(state: ApiState, workspace_id: String, filter: Filter) -> Response {
    let chunks = futures::stream::try_unfold(Some(filter), move |filter| {
        let pool = state.pool.clone();
        let workspace_id = workspace_id.clone();
        async move {
            let Some(mut filter) = filter else { return Ok::<_, anyhow::Error>(None) };
            let rows = audit::list(&pool, &workspace_id, &filter, EXPORT_CHUNK).await?;
            let last = rows.len() < EXPORT_CHUNK as usize;
            filter.after = rows.last().map(|r| (r.at, r.id.clone()));
            let mut lines = String::new();
            for row in rows {
                lines.push_str(&serde_json::to_string(&AuditItem::from(row))?);
                lines.push('\n');
            }
            Ok(Some((lines, (!last).then_some(filter))))
        }
    });
    let mut response = Body::from_stream(chunks).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/jsonl"));
    response
}

fn wants_jsonl(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|t| {
        let essence = t.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        essence == "application/jsonl" || essence == "application/x-ndjson"
    })
}

pub(super) fn time_ms(name: &str, raw: &str) -> Result<i64, ApiError> {
    time::OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .map_err(|_| ApiError::BadRequest(format!("{name} must be an RFC 3339 time like 2026-12-01T12:00:00Z")))
}

/// The page size asked for (`limit`, else `default`), 1 to `max`.
pub(super) fn page_size(limit: Option<i64>, default: i64, max: i64) -> Result<i64, ApiError> {
    let limit = limit.unwrap_or(default);
    if !(1..=max).contains(&limit) {
        return Err(ApiError::BadRequest(format!("limit must be 1 to {max}")));
    }
    Ok(limit)
}

/// A page of `limit` from `rows` (read `limit + 1`, newest first), and the
/// cursor of the next page when there is one: the last row's `key`.
pub(super) fn paged<T>(mut rows: Vec<T>, limit: i64, key: impl Fn(&T) -> (i64, &str)) -> (Vec<T>, Option<String>) {
    let more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let next_cursor = if more { rows.last().map(key).map(|(at, id)| encode_cursor(at, id)) } else { None };
    (rows, next_cursor)
}

fn encode_cursor(at: i64, id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{at}:{id}"))
}

pub(super) fn decode_cursor(raw: &str) -> Result<(i64, String), ApiError> {
    let bad = || ApiError::BadRequest("cursor is not one this API gave".into());
    if raw.len() > 200 {
        return Err(bad());
    }
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(raw).map_err(|_| bad())?).map_err(|_| bad())?;
    let (at, id) = text.split_once(':').ok_or_else(bad)?;
    let at = at.parse::<i64>().map_err(|_| bad())?;
    if id.is_empty() || id.len() > 64 {
        return Err(bad());
    }
    Ok((at, id.to_owned()))
}
