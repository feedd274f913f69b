//! Resuming a turn's stream (`GET /v1/turns/{turn_id}/events`): a client
//! that lost its connection gets exactly the events after the last one it
//! saw (`Last-Event-ID`), then the rest as they come, from the stored
//! events, so any replica can serve it and the model is never asked again.
//! A turn whose process died ends, for the client, as `interrupted`.

use std::collections::VecDeque;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::i18n;
use widget::wire::{EventKind, StopReason, TurnDone, TurnError};

use super::state::ApiState;
use crate::auth::Caller;
use crate::db::Pool;
use crate::db::turn_events::{self, StoredEvent};
use crate::http::ApiError;

/// How long after a turn's end its last events may still be on their way
/// to the database.
const SETTLE_MS: i64 = 3_000;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(resume_turn))
}

/// Resumes a turn's stream after the event `Last-Event-ID` names.
///
/// Every event of a turn's stream has an `id`; a client that lost the
/// connection asks again with the last one it saw (none: from the start)
/// and receives exactly the events it missed, then the live rest, on any
/// replica. Events are kept for an hour after the turn ended.
#[utoipa::path(
    get,
    path = "/v1/turns/{turn_id}/events",
    tag = "chat",
    security(("embed_token" = [])),
    params(
        ("turn_id" = String, Path, description = "The `turn_id` of the stream's `turn` event"),
        ("Last-Event-ID" = Option<u32>, Header, nullable = false, minimum = 0, maximum = 2147483647, description = "The `id` of the last event received"),
    ),
    responses(
        (status = 200, description = super::openapi::TURN_STREAM, content_type = "text/event-stream", body = String),
    ),
)]
async fn resume_turn(
    State(state): State<ApiState>,
    caller: Caller,
    Path(turn_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = match headers.get("last-event-id").map(|v| v.to_str().map(str::trim)) {
        None => 0,
        Some(Ok(text)) => text
            .parse::<i32>()
            .ok()
            .filter(|id| *id >= 0)
            .ok_or_else(|| ApiError::BadRequest("Last-Event-ID must be the id of an event of this turn".into()))?
            .into(),
        Some(Err(_)) => return Err(ApiError::BadRequest("Last-Event-ID is not text".into())),
    };
    replay(&state, caller, turn_id, after).await
}

/// The stream of the caller's turn `turn_id` after its event `after` (0:
/// from the start), from the stored events, then live until its `done`:
/// `404` when the turn is not the caller's.
pub async fn replay(state: &ApiState, caller: Caller, turn_id: String, after: i64) -> Result<Response, ApiError> {
    let owned = turn_events::owned_turn(&state.pool, &turn_id, &caller.workspace_id, &caller.external_user_id).await?;
    if owned.is_none() {
        return Err(ApiError::NotFound);
    }
    let Some(slot) = state.streams.try_open() else {
        state.limits.refused(&caller.workspace_id, "open_streams");
        return Err(ApiError::Overloaded(Duration::from_secs(5)));
    };
    let follow = Follow {
        // Before the first read: a write after it rings this bell.
        bell: state.pool.bell(&turn_id),
        pool: state.pool.clone(),
        caller,
        turn_id,
        after,
        queued: VecDeque::new(),
        over: false,
        stale_ms: longest_turn(state).as_millis() as i64,
        _slot: slot,
    };
    let events = futures::stream::unfold(follow, |mut follow| async move {
        let event = follow.next().await?;
        Some((Ok::<_, std::convert::Infallible>(event), follow))
    })
    .boxed();
    let stream = Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("ping"));
    Ok(([(HeaderName::from_static("x-accel-buffering"), "no")], stream).into_response())
}

/// A resumed stream's place.
struct Follow {
    /// Rung when the turn's next events are stored, here or on another
    /// replica: the stream reads the database only then.
    bell: crate::db::bells::Bell,
    pool: Pool,
    caller: Caller,
    turn_id: String,
    /// The last event sent.
    after: i64,
    queued: VecDeque<StoredEvent>,
    /// `done` was sent.
    over: bool,
    stale_ms: i64,
    /// Counted among the process's open streams while it lasts.
    _slot: crate::limits::StreamSlot,
}

