//! Chat turns (assistant-api.md §3): `POST /v1/chat/turns` streams a turn
//! as server-sent events; `POST /v1/turns/{id}/stop` cancels one.

use crate::limits::TurnSlot;
use std::time::Duration;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::UnboundedReceiverStream;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::TurnRequest;

use super::resume::{longest_turn, sse_event};
use super::state::ApiState;
use crate::auth::Caller;
use crate::client_addr::ClientAddr;
use crate::db;
use crate::db::idempotency::{Claim, KeyOf};
use crate::engine::events::EventSink;
use crate::engine::{TurnInput, TurnStart, UserMessage};
use crate::http::{ApiError, ApiJson};
use crate::ids::new_id;
use crate::limits::Refusal;

/// Longest user message accepted, in characters.
pub const MAX_MESSAGE_CHARS: usize = 8_000;
/// Most attachments one message sends.
const MAX_ATTACHMENTS: usize = 8;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(create_turn)).routes(routes!(stop_turn))
}

/// Starts a turn and streams its events.
///
/// A new conversation when `conversation_id` is absent. The turn runs on
/// its own task: a closed stream does not lose the answer, which is saved
/// either way. `409 turn_in_progress` while another turn of the
/// conversation runs; `429 rate_limited` (the user, the client address or
/// the workspace used its minute) and `503 overloaded` say when to try
/// again in `Retry-After`.
///
/// **Idempotent sends.** With an `Idempotency-Key` header (any 1 to 255
/// visible ASCII characters; a new one per message, e.g. a UUID), a send
/// whose answer was lost can be retried safely: the same key from the
/// same user within 24 hours answers the turn the first request started —
/// its stream from the start, then live, with `Idempotent-Replayed: true`
/// — instead of starting a second turn (the model is asked once). The
/// same key with a different body is `422 idempotency_key_reused`; while
/// the first request is still starting its turn, `409
/// idempotency_key_in_use`. A request that started no turn (refused,
/// invalid) leaves its key free. Keys are kept in the database: every
/// replica and a restart honour them.
#[utoipa::path(
    post,
    path = "/v1/chat/turns",
    tag = "chat",
    security(("embed_token" = [])),
    params(
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$",
         description = "A key of the client's for this message: a retry with it answers the same turn"),
    ),
    request_body = TurnRequest,
    responses(
        (status = 200, description = super::openapi::TURN_STREAM, content_type = "text/event-stream", body = String),
        (status = 422, description = "The `Idempotency-Key` came with another body before (`idempotency_key_reused`)", body = crate::http::ErrorBody),
        (status = 404, description = "The conversation, or an attachment, is not the caller's", body = crate::http::ErrorBody),
    ),
)]
async fn create_turn(
    State(state): State<ApiState>,
    caller: Caller,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<TurnRequest>,
) -> Result<Response, ApiError> {
    let message = request.message.trim().to_owned();
    // A photo may go alone; anything else needs words.
    if message.is_empty() && request.attachment_ids.is_empty() {
        return Err(ApiError::BadRequest("message must not be empty without attachments".into()));
    }
    if request.message.chars().count() > MAX_MESSAGE_CHARS {
        return Err(ApiError::BadRequest(format!("message must be at most {MAX_MESSAGE_CHARS} characters")));
    }
    if request.lang.as_ref().is_some_and(|l| l.chars().count() > 35) {
        return Err(ApiError::BadRequest("lang must be at most 35 characters".into()));
    }
    if request.attachment_ids.len() > MAX_ATTACHMENTS {
        return Err(ApiError::BadRequest(format!("attachment_ids must be at most {MAX_ATTACHMENTS}")));
    }
    let Some(key) = idempotency_key(&headers)? else {
        return start_turn(&state, caller, client.as_deref(), request).await.map(|(response, _)| response);
    };
    let body_hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(serde_json::to_vec(&request).map_err(anyhow::Error::from)?))
    };
    let (workspace_id, user) = (caller.workspace_id.clone(), caller.external_user_id.clone());
    let of = KeyOf { workspace_id: &workspace_id, external_user_id: &user, key: &key };
    if let Some(turn_id) = settle_key(&state, &of, &body_hash).await? {
        tracing::info!(%turn_id, "a send retried with its idempotency key: its turn again");
        let mut replayed = super::resume::replay(&state, caller, turn_id, 0).await?;
        replayed.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
        return Ok(replayed);
    }
    match start_turn(&state, caller, client.as_deref(), request).await {
        Ok((response, turn_id)) => {
            db::idempotency::bind(&state.pool, &of, &turn_id).await?;
            Ok(response)
        }
        Err(error) => {
            // Nothing started: the same key may try again.
            db::idempotency::forget(&state.pool, &of).await?;
            Err(error)
        }
    }
}

