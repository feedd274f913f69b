//! The time the server judges expiry by: real time plus an offset that only
//! moves forward. Tests move it (`advance`) to see a pending action expire
//! without waiting for it; the server never does. Clones share one offset.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::ids;

#[derive(Clone, Debug, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicI64>,
}

impl Clock {
    /// Milliseconds since the unix epoch, as this clock tells it.
    pub fn now_ms(&self) -> i64 {
        ids::now_ms() + self.offset_ms.load(Ordering::Relaxed)
    }

    /// Moves this clock (and its clones) forward.
    pub fn advance(&self, by: Duration) {
        self.offset_ms.fetch_add(i64::try_from(by.as_millis()).unwrap_or(i64::MAX), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_runs_with_real_time_and_its_clones_advance_together() {
        let clock = Clock::default();
        let twin = clock.clone();
        let before = ids::now_ms();
        assert!((clock.now_ms() - before).abs() < 1_000);
        clock.advance(Duration::from_secs(3600));
        assert!(twin.now_ms() - ids::now_ms() >= 3_599_000, "clones share the offset");
    }
}
