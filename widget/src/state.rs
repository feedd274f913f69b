//! The chat's state: every message on screen, the conversation and turn
//! ids, the token, busy flags, errors and the pending action — all signals,
//! so a streamed token changes only its own message on screen. The components read
//! it from context; the browser-only client (`client/`) writes it.

use leptos::prelude::*;

use crate::wire::i18n::Msg;
use crate::wire::{DisplayCard, PendingAction, Rating, Role};

/// The widget's words in the visitor's language, from the boot
/// (`i18n::Msg` order): the WASM carries no catalogue.
#[derive(Clone, Copy)]
pub struct Words(StoredValue<Vec<String>>);

impl Words {
    pub fn new(words: Vec<String>) -> Self {
        Self(StoredValue::new(words))
    }

    /// The text of `m`.
    pub fn get(self, m: Msg) -> String {
        self.0.with_value(|w| w.get(m as usize).cloned().unwrap_or_default())
    }

    /// The text of `m` with its `placeholder` (`{name}`) filled in.
    pub fn fill(self, m: Msg, placeholder: &str, value: &str) -> String {
        crate::wire::i18n::fill(&self.get(m), placeholder, value)
    }
}

/// One message on screen: its text (a signal of its own, as it streams
/// token by token) and everything else about it in one signal.
#[derive(Clone, Copy)]
pub struct Bubble {
    pub id: u64,
    pub role: Role,
    pub text: RwSignal<String>,
    pub state: RwSignal<BubbleState>,
}

/// What a message shows besides its text. One signal for all of it keeps
/// the WASM small (a signal type costs kilobytes); the parts drawn from it
/// redraw only when their own markup changes.
#[derive(Clone, Default)]
pub struct BubbleState {
    /// Sanitized HTML from the server, once the message is finished.
    pub html: Option<String>,
    pub cards: Vec<DisplayCard>,
    /// Rich results shown with the message, rendered by kind.
    pub components: Vec<Component>,
    /// The stream broke before the message was finished.
    pub interrupted: bool,
    /// The user copied it (the button says so).
    pub copied: bool,
    /// The user stopped it (Stop): drawn as stopped.
    pub stopped: bool,
    /// The server's id of a finished reply (for feedback).
    pub message_id: Option<String>,
    /// The user's thumbs up or down on it, as saved.
    pub rating: Option<Rating>,
    /// The comment field is open (after a thumb).
    pub commenting: bool,
    /// A message of the user's the server has not taken yet.
    pub delivery: Option<Delivery>,
}

/// Where a message of the user's is on its way to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(any(feature = "hydrate", test)), expect(dead_code, reason = "set by the browser-only client"))]
pub enum Delivery {
    /// Being sent (and sent again, with its key, while the network fails).
    Sending,
    /// Queued: offline, or behind an earlier message.
    Queued,
    /// The network kept failing: Retry sends it again.
    NotSent,
}

/// A message the server has not taken yet: its idempotency key (the
/// same for every attempt), its text and the bubble that shows it (0
/// until it is shown).
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
pub struct Outgoing {
    pub key: String,
    pub text: String,
    /// Its files, as the attachments code gave them (`{"ids", "html"}`;
    /// empty: none).
    pub files: String,
    pub bubble: u64,
}

/// A rich result on screen. `data` changes in place when a later result
/// (or the component's own buttons) refreshes its kind.
#[derive(Clone)]
pub struct Component {
    pub id: String,
    pub kind: String,
    /// The kind's data as JSON text.
    pub data: RwSignal<String>,
    /// One of its own tool calls is on its way.
    pub busy: RwSignal<bool>,
    /// Why its last tool call did not go through.
    pub error: RwSignal<Option<String>>,
}

/// One argument of a component's tool call.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "read by the browser-only client"))]
pub enum Arg {
    Text(String),
    Number(u32),
}

/// How the user answers a pending action (`POST /v1/actions/{id}/{answer}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A delete's first confirmation.
    Confirm,
    Apply,
    Cancel,
}

impl Answer {
    /// The last segment of the action's URL.
    #[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
    pub fn path(self) -> &'static str {
        match self {
            Answer::Confirm => "confirm",
            Answer::Apply => "apply",
            Answer::Cancel => "cancel",
        }
    }
}

/// The chat's state, shared by the components (`Copy`: all signals).
/// A tool's question as the widget holds it: which one, for which call,
/// and the form the server drew (`elicitation` event).
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    pub elicitation_id: String,
    pub call_id: String,
    pub html: String,
}