/// The `Idempotency-Key` header, if any: 1 to 255 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else { return Ok(None) };
    match value.to_str() {
        Ok(key) if (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()) => {
            Ok(Some(key.to_owned()))
        }
        _ => Err(ApiError::BadRequest("Idempotency-Key must be 1 to 255 visible ASCII characters".into())),
    }
}

/// How long a retry waits for the first request with its key to name its turn.
const KEY_IN_FLIGHT_WAIT: Duration = Duration::from_secs(5);

/// Claims the key for this request (`None`: start the turn), or the turn
/// it already started (`Some`); `422` when it came with another body,
/// `409` while its first request is still starting its turn.
async fn settle_key(state: &ApiState, of: &KeyOf<'_>, body_hash: &str) -> Result<Option<String>, ApiError> {
    let waited = std::time::Instant::now();
    loop {
        match db::idempotency::claim(&state.pool, of, body_hash, state.clock.now_ms()).await? {
            Claim::Ours => return Ok(None),
            Claim::Replay(turn_id) => return Ok(Some(turn_id)),
            Claim::Reused => {
                return Err(ApiError::Unprocessable(
                    "idempotency_key_reused",
                    "This Idempotency-Key was sent with another message. Use a new key for each message.".into(),
                ));
            }
            Claim::InFlight if waited.elapsed() < KEY_IN_FLIGHT_WAIT => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Claim::InFlight => {
                return Err(ApiError::Conflict(
                    "idempotency_key_in_use",
                    "A request with this Idempotency-Key is still starting its reply. Try again.".into(),
                ));
            }
        }
    }
}

/// Starts the turn `request` asks for: its stream and its id.
async fn start_turn(
    state: &ApiState,
    caller: Caller,
    client: Option<&ClientAddr>,
    request: TurnRequest,
) -> Result<(Response, String), ApiError> {
    let text = request.message.trim().to_owned();
    // The caller's own attachments only: anyone else's (or no such id) is
    // not found. One named twice is sent once.
    let mut attachments: Vec<db::attachments::Attachment> = Vec::with_capacity(request.attachment_ids.len());
    for id in &request.attachment_ids {
        if attachments.iter().any(|a| &a.id == id) {
            continue;
        }
        let found = match id.len() {
            1..=64 => db::attachments::owned(&state.pool, &caller.workspace_id, &caller.external_user_id, id).await?,
            _ => None,
        };
        attachments.push(found.ok_or(ApiError::NotFound)?);
    }
    let admitted = admit(state, &caller, client).await?;
    let mut message = UserMessage { text, attachments, saved_as: None };
    let asked = request.lang.as_deref().and_then(widget::wire::i18n::spoken);
    // The language the conversation is read in: the one this request
    // names (kept for later turns), else the one kept.
    let (conversation_id, turn_id, start, lang) = match request.conversation_id {
        Some(id) => {
            let (workspace, user) = (&caller.workspace_id, &caller.external_user_id);
            // Claimed, touched and the user's message written in one call,
            // when the conversation is theirs and free; else one step at a time.
            let turn_id = new_id("turn");
            let continued =
                db::continue_conversation(&state.pool, &id, workspace, user, asked, &turn_id, &message.text).await?;
            if let db::Continued::Claimed { lang, message_id } = continued {
                message.saved_as = message_id;
                let lang = lang.as_deref().and_then(widget::wire::i18n::spoken);
                (id, turn_id, TurnStart::Message(message), lang)
            } else {
                let owned =
                    db::owned_conversation(&state.pool, &id, workspace, user).await?.ok_or(ApiError::NotFound)?;
                let turn_id = claim(state, &owned.id).await?;
                let kept = owned.lang.as_deref().and_then(widget::wire::i18n::spoken);
                if let Some(lang) = asked.filter(|asked| Some(*asked) != kept) {
                    db::set_conversation_lang(&state.pool, &owned.id, lang).await?;
                }
                (owned.id, turn_id, TurnStart::Message(message), asked.or(kept))
            }
        }
        None => {
            // A photo sent alone names the conversation by its file.
            let named = message.attachments.first().filter(|_| message.text.is_empty()).map(|a| a.name.as_str());
            let title: String = named.unwrap_or(&message.text).chars().take(60).collect();
            let (workspace, user) = (&caller.workspace_id, &caller.external_user_id);
            // Written with its first turn claimed and the user's message.
            let turn_id = new_id("turn");
            let (id, message_id) =
                db::create_conversation_with_turn(&state.pool, workspace, user, &title, asked, &turn_id, &message.text)
                    .await?;
            message.saved_as = Some(message_id);
            (id, turn_id, TurnStart::FirstMessage(message), asked)
        }
    };
    let lang = lang.unwrap_or_else(|| db::reads(None));
    Ok((stream_turn(state, admitted, caller, conversation_id, turn_id.clone(), start, lang), turn_id))
}

