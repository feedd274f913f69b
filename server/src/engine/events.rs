//! The stream events of a turn (assistant-api.md §3) and where they go.

use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;
use widget::wire::{
    ComponentEvent, DisplayCards, EventKind, FinishedMessage, PendingAction, TextDelta, ToolActivity, ToolStatus,
    TurnDone, TurnError, TurnStarted, Verb,
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
    pub fn kind(&self) -> EventKind {
        match self {
            TurnEvent::Turn(_) => EventKind::Turn,
            TurnEvent::Text(_) => EventKind::Text,
            TurnEvent::Tool(_) => EventKind::Tool,
            TurnEvent::Display(_) => EventKind::Display,
            TurnEvent::Component(_) => EventKind::Component,
            TurnEvent::PendingAction(_) => EventKind::PendingAction,
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

    /// A `tool` event: a tool call started, succeeded or failed.
    pub fn tool_activity(&self, call_id: &str, name: &str, verb: Verb, status: ToolStatus) {
        self.send(TurnEvent::Tool(ToolActivity { call_id: call_id.to_owned(), name: name.to_owned(), verb, status }));
    }
}
