//! The stream events of a turn (assistant-api.md §3) and where they go.

use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;
use widget::wire::{
    ComponentEvent, DisplayCards, FinishedMessage, PendingAction, TextDelta, ToolActivity, TurnDone, TurnError,
    TurnStarted,
};

/// One event of a turn's stream, named as the API spec names it.
#[derive(Debug, Clone)]
pub enum TurnEvent {
    Turn(TurnStarted),
    Text(TextDelta),
    Tool(ToolActivity),
    Display(DisplayCards),
    Component(ComponentEvent),
    PendingAction(PendingAction),
    Message(FinishedMessage),
    Done(TurnDone),
    Error(TurnError),
}

impl TurnEvent {
    /// The SSE `event:` name.
    pub fn name(&self) -> &'static str {
        match self {
            TurnEvent::Turn(_) => "turn",
            TurnEvent::Text(_) => "text",
            TurnEvent::Tool(_) => "tool",
            TurnEvent::Display(_) => "display",
            TurnEvent::Component(_) => "component",
            TurnEvent::PendingAction(_) => "pending_action",
            TurnEvent::Message(_) => "message",
            TurnEvent::Done(_) => "done",
            TurnEvent::Error(_) => "error",
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
            TurnEvent::Message(e) => json(e),
            TurnEvent::Done(e) => json(e),
            TurnEvent::Error(e) => json(e),
        }
    }
}

/// Where a turn writes its events. A listener that went away (the browser
/// closed the stream) does not stop the turn: it finishes and is saved.
#[derive(Clone, Debug)]
pub struct EventSink(UnboundedSender<TurnEvent>);

impl EventSink {
    pub fn new(sender: UnboundedSender<TurnEvent>) -> Self {
        Self(sender)
    }

    pub fn send(&self, event: TurnEvent) {
        let _ = self.0.send(event);
    }
}

/// Why a turn ended (`done.stop_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Completed,
    PendingAction,
    IterationLimit,
    TimeLimit,
    TokenLimit,
    Cancelled,
    Error,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::PendingAction => "pending_action",
            StopReason::IterationLimit => "iteration_limit",
            StopReason::TimeLimit => "time_limit",
            StopReason::TokenLimit => "token_limit",
            StopReason::Cancelled => "cancelled",
            StopReason::Error => "error",
        }
    }
}