impl Follow {
    /// The next event; `None` once `done` went out (or the turn is gone).
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                self.after = event.seq;
                self.over = event.kind == EventKind::Done.as_str();
                return Some(sse_event(event.seq as u64, &event.kind, &event.data));
            }
            if self.over {
                return None;
            }
            self.pool.bells().looked();
            match turn_events::after(&self.pool, &self.turn_id, self.after, 200).await {
                Ok(events) if !events.is_empty() => {
                    self.queued.extend(events);
                    continue;
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(error = format!("{error:#}"), "cannot read a turn's events");
                    return None;
                }
            }
            match self.queue_end().await {
                End::Queued => {}
                End::Gone => return None,
                // Nothing to read until the turn's next events are stored,
                // or until it may have to be called over.
                End::NotBefore(at_ms) => {
                    let wait = Duration::from_millis((at_ms - crate::ids::now_ms()).max(1) as u64);
                    let _ = tokio::time::timeout(wait, self.bell.rung()).await;
                }
            }
        }
    }

    /// When the turn is over (or its process died) and no `done` will
    /// come: queues its end as the client must hear it (an `error` first
    /// when it was interrupted); else when it may be over at the latest.
    async fn queue_end(&mut self) -> End {
        // The client already has the turn's `done`: nothing more will come.
        if let Ok(Some((seq, kind))) = turn_events::last_kind(&self.pool, &self.turn_id).await
            && kind == EventKind::Done.as_str()
            && seq <= self.after
        {
            self.over = true;
            return End::Queued;
        }
        let c = &self.caller;
        let state = match turn_events::owned_turn(&self.pool, &self.turn_id, &c.workspace_id, &c.external_user_id).await
        {
            Ok(Some(state)) => state,
            // Erased while it was followed.
            Ok(None) => return End::Gone,
            Err(error) => {
                tracing::warn!(error = format!("{error:#}"), "cannot read a turn");
                return End::NotBefore(crate::ids::now_ms() + 1_000);
            }
        };
        let now = crate::ids::now_ms();
        let reason = match state.finished_at {
            Some(at) if now - at > SETTLE_MS => {
                state.stop_reason.as_deref().and_then(StopReason::parse).unwrap_or(StopReason::Interrupted)
            }
            None if now - state.started_at > self.stale_ms => StopReason::Interrupted,
            Some(at) => return End::NotBefore(at + SETTLE_MS + 1),
            None => return End::NotBefore(state.started_at + self.stale_ms + 1),
        };
        let mut seq = self.after;
        if reason == StopReason::Interrupted {
            seq += 1;
            let error = TurnError {
                // In the language the conversation's user reads.
                message: i18n::text(crate::db::reads(state.lang.as_deref()), "error_interrupted"),
                code: "turn_interrupted".into(),
            };
            self.queued.push_back(StoredEvent { seq, kind: EventKind::Error.as_str().into(), data: json(&error) });
        }
        let done = TurnDone { stop_reason: reason, sources: Vec::new() };
        self.queued.push_back(StoredEvent { seq: seq + 1, kind: EventKind::Done.as_str().into(), data: json(&done) });
        End::Queued
    }
}

/// What [`Follow::queue_end`] found.
enum End {
    /// The end is queued (or was sent).
    Queued,
    /// The turn is gone (erased): the stream ends.
    Gone,
    /// Not over: look again when rung, or at this time (ms) at the latest.
    NotBefore(i64),
}

/// A wire type as the JSON of an event's `data`.
fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("wire types serialize")
}

/// Longer than any turn may run: a turn still unfinished after this had
/// its process die.
pub fn longest_turn(state: &ApiState) -> Duration {
    state.engine.limits.longest_turn()
}

/// An event of a turn's stream: its number, name and JSON.
pub fn sse_event(seq: u64, kind: &str, data: &str) -> Event {
    Event::default().id(seq.to_string()).event(kind).data(data)
}
