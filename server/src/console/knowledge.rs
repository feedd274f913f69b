//! The Knowledge page: the workspace's knowledge sources (`/v1/knowledge/…`)
//! added, synced and removed by forms, `knowledge_only`, a search box and
//! the content gaps — every call the public API's, in process.

use ::console::{Body as PageBody, Knowledge, KnowledgeGap, KnowledgeResult, KnowledgeSource, Notice, Page};
use axum::body::Body;
use axum::extract::{Form, Path, Query, Request};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::shared::{InWorkspace, notice, page, problem, render, segment, text};

/// Bytes a file upload form may carry to the API (its own cap still holds).
const MAX_FORM_BYTES: usize = 64 * 1024 * 1024;

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct KnowledgeQuery {
    q: String,
    done: String,
}

impl InWorkspace {
    /// The page, with `query`'s results when one was asked.
    async fn knowledge_page(&self, query: &str, notice: Option<Notice>) -> Result<Page, Response> {
        let workspace = self.workspace().await?;
        let listed = self.call(Method::GET, "/v1/knowledge/sources", None).await?;
        let sources = listed.json["sources"].as_array().cloned().unwrap_or_default().iter().map(source).collect();
        let results = match query.trim() {
            "" => None,
            q => {
                let found =
                    self.call(Method::POST, "/v1/knowledge/search", Some(json!({ "query": q, "limit": 5 }))).await?;
                Some(found.json["results"].as_array().cloned().unwrap_or_default().iter().map(result).collect())
            }
        };
        let gaps = self.call(Method::GET, "/v1/knowledge/gaps?days=30", None).await?;
        let body = PageBody::Knowledge(Knowledge {
            sources,
            knowledge_only: workspace["knowledge_only"].as_bool().unwrap_or(false),
            retrieval: text(&workspace["knowledge"]["retrieval"]),
            query: query.trim().to_owned(),
            results,
            gaps: gaps.json["gaps"].as_array().cloned().unwrap_or_default().iter().take(100).map(gap).collect(),
        });
        Ok(page("Knowledge", text(&workspace["name"]), notice, body))
    }

    async fn knowledge_refused(&self, answer: &super::shared::Answer) -> Result<Response, Response> {
        let status = if answer.status.is_client_error() { answer.status } else { StatusCode::BAD_GATEWAY };
        Ok(render(status, self.knowledge_page("", answer.problem()).await?))
    }

    /// Adds a source; back to the page.
    async fn add_source(&self, body: Value) -> Result<Response, Response> {
        let answer = self.call(Method::POST, "/v1/knowledge/sources", Some(body)).await?;
        if !answer.ok() {
            return self.knowledge_refused(&answer).await;
        }
        Ok(Redirect::to("/console/knowledge?done=added").into_response())
    }
}

fn source(value: &Value) -> KnowledgeSource {
    let optional = |key: &str| value[key].as_str().map(str::to_owned);
    KnowledgeSource {
        id: text(&value["id"]),
        kind: text(&value["kind"]),
        name: text(&value["name"]),
        url: optional("url"),
        status: text(&value["status"]),
        pages: value["pages"].as_i64().unwrap_or(0),
        chunks: value["chunks"].as_i64().unwrap_or(0),
        last_synced_at: optional("last_synced_at"),
        next_sync_at: optional("next_sync_at"),
        error: optional("error"),
        errors: value["errors"]
            .as_array()
            .map(|errors| errors.iter().map(|e| (text(&e["url"]), text(&e["message"]))).collect())
            .unwrap_or_default(),
    }
}

fn result(value: &Value) -> KnowledgeResult {
    KnowledgeResult {
        url: text(&value["url"]),
        title: text(&value["title"]),
        section: text(&value["section"]),
        snippet: text(&value["snippet"]),
    }
}

fn gap(value: &Value) -> KnowledgeGap {
    KnowledgeGap {
        question: text(&value["question"]),
        count: value["count"].as_u64().unwrap_or(0),
        also_asked: value["also_asked"].as_array().map(|a| a.iter().map(text).collect()).unwrap_or_default(),
        last_asked_at: text(&value["last_asked_at"]),
    }
}

