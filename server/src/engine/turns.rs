//! Running turns, so that `POST /v1/turns/{id}/stop` can cancel one.
//! (Per process: a stop that reaches another replica finds nothing.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// The turns this process is running, by turn id.
#[derive(Clone, Default)]
pub struct TurnRegistry {
    running: Arc<Mutex<HashMap<String, RunningTurn>>>,
}

struct RunningTurn {
    workspace_id: String,
    user: String,
    cancel: CancellationToken,
}

impl TurnRegistry {
    /// Registers a turn of `workspace_id`/`user`; returns its cancel token.
    pub fn start(&self, turn_id: &str, workspace_id: &str, user: &str) -> CancellationToken {
        let token = CancellationToken::new();
        self.running.lock().expect("not poisoned").insert(
            turn_id.to_owned(),
            RunningTurn { workspace_id: workspace_id.to_owned(), user: user.to_owned(), cancel: token.clone() },
        );
        token
    }

    pub fn finish(&self, turn_id: &str) {
        self.running.lock().expect("not poisoned").remove(turn_id);
    }

    /// Cancels the turn if it runs here and belongs to this caller.
    pub fn stop(&self, turn_id: &str, workspace_id: &str, user: &str) -> bool {
        let running = self.running.lock().expect("not poisoned");
        match running.get(turn_id) {
            Some(turn) if turn.workspace_id == workspace_id && turn.user == user => {
                turn.cancel.cancel();
                true
            }
            _ => false,
        }
    }
}
