//! Secrets and data: rotating the embed secret and the api key with a
//! grace period shown, retention, and erasing a user after an explicit
//! confirmation.

use ::console::{Body as PageBody, Notice, Operations, Page};
use axum::extract::{Form, Query};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::shared::{Done, InWorkspace, Signed, notice, page, problem, render, segment, text};
use crate::db;
use crate::secret::Secret;

impl Signed {
    /// The secrets-and-data page of the session's workspace.
    async fn operations_page(&self, notice: Option<Notice>) -> Result<Page, Response> {
        let workspace = self.workspace().await?;
        let until = |key: &str| workspace[key].as_str().map(str::to_owned);
        let body = PageBody::Operations(Operations {
            embed_secret_kid: text(&workspace["embed_secret_kid"]),
            previous_embed_secret_until: until("previous_embed_secret_valid_until"),
            previous_api_key_until: until("previous_api_key_valid_until"),
            new_secret: None,
            retention_days: workspace["retention_days"].as_u64(),
            erased: None,
        });
        Ok(page("Secrets and data", text(&workspace["name"]), notice, body))
    }

    /// The page again with what the API refused, at its status.
    async fn operations_refused(&self, status: StatusCode, notice: Option<Notice>) -> Result<Response, Response> {
        Ok(render(status, self.operations_page(notice).await?))
    }
}

pub(super) async fn operations(console: InWorkspace, Query(done): Query<Done>) -> Result<Response, Response> {
    Ok(render(StatusCode::OK, console.operations_page(done.notice()).await?))
}

#[derive(Deserialize)]
pub(super) struct RotateForm {
    grace_seconds: String,
}

pub(super) async fn rotate_embed_secret(
    console: InWorkspace,
    Form(form): Form<RotateForm>,
) -> Result<Response, Response> {
    rotate(console, form, "/v1/workspace/embed-secret/rotate", "embed_secret", "embed secret").await
}

pub(super) async fn rotate_api_key(console: InWorkspace, Form(form): Form<RotateForm>) -> Result<Response, Response> {
    rotate(console, form, "/v1/workspace/api-key/rotate", "api_key", "api key").await
}

/// Rotates a secret; the new one is shown this once. A new api key also
/// becomes this session's, so the console keeps working after the grace.
async fn rotate(
    mut console: InWorkspace,
    form: RotateForm,
    path: &str,
    field: &str,
    what: &str,
) -> Result<Response, Response> {
    let grace = form.grace_seconds.trim();
    let grace = grace.parse::<u64>().map_or_else(|_| json!(grace), |g| json!(g));
    let answer = console.call(Method::POST, path, Some(json!({ "grace_seconds": grace }))).await?;
    if !answer.ok() {
        return console.operations_refused(answer.status, answer.problem()).await;
    }
    let secret = text(&answer.json[field]);
    if field == "api_key" {
        let state = &console.state;
        let stored = db::console::set_key(&state.pool, &console.session.token_hash, &state.vault.seal(&secret)).await;
        if let Err(e) = stored {
            tracing::error!(error = format!("{e:#}"), "console: cannot keep the new api key in the session");
        }
        console.session.key = Secret::new(secret.clone());
    }
    let mut page = console.operations_page(notice(format!("A new {what} is made."))).await?;
    if let PageBody::Operations(operations) = &mut page.body {
        operations.new_secret = Some((what.to_owned(), secret));
    }
    Ok(render(StatusCode::OK, page))
}

#[derive(Deserialize)]
pub(super) struct RetentionForm {
    #[serde(default)]
    days: String,
}

pub(super) async fn save_retention(
    console: InWorkspace,
    Form(form): Form<RetentionForm>,
) -> Result<Response, Response> {
    let days = match form.days.trim() {
        "" => Value::Null,
        days => days.parse::<u64>().map_or_else(|_| json!(days), |d| json!(d)),
    };
    let answer = console.call(Method::PATCH, "/v1/workspace", Some(json!({ "retention_days": days }))).await?;
    if !answer.ok() {
        return console.operations_refused(answer.status, answer.problem()).await;
    }
    Ok(Redirect::to("/console/operations?done=saved").into_response())
}

#[derive(Deserialize)]
pub(super) struct EraseForm {
    user: String,
    #[serde(default)]
    confirm: String,
}

/// Erases everything stored for a user, once the box is ticked; the page
/// shows what went.
pub(super) async fn erase_user(console: InWorkspace, Form(form): Form<EraseForm>) -> Result<Response, Response> {
    let user = form.user.trim();
    if form.confirm != "yes" || user.is_empty() {
        let why = problem("Name the user and tick the box: an erasure cannot be undone.");
        return console.operations_refused(StatusCode::BAD_REQUEST, why).await;
    }
    let answer = console.call(Method::DELETE, &format!("/v1/users/{}", segment(user)), None).await?;
    if !answer.ok() {
        return console.operations_refused(answer.status, answer.problem()).await;
    }
    let counts: Vec<(String, u64)> = answer.json["deleted"]
        .as_object()
        .map(|d| d.iter().map(|(k, v)| (k.replace('_', " "), v.as_u64().unwrap_or(0))).collect())
        .unwrap_or_default();
    let mut page = console.operations_page(notice("Erased.")).await?;
    if let PageBody::Operations(operations) = &mut page.body {
        operations.erased = Some((user.to_owned(), counts));
    }
    Ok(render(StatusCode::OK, page))
}
