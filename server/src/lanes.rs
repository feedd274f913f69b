//! HTTP clients in lanes: calls to tool hosts spread over as many reqwest
//! clients as it takes to keep each under a number of calls in flight.
//!
//! Why: a host that speaks HTTP/2 carries many calls on one connection
//! (issue #47: a waiting tool call then costs a stream, not a connection
//! with its buffers), but hyper's pool keeps *one* HTTP/2 connection per
//! host and queues every call past the host's `SETTINGS_MAX_CONCURRENT_STREAMS`
//! behind the ones in flight — slow tools would hold up fast ones, and a
//! node with thousands of waiting turns would wait in line. Each reqwest
//! client has its own pool, so a lane is a client, and a call takes the
//! first lane with room: 100 calls (the least RFC 9113 asks a server to
//! allow) share a connection, the 101st opens another. Neither reqwest nor
//! hyper_util offers this; it is ours.
//!
//! Over HTTP/1 a lane's pool opens a connection per call in flight as
//! before; the lanes only divide its idle connections.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// At most this many lanes: past them, a call takes the least busy.
const MOST_LANES: usize = 1024;

/// Clients made alike, each carrying at most `per_lane` calls at once
/// while another can be made.
pub struct Lanes {
    lanes: Mutex<Vec<Lane>>,
    per_lane: usize,
    make: Box<dyn Fn() -> reqwest::Client + Send + Sync>,
}

struct Lane {
    client: reqwest::Client,
    in_flight: Arc<AtomicUsize>,
}

/// A call's place in its lane, given back when dropped.
#[derive(Debug)]
pub struct Seat(Arc<AtomicUsize>);

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Lanes {
    /// Lanes of clients from `make`; the first is made now.
    pub fn new(per_lane: usize, make: impl Fn() -> reqwest::Client + Send + Sync + 'static) -> Self {
        let first = Lane { client: make(), in_flight: Arc::default() };
        Self { lanes: Mutex::new(vec![first]), per_lane: per_lane.max(1), make: Box::new(make) }
    }

    /// A client for one call, and its seat: hold the seat until the
    /// answer is read whole (an HTTP/2 stream is open until then).
    pub fn take(&self) -> (reqwest::Client, Seat) {
        let mut lanes = self.lanes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let free = lanes.iter().position(|lane| lane.in_flight.load(Ordering::Relaxed) < self.per_lane);
        let index = match free {
            Some(index) => index,
            None if lanes.len() < MOST_LANES => {
                lanes.push(Lane { client: (self.make)(), in_flight: Arc::default() });
                lanes.len() - 1
            }
            None => (0..lanes.len()).min_by_key(|&i| lanes[i].in_flight.load(Ordering::Relaxed)).unwrap_or(0),
        };
        let lane = &lanes[index];
        lane.in_flight.fetch_add(1, Ordering::Relaxed);
        (lane.client.clone(), Seat(lane.in_flight.clone()))
    }

    /// How many lanes there are.
    pub fn count(&self) -> usize {
        self.lanes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes").field("lanes", &self.count()).field("per_lane", &self.per_lane).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_fills_before_the_next_opens_and_a_seat_given_back_is_taken_again() {
        let made = Arc::new(AtomicUsize::new(0));
        let counter = made.clone();
        let lanes = Lanes::new(2, move || {
            counter.fetch_add(1, Ordering::SeqCst);
            reqwest::Client::new()
        });
        let a = lanes.take();
        let b = lanes.take();
        assert_eq!(lanes.count(), 1, "two calls share the first lane");
        let c = lanes.take();
        assert_eq!((lanes.count(), made.load(Ordering::SeqCst)), (2, 2), "the third opens a second lane");
        drop(a);
        let _d = lanes.take();
        assert_eq!(lanes.count(), 2, "a seat given back in the first lane is taken before a new lane");
        let _e = lanes.take();
        assert_eq!(lanes.count(), 2, "the second lane still had room");
        let _f = lanes.take();
        assert_eq!(lanes.count(), 3);
        drop((b, c));
    }
}
