//! Knowledge sources (issue #45; api key): add a sitemap, a page (or the
//! pages under a path), a file or a snippet; list them with their status,
//! counts, schedule and per-page errors; sync one now; remove one with
//! everything read from it; list what was read; search as the assistant
//! would; read the content gaps. docs/knowledge.md tells hosts the rest.

use axum::Json;
use axum::extract::multipart::{Multipart, MultipartRejection};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use url::Url;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::WorkspaceKey;
use super::state::ApiState;
use crate::db::{self, knowledge as store};
use crate::http::{ApiError, ApiJson, ApiQuery};
use crate::ids::rfc3339;
use crate::knowledge::gaps::GapGroup;

/// Sources one workspace may have.
const MAX_SOURCES: usize = 100;
/// Characters of a snippet's text.
const MAX_SNIPPET_CHARS: usize = 100_000;
/// Per-page errors shown with a source.
const SHOWN_ERRORS: usize = 50;
/// The owner recorded on files the host uploads for knowledge (never a visitor's id).
pub const HOST_FILES: &str = "@knowledge";

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(add_source, list_sources))
        .routes(routes!(show_source, remove_source))
        .routes(routes!(sync_source))
        .routes(routes!(list_source_pages))
        .routes(routes!(search_knowledge))
        .routes(routes!(list_gaps))
        .merge(OpenApiRouter::new().routes(routes!(upload_knowledge_file)).layer(DefaultBodyLimit::disable()))
}

/// What a source reads.
#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
enum SourceKind {
    /// The pages a sitemap lists (a sitemap index, gzipped or not).
    Sitemap,
    /// One page, or with `crawl` the pages linked under a path prefix.
    Url,
    /// A file uploaded with `POST /v1/knowledge/files` (PDF, text, Markdown, HTML).
    File,
    /// A snippet the host writes (a question and its answer).
    Text,
}

impl SourceKind {
    fn as_str(self) -> &'static str {
        match self {
            SourceKind::Sitemap => "sitemap",
            SourceKind::Url => "url",
            SourceKind::File => "file",
            SourceKind::Text => "text",
        }
    }

    fn of(kind: &str) -> Self {
        match kind {
            "sitemap" => SourceKind::Sitemap,
            "url" => SourceKind::Url,
            "file" => SourceKind::File,
            _ => SourceKind::Text,
        }
    }
}

/// Which linked pages a `url` source reads.
#[derive(Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CrawlRequest {
    /// Links are followed when their address starts with this: a path
    /// (`/help/`) or an absolute URL on the page's site; by default the
    /// page's own directory.
    #[schema(max_length = 2000)]
    prefix: Option<String>,
    /// Pages read at most, the start page included (default and ceiling:
    /// the server's `CA_KNOWLEDGE_MAX_PAGES`).
    #[schema(minimum = 1)]
    max_pages: Option<u32>,
}

/// A source to add; which fields it takes depends on `kind`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NewSourceRequest {
    kind: SourceKind,
    /// `sitemap` and `url`: the sitemap's or the page's http(s) address.
    /// `text`: the page the snippet links to, if any.
    #[schema(max_length = 2000)]
    url: Option<String>,
    /// `url` only.
    crawl: Option<CrawlRequest>,
    /// `file`: what `POST /v1/knowledge/files` answered.
    attachment_id: Option<String>,
    /// `text`: its title (1 to 200 characters).
    #[schema(max_length = 200)]
    title: Option<String>,
    /// `text`: the snippet (1 to 100,000 characters; Markdown is read as such).
    text: Option<String>,
    /// How the host calls it (1 to 200 characters); by default its
    /// address, title or file name.
    #[schema(max_length = 200)]
    name: Option<String>,
    /// Hours between syncs (0: only by hand; default 24; at most 8760).
    /// A file or a snippet changes only when replaced: 0.
    #[schema(minimum = 0, maximum = 8760)]
    refresh_hours: Option<u32>,
    /// Its language (`en`, `fr-CA`…), for its words' stemming; by default
    /// each page's own `<html lang>`, else English.
    #[schema(max_length = 35)]
    language: Option<String>,
}

