//! Attachments (issue #32): a visitor uploads a file with the embed token
//! (`POST /v1/attachments`, `multipart/form-data`, the file in the field
//! `file`) and reads it back (`GET /v1/attachments/{id}/content`). The
//! upload is spooled to a file as it arrives and refused as soon as it is
//! larger than taken (`413`); its type is sniffed from its bytes against
//! the allowlist (`415`); an image is encoded again without its metadata.
//! An attachment is its user's own: anyone else gets `404`. One not sent
//! with a message yet may be deleted by its owner
//! (`DELETE /v1/attachments/{id}`: the widget's remove button).

use axum::Json;
use axum::body::Body;
use axum::extract::multipart::{Field, Multipart, MultipartRejection};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::state::ApiState;
use crate::attachments::{self, HEAD, Kind, Refused, Spooled};
use crate::auth::Caller;
use crate::db;
use crate::http::{ApiError, ApiQuery};
use crate::ids::new_id;
use crate::limits::Refusal;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(upload))
        // The upload counts its own bytes against `CA_MAX_ATTACHMENT_BYTES`.
        .layer(DefaultBodyLimit::disable())
        .merge(OpenApiRouter::new().routes(routes!(content)).routes(routes!(remove)))
}

/// An attachment as kept.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AttachmentView {
    /// Its id, for a turn's `attachment_ids`.
    pub id: String,
    /// The file's name as the browser sent it (its last part, without
    /// control characters or direction marks).
    pub name: String,
    /// As sniffed from the bytes: `image/png`, `image/jpeg`, `image/webp`,
    /// `application/pdf` or `text/plain` (a GIF is kept as the PNG of its
    /// first frame).
    pub media_type: String,
    /// Bytes, as kept (an image encoded again).
    pub size: u64,
}

/// The upload form (documentation only: the body is read as it streams).
#[derive(utoipa::ToSchema)]
#[allow(dead_code, reason = "describes the multipart body in the OpenAPI document")]
struct UploadForm {
    /// The file (one per request).
    #[schema(format = Binary, content_media_type = "application/octet-stream")]
    file: String,
}

/// Uploads a file for the caller's next messages.
#[utoipa::path(
    post,
    path = "/v1/attachments",
    tag = "chat",
    security(("embed_token" = [])),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "The attachment as kept", body = AttachmentView),
        (status = 400, description = "No `file` field, or not a multipart body", body = crate::http::ErrorBody),
        (status = 413, description = "Larger than taken (`too_large`), or an image of too many pixels (`image_too_large`)", body = crate::http::ErrorBody),
        (status = 415, description = "A type not taken, by its bytes (`unsupported_type`), or not readable as its type (`unreadable_file`)", body = crate::http::ErrorBody),
        (status = 429, description = "The user's or the workspace's bytes for the day are used up (`quota_exceeded`, with `Retry-After`)", body = crate::http::ErrorBody),
    ),
)]
async fn upload(
    State(state): State<ApiState>,
    caller: Caller,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<(StatusCode, Json<AttachmentView>), ApiError> {
    let store = &state.attachments;
    let Received { name, spooled, head, size } = receive(multipart, store).await?;
    let kind = attachments::kind::sniff(&head).ok_or_else(|| {
        ApiError::UnsupportedType(
            "unsupported_type",
            "this type of file is not accepted: PNG, JPEG, WebP and GIF images, PDF and plain text are".into(),
        )
    })?;
    // The workspace may take fewer kinds than the server does.
    if caller.attachment_types.as_ref().is_some_and(|types| !types.iter().any(|t| t == kind.media_type())) {
        return Err(ApiError::UnsupportedType(
            "unsupported_type",
            format!("this workspace does not accept {} files", kind.media_type()),
        ));
    }
    if let Err(Refusal::TooMany { retry_after, .. }) = state.limits.admit_attachment(&caller, size).await? {
        return Err(ApiError::QuotaExceeded(retry_after));
    }
    let row = match keep(&state, &caller.workspace_id, &caller.external_user_id, &name, kind, spooled.path()).await? {
        Ok(row) => row,
        Err(refused @ Refused::TooManyPixels(..)) => {
            return Err(ApiError::TooLarge("image_too_large", refused.to_string()));
        }
        Err(refused) => return Err(ApiError::UnsupportedType("unreadable_file", refused.to_string())),
    };
    let (id, size) = (row.id.clone(), row.size as u64);
    let detail = serde_json::json!({ "attachment_id": id, "media_type": row.media_type, "size": size });
    db::audit::record(
        &state.pool,
        "end-user",
        "attachment.uploaded",
        Some(&caller.workspace_id),
        Some(&caller.external_user_id),
        &detail,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(AttachmentView { id, name, media_type: row.media_type, size })))
}

