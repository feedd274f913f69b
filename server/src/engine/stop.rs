//! Running turns, so that `POST /v1/turns/{id}/stop` can cancel one. A
//! stop that reaches the replica running the turn cancels it at once; one
//! that reaches another replica is recorded in the database
//! (`turns.stop_requested`), and every replica looks for those while it
//! runs turns (`watch_stop_requests`).

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

    /// Cancels these turns where they run here (the database checked whose they are).
    pub fn cancel(&self, turn_ids: &[String]) {
        let running = self.running.lock().expect("not poisoned");
        for id in turn_ids {
            if let Some(turn) = running.get(id) {
                turn.cancel.cancel();
            }
        }
    }

    /// How many turns run in this process now.
    pub fn running(&self) -> usize {
        self.running.lock().expect("not poisoned").len()
    }

    pub fn is_idle(&self) -> bool {
        self.running.lock().expect("not poisoned").is_empty()
    }

    /// Stops every turn running here (shutting down): each ends `cancelled`
    /// and is saved as such.
    pub fn cancel_all(&self) -> usize {
        let running = self.running.lock().expect("not poisoned");
        for turn in running.values() {
            turn.cancel.cancel();
        }
        running.len()
    }

    /// Waits until no turn runs here, or `limit` has passed; true when idle.
    pub async fn wait_idle(&self, limit: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while !self.is_idle() {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        true
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

/// While this process runs turns, looks for stops asked of other replicas
/// every `every`.
pub fn watch_stop_requests(turns: TurnRegistry, pool: crate::db::Pool, every: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if turns.is_idle() {
                continue;
            }
            match crate::db::stop_requests(&pool).await {
                Ok(ids) => turns.cancel(&ids),
                Err(error) => tracing::warn!(error = format!("{error:#}"), "cannot read stop requests"),
            }
        }
    });
}