/// A page that was not read, and why.
#[derive(Serialize, utoipa::ToSchema)]
struct PageError {
    url: String,
    /// `http_status` (see `http_status`), `robots` (refused by robots.txt),
    /// `too_large`, `unreadable`, `unsupported_type`, `private_address`,
    /// `redirect_offsite`, `too_many_redirects`, `unreachable`, `workspace_full`,
    /// `not_kept` (read, but the database refused it: tried again at the next sync).
    code: String,
    http_status: Option<u16>,
    message: String,
}

/// A source as its host sees it.
#[derive(Serialize, utoipa::ToSchema)]
struct ShownSource {
    id: String,
    kind: SourceKind,
    name: String,
    url: Option<String>,
    crawl: Option<serde_json::Value>,
    attachment_id: Option<String>,
    /// A snippet's title.
    title: Option<String>,
    language: Option<String>,
    refresh_hours: u32,
    /// `pending` (never synced), `syncing`, `ready` or `failed` (the last
    /// sync failed as a whole; what earlier ones read is still searched).
    status: String,
    /// Why the last sync failed, when it did.
    error: Option<String>,
    /// Pages read with content, and the chunks search returns from them.
    pages: i64,
    chunks: i64,
    /// Pages whose last fetch failed (each in `errors`).
    failed_pages: i64,
    created_at: String,
    last_synced_at: Option<String>,
    /// When it syncs next (null: only by hand).
    next_sync_at: Option<String>,
    /// Why pages are missing (the first 50; all with `/pages`).
    errors: Vec<PageError>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct SourceList {
    sources: Vec<ShownSource>,
}

async fn shown(state: &ApiState, row: store::SourceRow) -> Result<ShownSource, ApiError> {
    let config: serde_json::Value = serde_json::from_str(&row.config).unwrap_or_default();
    let text = |key: &str| config.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let errors = if row.failed_pages > 0 {
        store::pages(&state.pool, &row.id)
            .await?
            .into_iter()
            .filter(|p| p.status == "error")
            .take(SHOWN_ERRORS)
            .map(page_error)
            .collect()
    } else {
        Vec::new()
    };
    let next = if row.sync_due == 1 && row.status != "syncing" { Some(state.clock.now_ms()) } else { row.next_sync_at };
    Ok(ShownSource {
        id: row.id,
        kind: SourceKind::of(&row.kind),
        name: row.name,
        url: text("url").filter(|u| !u.is_empty()),
        crawl: config.get("crawl").cloned().filter(|c| !c.is_null()),
        attachment_id: text("attachment_id"),
        title: text("title"),
        language: row.language,
        refresh_hours: u32::try_from(row.refresh_hours).unwrap_or(0),
        status: row.status,
        error: row.error,
        pages: row.pages,
        chunks: row.chunks,
        failed_pages: row.failed_pages,
        created_at: rfc3339(row.created_at),
        last_synced_at: row.last_synced_at.map(rfc3339),
        next_sync_at: next.map(rfc3339),
        errors,
    })
}

fn page_error(page: store::PageRow) -> PageError {
    PageError {
        url: page.url,
        code: page.error_code.unwrap_or_else(|| "unreadable".into()),
        http_status: page.http_status.and_then(|s| u16::try_from(s).ok()),
        message: page.error.unwrap_or_default(),
    }
}

/// An http(s) address to fetch from: absolute, without credentials, and
/// (unless private hosts are allowed) not on a private address.
async fn fetchable(state: &ApiState, field: &str, raw: &str) -> Result<Url, ApiError> {
    let bad = |why: &str| ApiError::BadRequest(format!("{field}: {why}"));
    if raw.len() > 2000 {
        return Err(bad("at most 2000 characters"));
    }
    let url = Url::parse(raw.trim()).map_err(|_| bad("not an absolute URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad("an http or https URL is required"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("credentials in the URL are not taken"));
    }
    if !state.allow_private_tool_hosts {
        let refused = || {
            bad("it points at a private, loopback or link-local address (set CA_ALLOW_PRIVATE_TOOL_HOSTS=1 to allow)")
        };
        let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
        if host.eq_ignore_ascii_case("localhost") || host.ends_with(".localhost") {
            return Err(refused());
        }
        let port = url.port_or_known_default().unwrap_or(443);
        let addrs =
            tokio::net::lookup_host((host.as_str(), port)).await.map_err(|_| bad("the host name does not resolve"))?;
        for addr in addrs {
            if crate::host::is_private(addr.ip()) {
                return Err(refused());
            }
        }
    }
    Ok(url)
}

fn bounded(field: &str, value: Option<&str>, max: usize) -> Result<Option<String>, ApiError> {
    match value.map(str::trim) {
        None => Ok(None),
        Some("") => Err(ApiError::BadRequest(format!("{field}: must not be empty"))),
        Some(v) if v.chars().count() > max => Err(ApiError::BadRequest(format!("{field}: at most {max} characters"))),
        Some(v) => Ok(Some(v.to_owned())),
    }
}

/// Adds a knowledge source; its first sync starts at once, in the background.
#[utoipa::path(
    post,
    path = "/v1/knowledge/sources",
    tag = "knowledge",
    security(("api_key" = [])),
    request_body = NewSourceRequest,
    responses(
        (status = 201, description = "The source, `pending` until its first sync starts", body = ShownSource),
        (status = 400, description = "A field missing, out of shape or not taken by the kind; a private address", body = crate::http::ErrorBody),
        (status = 409, description = "The workspace has 100 sources already (`too_many_sources`)", body = crate::http::ErrorBody),
    ),
)]
async fn add_source(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiJson(request): ApiJson<NewSourceRequest>,
) -> Result<(StatusCode, Json<ShownSource>), ApiError> {
    let kind = request.kind;
    let only = |field: &str, present: bool, kinds: &[SourceKind]| {
        if present && !kinds.contains(&kind) {
            return Err(ApiError::BadRequest(format!("{field}: not taken by a `{}` source", kind.as_str())));
        }
        Ok(())
    };
    only("crawl", request.crawl.is_some(), &[SourceKind::Url])?;
    only("attachment_id", request.attachment_id.is_some(), &[SourceKind::File])?;
    only("title", request.title.is_some(), &[SourceKind::Text])?;
    only("text", request.text.is_some(), &[SourceKind::Text])?;
    only("url", request.url.is_some(), &[SourceKind::Sitemap, SourceKind::Url, SourceKind::Text])?;
    let name = bounded("name", request.name.as_deref(), 200)?;
    let language = match request.language.as_deref().map(str::trim) {
        None => None,
        Some(tag)
            if (2..=35).contains(&tag.len())
                && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Some(tag.to_owned())
        }
        Some(_) => return Err(ApiError::BadRequest("language: a language tag such as `en` or `fr-CA`".into())),
    };
    let refresh_hours = request.refresh_hours.unwrap_or(24);
    if refresh_hours > 8760 {
        return Err(ApiError::BadRequest("refresh_hours: at most 8760 (a year)".into()));
    }
    let max_pages = state.engine.knowledge.settings().max_pages;
    let (config, default_name, refresh_hours) = match kind {
        SourceKind::Sitemap | SourceKind::Url => {
            let raw = request.url.as_deref().ok_or_else(|| ApiError::BadRequest("url: required".into()))?;
            let url = fetchable(&state, "url", raw).await?;
            let crawl = match &request.crawl {
                None => serde_json::Value::Null,
                Some(crawl) => {
                    if let Some(prefix) = &crawl.prefix {
                        let joined =
                            url.join(prefix.trim()).ok().filter(|p| crate::knowledge::fetch::same_site(&url, p));
                        if prefix.len() > 2000 || joined.is_none() {
                            return Err(ApiError::BadRequest(
                                "crawl.prefix: a path or an address on the page's site".into(),
                            ));
                        }
                    }
                    if crawl.max_pages.is_some_and(|m| m == 0 || m as usize > max_pages) {
                        return Err(ApiError::BadRequest(format!("crawl.max_pages: 1 to {max_pages}")));
                    }
                    serde_json::to_value(crawl).map_err(anyhow::Error::from)?
                }
            };
            let name = format!("{}{}", url.host_str().unwrap_or_default(), url.path().trim_end_matches('/'));
            (serde_json::json!({ "url": url.as_str(), "crawl": crawl }), name, refresh_hours)
        }
        SourceKind::File => {
            let id = request
                .attachment_id
                .as_deref()
                .ok_or_else(|| ApiError::BadRequest("attachment_id: required".into()))?;
            let file = db::attachments::by_id(&state.pool, id)
                .await?
                .filter(|a| a.workspace_id == workspace.id && a.external_user_id == HOST_FILES)
                .ok_or_else(|| {
                    ApiError::BadRequest(
                        "attachment_id: no file of the workspace's (upload it with POST /v1/knowledge/files)".into(),
                    )
                })?;
            (serde_json::json!({ "attachment_id": file.id }), file.name, 0)
        }
        SourceKind::Text => {
            let title = bounded("title", request.title.as_deref(), 200)?
                .ok_or_else(|| ApiError::BadRequest("title: required".into()))?;
            let text = bounded("text", request.text.as_deref(), MAX_SNIPPET_CHARS)?
                .ok_or_else(|| ApiError::BadRequest("text: required".into()))?;
            let url = match request.url.as_deref() {
                Some(raw) => {
                    let url = Url::parse(raw.trim())
                        .ok()
                        .filter(|u| matches!(u.scheme(), "http" | "https") && raw.len() <= 2000);
                    Some(url.ok_or_else(|| ApiError::BadRequest("url: an http or https URL".into()))?.to_string())
                }
                None => None,
            };
            (serde_json::json!({ "title": title, "text": text, "url": url }), title, 0)
        }
    };
    if store::sources(&state.pool, &workspace.id).await?.len() >= MAX_SOURCES {
        return Err(ApiError::Conflict("too_many_sources", format!("a workspace has {MAX_SOURCES} sources at most")));
    }
    let new = store::NewSource {
        workspace_id: &workspace.id,
        kind: kind.as_str(),
        name: name.as_deref().unwrap_or(&default_name),
        config: &config,
        language: language.as_deref(),
        refresh_hours: i64::from(refresh_hours),
    };
    let id = store::insert_source(&state.pool, new, state.clock.now_ms()).await?;
    let detail = serde_json::json!({ "source_id": id, "kind": kind.as_str() });
    db::audit::record(&state.pool, "api-key", "knowledge.source_added", Some(&workspace.id), None, &detail).await?;
    tracing::info!(workspace_id = %workspace.id, source_id = %id, kind = kind.as_str(), "knowledge source added");
    let mut row = store::source(&state.pool, &workspace.id, &id).await?.ok_or(ApiError::NotFound)?;
    // As created: a replica polling may have begun its sync already.
    row.status = "pending".into();
    let shown = shown(&state, row).await?;
    state.engine.knowledge.wake();
    Ok((StatusCode::CREATED, Json(shown)))
}

