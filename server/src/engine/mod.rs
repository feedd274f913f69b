//! The turn engine: one user message (or the user's answer to a pending
//! action) in, a streamed, persisted answer out. A turn reads top to
//! bottom through files named for its phases:
//!
//! 1. [`turn`]: runs the phases in order, within the time limit and the stop
//!    button, on one [`context`] (`Turn`) that every phase shares;
//! 2. [`open`]: saves what starts the turn (a message, an applied or declined action);
//! 3. [`prepare`]: the host's tools and context (once, concurrently) and the transcript;
//! 4. [`step`]: one model step and its tool calls, as often as the limits allow —
//!    [`plan`] checks each call, [`tools`] runs `get`s and previews a change,
//!    [`outcome`] is the one place a tool's outcome is saved and shown;
//! 5. [`close`]: saves the reply, tells who listens ([`TurnFinished`]), sends `done`.
//!
//! Around a turn: [`service`] (the [`Engine`] and what starts a turn),
//! [`actions`] (executing an applied action, the wire form,
//! the sweep of interrupted executions), [`reoffer`] (a stale Apply's fresh
//! preview), [`events`] (the stream), [`stop`]
//! (stopping a turn on any replica), [`prompt`] and [`metrics`].
//!
//! The engine knows no HTTP edge: the API starts turns, and whoever needs
//! to hear that one ended (Caddie's status reports) subscribes through
//! [`TurnFinished`].

mod actions;
mod attachments;
mod close;
mod context;
mod elicit;
pub mod events;
mod hooks;
pub mod metrics;
mod open;
mod outcome;
mod plan;
mod prepare;
mod progress;
mod prompt;
mod reoffer;
mod service;
mod step;
pub mod stop;
mod tools;
mod turn;

pub use actions::{
    STUCK_SWEEP_EVERY, Unbound, abandon_stuck, binding, execute_for_app, pending_action, refuse, sweep_stuck_actions,
};
pub use hooks::TurnFinished;
pub use outcome::MAX_TOOL_RESULT_CHARS;
pub use service::{Engine, TestTurn, TurnInput, TurnStart, UserMessage};
pub use tools::shown_preview;