pub(super) async fn knowledge(console: InWorkspace, Query(query): Query<KnowledgeQuery>) -> Result<Response, Response> {
    let said = match query.done.as_str() {
        "added" => notice("Added: its first sync has started."),
        "syncing" => notice("Syncing now."),
        "removed" => notice("Removed, with everything read from it."),
        "saved" => notice("Saved."),
        _ => None,
    };
    Ok(render(StatusCode::OK, console.knowledge_page(&query.q, said).await?))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct SourceForm {
    kind: String,
    url: String,
}

pub(super) async fn add_source(console: InWorkspace, Form(form): Form<SourceForm>) -> Result<Response, Response> {
    let url = form.url.trim();
    let body = match form.kind.as_str() {
        "sitemap" => json!({ "kind": "sitemap", "url": url }),
        "crawl" => json!({ "kind": "url", "url": url, "crawl": {} }),
        _ => json!({ "kind": "url", "url": url }),
    };
    console.add_source(body).await
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct SnippetForm {
    title: String,
    text: String,
    url: String,
}

pub(super) async fn add_snippet(console: InWorkspace, Form(form): Form<SnippetForm>) -> Result<Response, Response> {
    let mut body = json!({ "kind": "text", "title": form.title, "text": form.text });
    if !form.url.trim().is_empty() {
        body["url"] = json!(form.url.trim());
    }
    console.add_source(body).await
}

/// Uploads the form's file to the API as it came (multipart), then adds it.
pub(super) async fn add_file(console: InWorkspace, request: Request) -> Result<Response, Response> {
    let content_type = request.headers().get(header::CONTENT_TYPE).cloned();
    let Some(content_type) = content_type.filter(|t| t.to_str().is_ok_and(|t| t.starts_with("multipart/form-data")))
    else {
        return Ok(render(
            StatusCode::BAD_REQUEST,
            console.knowledge_page("", problem("Choose a file to upload.")).await?,
        ));
    };
    let bytes = match axum::body::to_bytes(request.into_body(), MAX_FORM_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => {
            let why = problem("The file is too large.");
            return Ok(render(StatusCode::PAYLOAD_TOO_LARGE, console.knowledge_page("", why).await?));
        }
    };
    let uploaded = console.call_raw(Method::POST, "/v1/knowledge/files", content_type, Body::from(bytes)).await?;
    if !uploaded.ok() {
        return console.knowledge_refused(&uploaded).await;
    }
    console.add_source(json!({ "kind": "file", "attachment_id": uploaded.json["id"] })).await
}

pub(super) async fn sync_source(console: InWorkspace, Path(id): Path<String>) -> Result<Response, Response> {
    let answer = console.call(Method::POST, &format!("/v1/knowledge/sources/{}/sync", segment(&id)), None).await?;
    if !answer.ok() {
        return console.knowledge_refused(&answer).await;
    }
    Ok(Redirect::to("/console/knowledge?done=syncing").into_response())
}

pub(super) async fn remove_source(console: InWorkspace, Path(id): Path<String>) -> Result<Response, Response> {
    let answer = console.call(Method::DELETE, &format!("/v1/knowledge/sources/{}", segment(&id)), None).await?;
    if !answer.ok() {
        return console.knowledge_refused(&answer).await;
    }
    Ok(Redirect::to("/console/knowledge?done=removed").into_response())
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct OnlyForm {
    knowledge_only: String,
}

pub(super) async fn save_only(console: InWorkspace, Form(form): Form<OnlyForm>) -> Result<Response, Response> {
    let only = form.knowledge_only == "yes";
    let answer = console.call(Method::PATCH, "/v1/workspace", Some(json!({ "knowledge_only": only }))).await?;
    if !answer.ok() {
        return console.knowledge_refused(&answer).await;
    }
    Ok(Redirect::to("/console/knowledge?done=saved").into_response())
}