/// The workspace's knowledge sources, oldest first.
#[utoipa::path(
    get,
    path = "/v1/knowledge/sources",
    tag = "knowledge",
    security(("api_key" = [])),
    responses((status = 200, description = "Every source, with its status and errors", body = SourceList)),
)]
async fn list_sources(State(state): State<ApiState>, workspace: WorkspaceKey) -> Result<Json<SourceList>, ApiError> {
    let mut sources = Vec::new();
    for row in store::sources(&state.pool, &workspace.id).await? {
        sources.push(shown(&state, row).await?);
    }
    Ok(Json(SourceList { sources }))
}

async fn source_of(state: &ApiState, workspace: &WorkspaceKey, id: &str) -> Result<store::SourceRow, ApiError> {
    if id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    store::source(&state.pool, &workspace.id, id).await?.ok_or(ApiError::NotFound)
}

/// One knowledge source.
#[utoipa::path(
    get,
    path = "/v1/knowledge/sources/{id}",
    tag = "knowledge",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "A source of the workspace's")),
    responses((status = 200, description = "The source", body = ShownSource)),
)]
async fn show_source(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(id): Path<String>,
) -> Result<Json<ShownSource>, ApiError> {
    let row = source_of(&state, &workspace, &id).await?;
    Ok(Json(shown(&state, row).await?))
}