#[derive(Clone, Copy)]
pub struct Chat {
    /// The widget's words in the visitor's language.
    pub words: Words,
    pub bubbles: RwSignal<Vec<Bubble>>,
    pub conversation_id: RwSignal<Option<String>>,
    pub token: RwSignal<Option<String>>,
    pub busy: RwSignal<bool>,
    #[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
    pub turn_id: RwSignal<Option<String>>,
    /// "Running show menu…" while a `get` tool runs.
    pub activity: RwSignal<Option<String>>,
    /// Polite announcements for screen readers: a reply started, finished.
    pub announce: RwSignal<String>,
    pub error: RwSignal<Option<String>>,
    /// Seconds until the server takes a new message, after it said to wait
    /// (`429`/`503` with `Retry-After`); 0 when it would take one now.
    pub wait_seconds: RwSignal<u32>,
    /// The last message sent (or restored), its text and files (one at
    /// most), for Retry and Ask again.
    pub last_sent: StoredValue<Vec<Outgoing>>,
    /// The change waiting for the user's answer, if any.
    pub action: RwSignal<Option<PendingAction>>,
    /// An answer to the action is on its way.
    pub action_busy: RwSignal<bool>,
    /// Why the last answer to the action did not go through.
    pub action_error: RwSignal<Option<String>>,
    /// A tool's request for the user's input while it runs, if any.
    pub elicitation: RwSignal<Option<Question>>,
    /// An answer to it is on its way.
    pub elicitation_busy: RwSignal<bool>,
    /// Why the last answer to it did not go through.
    pub elicitation_error: RwSignal<Option<String>>,
    /// The network is down (the browser says so, or the server could not
    /// be reached): new messages queue, the last conversation is the saved one.
    pub offline: RwSignal<bool>,
    /// The user's messages the server has not taken yet, in order.
    #[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
    pub outbox: StoredValue<Vec<Outgoing>>,
    /// The list of the user's earlier conversations while it is open, as
    /// escaped markup (empty: none yet).
    pub history: RwSignal<Option<String>>,
    /// The App's owner, for the signals of every message.
    owner: StoredValue<Option<Owner>>,
}

impl Chat {
    pub fn new(words: Vec<String>) -> Self {
        Self {
            words: Words::new(words),
            bubbles: RwSignal::new(Vec::new()),
            conversation_id: RwSignal::new(None),
            token: RwSignal::new(None),
            busy: RwSignal::new(false),
            turn_id: RwSignal::new(None),
            activity: RwSignal::new(None),
            announce: RwSignal::new(String::new()),
            error: RwSignal::new(None),
            wait_seconds: RwSignal::new(0),
            last_sent: StoredValue::new(Vec::new()),
            action: RwSignal::new(None),
            action_busy: RwSignal::new(false),
            action_error: RwSignal::new(None),
            elicitation: RwSignal::new(None),
            elicitation_busy: RwSignal::new(false),
            elicitation_error: RwSignal::new(None),
            offline: RwSignal::new(false),
            outbox: StoredValue::new(Vec::new()),
            history: RwSignal::new(None),
            owner: StoredValue::new(Owner::current()),
        }
    }

    /// Runs `f` under the chat's own owner: signals made for a message must
    /// outlive whatever view's handler made them (a Retry button that is
    /// gone once clicked, say).
    fn owned<T>(&self, f: impl FnOnce() -> T) -> T {
        match self.owner.get_value() {
            Some(owner) => owner.with(f),
            None => f(),
        }
    }

    /// Appends a message and returns it.
    #[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
    pub fn push(&self, role: Role, text: &str) -> Bubble {
        // Unique for the page's life: a message's id keys its view (0 is
        // no message: `Outgoing::bubble` before it is shown).
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let bubble = self.owned(|| Bubble {
            id,
            role,
            text: RwSignal::new(text.to_owned()),
            state: RwSignal::new(BubbleState::default()),
        });
        self.bubbles.update(|b| b.push(bubble));
        bubble
    }

    /// Shows a component with `reply`, or — for an update — refreshes the
    /// ones of its kind already on screen. Every component of a kind shows
    /// the newest data: they are views of one thing, such as a cart.
    #[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
    pub fn show_component(&self, reply: Bubble, id: String, kind: String, data: String, update: bool) {
        let shown = self.refresh_kind(&kind, &data);
        if update && shown {
            return;
        }
        let component = self.owned(|| Component {
            id,
            kind,
            data: RwSignal::new(data),
            busy: RwSignal::new(false),
            error: RwSignal::new(None),
        });
        reply.state.update(|s| s.components.push(component));
    }

    /// Gives every component of `kind` new data; false if none is shown.
    pub fn refresh_kind(&self, kind: &str, data: &str) -> bool {
        let mut shown = false;
        for bubble in self.bubbles.get_untracked() {
            bubble.state.with_untracked(|s| {
                for c in s.components.iter().filter(|c| c.kind == kind) {
                    c.data.set(data.to_owned());
                    shown = true;
                }
            });
        }
        shown
    }
}

impl Chat {
    /// The text of `m` in the visitor's language.
    pub fn t(&self, m: Msg) -> String {
        self.words.get(m)
    }
}
