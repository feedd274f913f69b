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
    /// (Actions are boxed: a turn holds its start while it runs, and most
    /// start with a message, a tenth of an action's size.)
    Applied(Box<ActionRow>),
    /// The user cancelled this action, perhaps saying why.
    Declined(Box<ActionRow>, Option<String>),
}

/// What the user sent: their text and the attachments sent with it (the
/// caller's own, checked).
#[derive(Clone, Debug)]
pub struct UserMessage {
    pub text: String,
    pub attachments: Vec<crate::db::attachments::Attachment>,
    /// The message's id when it was saved as the turn was claimed (a new
    /// conversation's first, or a later one no action waited on); `None`:
    /// the turn saves it.
    pub saved_as: Option<String>,
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
    /// Set when an assistant test runs the turn, not a visitor.
    pub test: Option<Arc<TestTurn>>,
    /// Whether the caller may still spend model tokens today, as read when
    /// the turn was admitted (a test run's: always, it spends no budget).
    pub within_budget: bool,
}

/// A turn of an assistant test run (issue #46): the same prompt, model,
/// knowledge and tools as a visitor's, but its tools are safe by
/// construction and it counts against nothing of the visitors'.
///
/// - a `get` tool the case recorded an output for answers that output;
///   any other runs at the host as usual (reading is safe);
/// - a change the visitor applies is not executed unless `execute` (the
///   case points at a test host): it is recorded as "would apply", and the
///   model hears it as done, with the frozen preview;
/// - its tokens and turns count as test usage (`test_tokens`,
///   `test_turns`), never against the workspace's or the user's budgets
///   or in its usage charts; it records no content gap; the
///   turn-finished hooks (Caddie's status reports) are not told.
#[derive(Clone, Debug, Default)]
pub struct TestTurn {
    /// The run it belongs to.
    pub run_id: String,
    /// Recorded outputs by tool name.
    pub recorded: std::collections::BTreeMap<String, serde_json::Value>,
    /// Changes are executed at the host (a test host).
    pub execute: bool,
    /// Another model than the workspace's, at the same endpoint (by name).
    pub model: Option<String>,
}

impl TestTurn {
    /// The output recorded for `tool` (by the name the model sees or the
    /// host's own), if any.
    pub fn recorded(&self, tool: &crate::host::ToolSpec) -> Option<&serde_json::Value> {
        self.recorded.get(&tool.name).or_else(|| self.recorded.get(&tool.origin.name))
    }
}