/// Removes a knowledge source and everything read from it (at once from
/// search; a sync running stops).
#[utoipa::path(
    delete,
    path = "/v1/knowledge/sources/{id}",
    tag = "knowledge",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "A source of the workspace's")),
    responses((status = 204, description = "Removed, with its pages and chunks")),
)]
async fn remove_source(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let row = source_of(&state, &workspace, &id).await?;
    if !store::delete_source(&state.pool, &workspace.id, &row.id).await? {
        return Err(ApiError::NotFound);
    }
    let detail = serde_json::json!({ "source_id": row.id, "kind": row.kind });
    db::audit::record(&state.pool, "api-key", "knowledge.source_removed", Some(&workspace.id), None, &detail).await?;
    tracing::info!(workspace_id = %workspace.id, source_id = %row.id, "knowledge source removed");
    Ok(StatusCode::NO_CONTENT)
}

/// Syncs a source now (after the one running, if one is).
#[utoipa::path(
    post,
    path = "/v1/knowledge/sources/{id}/sync",
    tag = "knowledge",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "A source of the workspace's")),
    responses((status = 202, description = "The sync is asked for", body = ShownSource)),
)]
async fn sync_source(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<ShownSource>), ApiError> {
    let row = source_of(&state, &workspace, &id).await?;
    store::request_sync(&state.pool, &workspace.id, &row.id).await?;
    state.engine.knowledge.wake();
    let row = source_of(&state, &workspace, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(shown(&state, row).await?)))
}