/// A turn let in: its place among the turns this process runs (held
/// until the turn ends), and whether its caller may still spend model
/// tokens today (read with the minute's counts).
pub struct Admitted {
    pub slot: TurnSlot,
    pub within_budget: bool,
}

/// Admits a new turn of `caller`, before anything is written: its place
/// among the turns this process runs (pass it to [`stream_turn`]); `503`
/// when they are as many as it may run, `429` when the user, the client
/// address or the workspace has used its minute (both with `Retry-After`).
pub async fn admit(state: &ApiState, caller: &Caller, client: Option<&ClientAddr>) -> Result<Admitted, ApiError> {
    let Some(slot) = state.turn_slots.try_take() else {
        state.limits.refused(&caller.workspace_id, "concurrent_turns");
        return Err(ApiError::Overloaded(Duration::from_secs(5)));
    };
    let ip = client.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |c| c.ip);
    match state.limits.admit_turn(caller, ip).await? {
        Ok(within_budget) => Ok(Admitted { slot, within_budget }),
        Err(Refusal::TooMany { retry_after, .. }) => Err(ApiError::TooManyRequests(retry_after)),
    }
}

/// Claims the conversation for a new turn, on whichever replica: `409
/// turn_in_progress` while another one of it runs. A turn whose process
/// died is taken for interrupted once it is older than a turn may get.
pub async fn claim(state: &ApiState, conversation_id: &str) -> Result<String, ApiError> {
    let turn_id = new_id("turn");
    let longest = longest_turn(state);
    let now = crate::ids::now_ms();
    if !db::limits::claim_turn(&state.pool, &turn_id, conversation_id, now, now - longest.as_millis() as i64).await? {
        return Err(ApiError::TurnInProgress);
    }
    Ok(turn_id)
}

/// Gives back a claim whose turn will not run after all.
pub async fn release(state: &ApiState, turn_id: &str) {
    if let Err(error) = db::limits::release_turn(&state.pool, turn_id).await {
        tracing::error!(error = format!("{error:#}"), "cannot release the conversation");
    }
}

/// Runs a turn on its own task and streams its events; a heartbeat
/// comment (`: ping`) keeps an idle stream open, and `X-Accel-Buffering:
/// no` keeps a buffering proxy (nginx) from holding events back.
pub fn stream_turn(
    state: &ApiState,
    admitted: Admitted,
    caller: Caller,
    conversation_id: String,
    turn_id: String,
    start: TurnStart,
    lang: &'static str,
) -> Response {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let cancel = state.turns.start(&turn_id, &caller.workspace_id, &caller.external_user_id);
    let Admitted { slot, within_budget } = admitted;
    let input = TurnInput { caller, conversation_id, turn_id: turn_id.clone(), start, lang, test: None, within_budget };
    let engine = state.engine.clone();
    let turns = state.turns.clone();
    tokio::spawn(async move {
        let sink = EventSink::new(sender, engine.pool.clone(), turn_id.clone());
        engine.run_turn(input, sink, cancel).await;
        turns.finish(&turn_id);
        drop(slot);
    });
    let open = state.streams.open();
    let events = UnboundedReceiverStream::new(receiver).map(move |numbered| {
        let _counted = &open;
        Ok::<_, std::convert::Infallible>(sse_event(numbered.seq, numbered.event.kind().as_str(), &numbered.data))
    });
    let stream = Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("ping"));
    ([(HeaderName::from_static("x-accel-buffering"), "no")], stream).into_response()
}

/// Stops a running turn of the caller's; it ends with `cancelled`.
///
/// Works whichever replica runs the turn.
#[utoipa::path(
    post,
    path = "/v1/turns/{turn_id}/stop",
    tag = "chat",
    security(("embed_token" = [])),
    params(("turn_id" = String, Path, description = "The `turn_id` of the stream's `turn` event")),
    responses((status = 202, description = "The turn is being stopped")),
)]
async fn stop_turn(
    State(state): State<ApiState>,
    caller: Caller,
    Path(turn_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let here = state.turns.stop(&turn_id, &caller.workspace_id, &caller.external_user_id);
    // Recorded too, for the case where another replica runs the turn.
    let anywhere = db::request_stop(&state.pool, &turn_id, &caller.workspace_id, &caller.external_user_id).await?;
    if here || anywhere { Ok(StatusCode::ACCEPTED) } else { Err(ApiError::NotFound) }
}
