//! A per-user limit on direct tool calls from components' buttons: each
//! click reaches the host at once, so a stuck key or a script must not turn
//! into a flood. A fixed window per workspace and user, in this process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Calls allowed per window.
pub const CALLS: u32 = 20;
pub const WINDOW: Duration = Duration::from_secs(10);

#[derive(Clone, Default)]
pub struct RateLimiter {
    windows: Arc<Mutex<HashMap<String, (Instant, u32)>>>,
}

impl RateLimiter {
    /// True when `key` may make one more call now.
    pub fn allow(&self, key: &str) -> bool {
        let mut windows = self.windows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if windows.len() > 10_000 {
            windows.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let (start, count) = windows.entry(key.to_owned()).or_insert((now, 0));
        if now.duration_since(*start) >= WINDOW {
            *start = now;
            *count = 0;
        }
        *count += 1;
        *count <= CALLS
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_user_gets_their_own_window() {
        let limiter = super::RateLimiter::default();
        for _ in 0..super::CALLS {
            assert!(limiter.allow("ws:a"));
        }
        assert!(!limiter.allow("ws:a"));
        assert!(limiter.allow("ws:b"));
    }
}