/// A page of a source as read.
#[derive(Serialize, utoipa::ToSchema)]
struct ShownPage {
    url: String,
    title: String,
    /// `ok`, or `error` (see `error`; a page that failed keeps its last
    /// good content unless it is gone).
    status: String,
    chunks: i64,
    bytes: i64,
    fetched_at: Option<String>,
    error: Option<PageError>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct PageList {
    pages: Vec<ShownPage>,
}

/// What was read of a source: every page, failed ones first.
#[utoipa::path(
    get,
    path = "/v1/knowledge/sources/{id}/pages",
    tag = "knowledge",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "A source of the workspace's")),
    responses((status = 200, description = "Its pages", body = PageList)),
)]
async fn list_source_pages(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(id): Path<String>,
) -> Result<Json<PageList>, ApiError> {
    let row = source_of(&state, &workspace, &id).await?;
    let pages = store::pages(&state.pool, &row.id)
        .await?
        .into_iter()
        .map(|page| ShownPage {
            url: page.url.clone(),
            title: page.title.clone(),
            status: page.status.clone(),
            chunks: page.chunks,
            bytes: page.bytes,
            fetched_at: page.fetched_at.map(rfc3339),
            error: (page.status == "error").then(|| page_error(page)),
        })
        .collect();
    Ok(Json(PageList { pages }))
}

/// A search as the assistant would make it.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct SearchRequest {
    /// 1 to 500 characters.
    #[schema(min_length = 1, max_length = 500)]
    query: String,
    /// Results wanted (1 to 20, default 5).
    #[schema(minimum = 1, maximum = 20)]
    limit: Option<u32>,
}

/// A passage found.
#[derive(Serialize, utoipa::ToSchema)]
struct SearchResult {
    source_id: String,
    /// The page with the section's `#fragment` (empty for a snippet or a file).
    url: String,
    title: String,
    section: String,
    /// The passage around the first word of the query it holds (300 characters at most).
    snippet: String,
    score: f32,
}

#[derive(Serialize, utoipa::ToSchema)]
struct SearchResults {
    results: Vec<SearchResult>,
}

