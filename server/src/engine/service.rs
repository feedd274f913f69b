//! The engine as a service: what every turn shares (the [`Engine`]) and what
//! starts one.

use std::sync::Arc;

use super::hooks::TurnFinished;
use crate::auth::Caller;
use crate::clock::Clock;
use crate::config::TurnLimits;
use crate::db::Pool;
use crate::db::actions::ActionRow;
use crate::llm::Model;
use crate::workspaces::Workspaces;

/// What a turn needs; shared by all turns.
#[derive(Clone)]
pub struct Engine {
    pub pool: Pool,
    pub workspaces: Workspaces,
    /// The clients of every kind of tool source (and the MCP connections).
    pub sources: crate::sources::Sources,
    pub model: Model,
    pub limits: TurnLimits,
    /// Today's token budgets (counted in the database).
    pub budgets: crate::limits::Limits,
    /// What pending actions expire by.
    pub clock: Clock,
    /// Told when a turn has ended, before its `done` is sent.
    pub on_turn_finished: Option<Arc<dyn TurnFinished>>,
    /// Where MCP Apps run (`CA_SANDBOX_URL`); none: apps are not shown.
    pub apps: Option<crate::app_frames::AppFrames>,
    /// Where the users' attachments are kept (a text file's content goes to the model).
    pub attachments: crate::attachments::Attachments,
    /// The host's knowledge: the built-in `search_knowledge` tool searches it.
    pub knowledge: crate::knowledge::Knowledge,
}

/// What starts a turn.
#[derive(Clone, Debug)]
pub enum TurnStart {
    /// The user wrote a message.
    Message(UserMessage),
    /// The user wrote the first message of a conversation made for it just
    /// now: nothing to supersede, and its time is already the latest.
    FirstMessage(UserMessage),
    /// The user applied this action; its status is already `executing`.
    Applied(ActionRow),
    /// The user cancelled this action, perhaps saying why.
    Declined(ActionRow, Option<String>),
}

/// What the user sent: their text and the attachments sent with it (the
/// caller's own, checked).
#[derive(Clone, Debug)]
pub struct UserMessage {
    pub text: String,
    pub attachments: Vec<crate::db::attachments::Attachment>,
}

/// One turn to run.
#[derive(Clone, Debug)]
pub struct TurnInput {
    pub caller: Caller,
    pub conversation_id: String,
    pub turn_id: String,
    pub start: TurnStart,
    /// The language the user reads (`widget::wire::i18n::LANGUAGES`).
    pub lang: &'static str,
}