/// A form's `file` field, spooled.
/// Keeps a spooled file of `kind` in the store and its row, owned by
/// `owner` in the workspace (a visitor, or the host's own files): the row,
/// or why the store refused the bytes. The upload, a knowledge file and an
/// assistant test's file all keep theirs here.
pub(super) async fn keep(
    state: &ApiState,
    workspace_id: &str,
    owner: &str,
    name: &str,
    kind: attachments::kind::Kind,
    spooled: &std::path::Path,
) -> anyhow::Result<Result<db::attachments::Attachment, Refused>> {
    let id = new_id("att");
    let key = format!("{workspace_id}/{id}");
    let kept = match state.attachments.keep(&key, kind, spooled).await? {
        Ok(kept) => kept,
        Err(refused) => return Ok(Err(refused)),
    };
    let row = db::attachments::Attachment {
        id,
        workspace_id: workspace_id.to_owned(),
        external_user_id: owner.to_owned(),
        name: name.to_owned(),
        media_type: kept.kind.media_type().to_owned(),
        size: i64::try_from(kept.size).unwrap_or(i64::MAX),
        sha256: kept.sha256,
        object_key: key,
        created_at: state.clock.now_ms(),
    };
    db::attachments::insert(&state.pool, &row).await?;
    Ok(Ok(row))
}

pub(super) struct Received {
    /// Its name as the browser sent it, made displayable.
    pub name: String,
    pub spooled: Spooled,
    /// Its first [`HEAD`] bytes, to judge its kind by.
    pub head: Vec<u8>,
    pub size: u64,
}

/// The form's `file` field, written to a spool file as it arrives and
/// refused once larger than the store takes (the other fields are skipped).
pub(super) async fn receive(
    multipart: Result<Multipart, MultipartRejection>,
    store: &attachments::Attachments,
) -> Result<Received, ApiError> {
    let mut multipart =
        multipart.map_err(|e| ApiError::BadRequest(format!("a multipart/form-data body is required: {e}")))?;
    loop {
        let field = multipart.next_field().await.map_err(|e| ApiError::BadRequest(format!("unreadable form: {e}")))?;
        let Some(field) = field else { return Err(ApiError::BadRequest("the form has no `file` field".into())) };
        if field.name() != Some("file") {
            continue;
        }
        let name = attachments::display_name(field.file_name());
        let spooled = store.spool_file().await?;
        let (head, size) = spool(field, &spooled, store.max_bytes).await?;
        return Ok(Received { name, spooled, head, size });
    }
}

/// Writes the field to the spool file as it arrives, refusing it once it
/// is larger than `max` bytes; its first [`HEAD`] bytes and its size.
async fn spool(mut field: Field<'_>, spooled: &Spooled, max: u64) -> Result<(Vec<u8>, u64), ApiError> {
    let mut file = tokio::fs::File::create(spooled.path()).await.map_err(anyhow::Error::from)?;
    let (mut size, mut head) = (0u64, Vec::with_capacity(HEAD));
    while let Some(chunk) = field.next().await {
        let chunk = chunk.map_err(|e| ApiError::BadRequest(format!("the upload broke off: {e}")))?;
        size += chunk.len() as u64;
        if size > max {
            return Err(ApiError::TooLarge("too_large", format!("the file is larger than the {max} bytes accepted")));
        }
        if head.len() < HEAD {
            head.extend_from_slice(&chunk[..chunk.len().min(HEAD - head.len())]);
        }
        file.write_all(&chunk).await.map_err(anyhow::Error::from)?;
    }
    file.flush().await.map_err(anyhow::Error::from)?;
    Ok((head, size))
}