/// Searches the workspace's knowledge as the assistant's `search_knowledge` does.
#[utoipa::path(
    post,
    path = "/v1/knowledge/search",
    tag = "knowledge",
    security(("api_key" = [])),
    request_body = SearchRequest,
    responses((status = 200, description = "The best passages, best first", body = SearchResults)),
)]
async fn search_knowledge(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiJson(request): ApiJson<SearchRequest>,
) -> Result<Json<SearchResults>, ApiError> {
    let query = request.query.trim();
    if query.is_empty() || query.chars().count() > 500 {
        return Err(ApiError::BadRequest("query: 1 to 500 characters".into()));
    }
    let limit = request.limit.unwrap_or(5);
    if !(1..=20).contains(&limit) {
        return Err(ApiError::BadRequest("limit: 1 to 20".into()));
    }
    let hits = state.engine.knowledge.search(&workspace.id, query, limit as usize).await?;
    let results = hits
        .into_iter()
        .map(|hit| SearchResult {
            snippet: crate::knowledge::snippet(&hit.text, query),
            source_id: hit.source_id,
            url: hit.url,
            title: hit.title,
            section: hit.section,
            score: hit.score,
        })
        .collect();
    Ok(Json(SearchResults { results }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct GapQuery {
    /// The last this many days (1 to 365, default 30).
    #[param(minimum = 1, maximum = 365)]
    days: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct GapList {
    /// Questions asked alike, most asked first.
    gaps: Vec<GapGroup>,
    /// Questions recorded in the period (each group counts its own).
    total: usize,
}

/// What visitors asked that the knowledge did not answer, grouped.
#[utoipa::path(
    get,
    path = "/v1/knowledge/gaps",
    tag = "knowledge",
    security(("api_key" = [])),
    params(GapQuery),
    responses((status = 200, description = "The content gaps", body = GapList)),
)]
async fn list_gaps(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiQuery(query): ApiQuery<GapQuery>,
) -> Result<Json<GapList>, ApiError> {
    let days = query.days.unwrap_or(30);
    if !(1..=365).contains(&days) {
        return Err(ApiError::BadRequest("days: 1 to 365".into()));
    }
    let since = state.clock.now_ms() - i64::from(days) * 86_400_000;
    let rows = store::gaps(&state.pool, &workspace.id, since, 5_000).await?;
    let total = rows.len();
    Ok(Json(GapList { gaps: crate::knowledge::gaps::group(&rows), total }))
}

/// A file uploaded for knowledge.
#[derive(Serialize, utoipa::ToSchema)]
struct KnowledgeFile {
    /// Its id, for a `file` source's `attachment_id`.
    id: String,
    name: String,
    /// `application/pdf` or `text/plain` (Markdown and HTML are text).
    media_type: String,
    size: u64,
}

/// The upload form (documentation only: the body is read as it streams).
#[derive(utoipa::ToSchema)]
#[allow(dead_code, reason = "describes the multipart body in the OpenAPI document")]
struct KnowledgeUploadForm {
    /// The file (one per request).
    #[schema(format = Binary, content_media_type = "application/octet-stream")]
    file: String,
}

/// Uploads a file (PDF, text, Markdown or HTML) for a `file` source.
#[utoipa::path(
    post,
    path = "/v1/knowledge/files",
    tag = "knowledge",
    security(("api_key" = [])),
    request_body(content = KnowledgeUploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "The file as kept", body = KnowledgeFile),
        (status = 400, description = "No `file` field, or not a multipart body", body = crate::http::ErrorBody),
        (status = 413, description = "Larger than `CA_MAX_ATTACHMENT_BYTES` (`too_large`)", body = crate::http::ErrorBody),
        (status = 415, description = "Not a PDF or a text file, by its bytes (`unsupported_type`)", body = crate::http::ErrorBody),
    ),
)]
async fn upload_knowledge_file(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<(StatusCode, Json<KnowledgeFile>), ApiError> {
    use crate::attachments::{self, Kind};
    let store = &state.attachments;
    let super::attachments::Received { name, spooled, head, .. } =
        super::attachments::receive(multipart, store).await?;
    let kind = attachments::kind::sniff(&head).filter(|k| matches!(k, Kind::Pdf | Kind::Text)).ok_or_else(|| {
        ApiError::UnsupportedType(
            "unsupported_type",
            "a knowledge file is a PDF or a text file (Markdown, HTML)".into(),
        )
    })?;
    let row = match super::attachments::keep(&state, &workspace.id, HOST_FILES, &name, kind, spooled.path()).await? {
        Ok(row) => row,
        Err(refused) => return Err(ApiError::UnsupportedType("unreadable_file", refused.to_string())),
    };
    let size = row.size as u64;
    Ok((StatusCode::CREATED, Json(KnowledgeFile { id: row.id, name, media_type: row.media_type, size })))
}
