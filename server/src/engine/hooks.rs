//! Who hears that a turn ended. The engine calls each subscriber after the
//! turn is saved and before its `done` event, so a subscriber that must
//! finish first (Caddie's status report: the hub hears of the change
//! before the user can navigate back to it) simply awaits its work.

use futures::future::BoxFuture;

/// Told of every finished turn, with the workspace it ran in.
pub trait TurnFinished: Send + Sync {
    /// Must not fail the turn: errors are the subscriber's to log.
    fn turn_finished<'a>(&'a self, workspace_id: &'a str) -> BoxFuture<'a, ()>;
}
