//! The stream events of a turn (assistant-api.md §3) and where they go.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use widget::wire::{
    ComponentEvent, DisplayCards, ElicitationRequest, EventKind, FinishedMessage, PendingAction, TextDelta,
    ToolActivity, ToolStatus, TurnDone, TurnError, TurnStarted, Verb,
};

use crate::db::{self, Pool};

/// One event of a turn's stream, named as the API spec names it.
#[derive(Debug, Clone)]
pub enum TurnEvent {
    Turn(TurnStarted),
    Text(TextDelta),
    Tool(ToolActivity),
    Display(DisplayCards),
    Component(ComponentEvent),
    PendingAction(PendingAction),
    Elicitation(ElicitationRequest),
    Message(FinishedMessage),
    Done(TurnDone),
    Error(TurnError),
}

impl TurnEvent {
    /// The SSE `event:` name.
    pub fn kind(&self) -> EventKind {
        match self {
            TurnEvent::Turn(_) => EventKind::Turn,
            TurnEvent::Text(_) => EventKind::Text,
            TurnEvent::Tool(_) => EventKind::Tool,
            TurnEvent::Display(_) => EventKind::Display,
            TurnEvent::Component(_) => EventKind::Component,
            TurnEvent::PendingAction(_) => EventKind::PendingAction,
            TurnEvent::Elicitation(_) => EventKind::Elicitation,
            TurnEvent::Message(_) => EventKind::Message,
            TurnEvent::Done(_) => EventKind::Done,
            TurnEvent::Error(_) => EventKind::Error,
        }
    }

    /// The SSE `data:` JSON.
    pub fn data(&self) -> String {
        fn json(v: &impl Serialize) -> String {
            serde_json::to_string(v).expect("wire types serialize")
        }
        match self {
            TurnEvent::Turn(e) => json(e),
            TurnEvent::Text(e) => json(e),
            TurnEvent::Tool(e) => json(e),
            TurnEvent::Display(e) => json(e),
            TurnEvent::Component(e) => json(e),
            TurnEvent::PendingAction(e) => json(e),
            TurnEvent::Elicitation(e) => json(e),
            TurnEvent::Message(e) => json(e),
            TurnEvent::Done(e) => json(e),
            TurnEvent::Error(e) => json(e),
        }
    }
}

/// An event and its number in the turn's stream (the SSE `id`, from 1),
/// with its JSON, made once for the stream and the stored copy alike. The
/// event is boxed: a turn's channel holds a block of 32 of these from its
/// start, 6 KB a stream with the event inline, 1 KB boxed.
#[derive(Debug, Clone)]
pub struct Numbered {
    pub seq: u64,
    pub event: Box<TurnEvent>,
    pub data: Arc<str>,
}

/// What is stored of an event: its number, name and JSON.
type Stored = (u64, EventKind, Arc<str>);

/// Where a turn writes its events: to the stream that started it, and to
/// the database for a client that resumes the stream (any replica). A
/// listener that went away (the browser closed the stream) does not stop
/// the turn: it finishes and is saved.
#[derive(Clone, Debug)]
pub struct EventSink {
    live: UnboundedSender<Numbered>,
    record: UnboundedSender<Stored>,
    next: Arc<AtomicU64>,
}

impl EventSink {
    /// Sends `turn_id`'s events to `live` and stores them in `pool`.
    pub fn new(live: UnboundedSender<Numbered>, pool: Pool, turn_id: String) -> Self {
        let (record, stored) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(store(pool, turn_id, stored));
        Self { live, record, next: Arc::new(AtomicU64::new(0)) }
    }

    pub fn send(&self, event: TurnEvent) {
        let seq = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let data: Arc<str> = event.data().into();
        let _ = self.record.send((seq, event.kind(), data.clone()));
        let _ = self.live.send(Numbered { seq, event: Box::new(event), data });
    }

    /// A `tool` event: a tool call started, succeeded or failed.
    pub fn tool_activity(&self, call_id: &str, name: &str, verb: Verb, status: ToolStatus) {
        self.send(TurnEvent::Tool(ToolActivity {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            verb,
            status,
            progress: None,
            total: None,
            message: None,
        }));
    }

    /// A tool's progress while it runs (an MCP server's `notifications/progress`).
    pub fn tool_progress(
        &self,
        call_id: &str,
        name: &str,
        verb: Verb,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        self.send(TurnEvent::Tool(ToolActivity {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            verb,
            status: ToolStatus::Progress,
            progress: Some(progress),
            total,
            message,
        }));
    }
}

/// How long stored events gather before they are written together: one
/// transaction for a burst instead of one per text delta (a resuming
/// client is at most this much behind the live stream).
const STORE_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Stores the events in batches, until the turn's last sender is gone.
async fn store(pool: Pool, turn_id: String, mut events: UnboundedReceiver<Stored>) {
    while let Some(first) = events.recv().await {
        tokio::time::sleep(STORE_EVERY).await;
        let mut batch = vec![first];
        while batch.len() < 256
            && let Ok(more) = events.try_recv()
        {
            batch.push(more);
        }
        let rows: Vec<(u64, &str, &str)> =
            batch.iter().map(|(seq, kind, data)| (*seq, kind.as_str(), &**data)).collect();
        // Boxed: the task waits for the next event far longer than it writes,
        // and would otherwise hold room for the write all the while.
        if let Err(error) = Box::pin(db::turn_events::insert(&pool, &turn_id, &rows, crate::ids::now_ms())).await {
            tracing::warn!(error = format!("{error:#}"), turn_id, "cannot store the turn's events");
        }
    }
}

/// How long a turn's events are kept after it ended.
pub const KEEP_EVENTS: std::time::Duration = std::time::Duration::from_secs(3600);

/// Every ten minutes, any replica forgets the events of turns that ended
/// more than [`KEEP_EVENTS`] ago, and of turns that are gone.
pub fn spawn_forgetting(pool: Pool) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(600));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let before = crate::ids::now_ms() - KEEP_EVENTS.as_millis() as i64;
            if let Err(error) = db::turn_events::forget_before(&pool, before).await {
                tracing::warn!(error = format!("{error:#}"), "cannot forget old turn events");
            }
        }
    });
}