/// Deletes an attachment of the caller's not sent with a message yet
/// (the visitor removed it before sending): its row, then its bytes.
///
/// One already sent is part of its conversation: `409 attachment_sent`
/// (it goes with the user's data, `DELETE /v1/users/{id}`, or by retention).
#[utoipa::path(
    delete,
    path = "/v1/attachments/{id}",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "An attachment of the caller's")),
    responses(
        (status = 204, description = "Deleted, row and bytes"),
        (status = 404, description = "No such attachment of the caller's", body = crate::http::ErrorBody),
        (status = 409, description = "Sent with a message already (`attachment_sent`)", body = crate::http::ErrorBody),
    ),
)]
async fn remove(State(state): State<ApiState>, caller: Caller, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    if id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    let (workspace_id, user) = (&caller.workspace_id, &caller.external_user_id);
    let Some(key) = db::attachments::delete_unsent(&state.pool, workspace_id, user, &id).await? else {
        return Err(match db::attachments::owned(&state.pool, workspace_id, user, &id).await? {
            Some(_) => ApiError::Conflict("attachment_sent", "the attachment was sent with a message".into()),
            None => ApiError::NotFound,
        });
    };
    state.attachments.remove(&key).await?;
    let detail = serde_json::json!({ "attachment_id": id });
    db::audit::record(&state.pool, "end-user", "attachment.deleted", Some(workspace_id), Some(user), &detail).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A tool's signed link: `exp` (seconds) and `sig` (hex).
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct LinkQuery {
    /// A signed link's expiry (Unix seconds): with `sig`, no token is asked.
    #[param(max_length = 20)]
    exp: Option<String>,
    /// A signed link's signature, as the engine put it in a tool's arguments.
    #[param(max_length = 128)]
    sig: Option<String>,
}

/// An attachment's file: its owner's (embed token), or a tool's by the
/// short-lived signed link the engine gave it.
#[utoipa::path(
    get,
    path = "/v1/attachments/{id}/content",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "An attachment of the caller's"), LinkQuery),
    responses(
        (status = 200, description = "The file, with its media type; `nosniff`, a sandboxing CSP, and `attachment` but for images shown to their owner",
         content(
            (String = "image/png"),
            (String = "image/jpeg"),
            (String = "image/webp"),
            (String = "application/pdf"),
            (String = "text/plain"),
         )),
        (status = 404, description = "No such attachment of the caller's, or a link that is wrong or expired", body = crate::http::ErrorBody),
    ),
)]
async fn content(
    State(state): State<ApiState>,
    caller: Result<Caller, ApiError>,
    Path(id): Path<String>,
    ApiQuery(link): ApiQuery<LinkQuery>,
) -> Result<Response, ApiError> {
    if id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    let (attachment, inline) = match (&link.exp, &link.sig) {
        // A tool's link: that file, until it expires; always a download.
        (Some(exp), Some(sig)) => {
            let attachment = db::attachments::by_id(&state.pool, &id).await?.ok_or(ApiError::NotFound)?;
            let now = state.clock.now_ms();
            if !state.attachments.links().verify(&attachment.workspace_id, &id, exp, sig, now) {
                return Err(ApiError::NotFound);
            }
            (attachment, false)
        }
        (None, None) => {
            let caller = caller?;
            let attachment = db::attachments::owned(&state.pool, &caller.workspace_id, &caller.external_user_id, &id)
                .await?
                .ok_or(ApiError::NotFound)?;
            let image = Kind::from_media_type(&attachment.media_type).is_some_and(Kind::is_image);
            (attachment, image)
        }
        _ => return Err(ApiError::NotFound),
    };
    let found = state.attachments.open(&attachment.object_key).await?;
    Ok(file_response(&attachment, found.into_stream().map(|chunk| chunk.map_err(std::io::Error::other)), inline))
}

/// A kept file as an answer: its own media type, never sniffed, never
/// run (a sandboxing CSP), kept private; shown in place only when asked
/// (an image in the widget), else downloaded under its name.
pub fn file_response<S>(attachment: &db::attachments::Attachment, body: S, inline: bool) -> Response
where
    S: futures::Stream<Item = Result<axum::body::Bytes, std::io::Error>> + Send + 'static,
{
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    let media_type =
        if attachment.media_type == "text/plain" { "text/plain; charset=utf-8" } else { &attachment.media_type };
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(media_type).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(attachment.size.max(0) as u64));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'; sandbox"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=300"));
    let disposition = format!(
        "{}; filename*=UTF-8''{}",
        if inline { "inline" } else { "attachment" },
        url::form_urlencoded::byte_serialize(attachment.name.as_bytes()).collect::<String>().replace('+', "%20")
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}
