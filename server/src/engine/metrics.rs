//! The engine's own time per iteration: the loop's wall time less the time
//! spent waiting for the model and the tool host. Collected only when a
//! benchmark turns collection on; otherwise recording is one atomic load.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static ENABLED: AtomicBool = AtomicBool::new(false);
static SAMPLES: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

/// Starts collecting (and clears earlier samples).
pub fn start_collecting() {
    SAMPLES.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    ENABLED.store(true, Ordering::Relaxed);
}

/// Takes the samples collected so far.
pub fn take() -> Vec<Duration> {
    std::mem::take(&mut *SAMPLES.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

pub(crate) fn record(overhead: Duration) {
    if ENABLED.load(Ordering::Relaxed) {
        SAMPLES.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(overhead);
    }
}

/// Times one model step: its wall time, less the time spent waiting for
/// the model and the host.
pub(crate) struct StepClock {
    started: std::time::Instant,
    waited: Duration,
}

impl StepClock {
    pub fn start() -> Self {
        Self { started: std::time::Instant::now(), waited: Duration::ZERO }
    }

    /// Awaits `work` (the model or the host), counting it as waiting.
    pub async fn waiting<F: std::future::Future>(&mut self, work: F) -> F::Output {
        let started = std::time::Instant::now();
        let output = work.await;
        self.waited += started.elapsed();
        output
    }

    /// Milliseconds spent waiting so far (for logs).
    pub fn waited_ms(&self) -> f64 {
        self.waited.as_secs_f64() * 1000.0
    }

    /// Records the step's own time.
    pub fn record(&self) {
        record(self.started.elapsed().saturating_sub(self.waited));
    }
}
