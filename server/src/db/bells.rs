//! Wake-ups for whoever waits on something another task or replica writes
//! to the database (a resumed stream waiting for its turn's next events),
//! so that a waiter sleeps until there is something to read instead of
//! asking the database every few milliseconds.
//!
//! A writer rings its topic (a turn's id) after it committed. In this
//! process that wakes the topic's waiters at once. Other replicas hear it:
//! on PostgreSQL by `LISTEN`/`NOTIFY` (the writer's statement notifies
//! [`CHANNEL`] with the topic; one listening connection per process, opened
//! when something first waits); on SQLite, which has no notifications, by
//! one `PRAGMA data_version` per process every [`SQLITE_LOOK_EVERY`] while
//! anything waits — it moves when another connection committed, and then
//! every waiter looks once. Either way a waiting stream costs no reads of
//! its own until something may have changed for it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};

/// The PostgreSQL channel a write names its topic on.
pub const CHANNEL: &str = "ca_turn_events";

/// How long the PostgreSQL listener waits before it connects again.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// The topics waited on in this process, each with a counter its writers
/// move.
#[derive(Default)]
pub struct Bells {
    topics: Mutex<HashMap<String, watch::Sender<u64>>>,
    /// Something started waiting (wakes SQLite's watcher from its rest).
    first_waiter: Notify,
    /// The cross-replica watcher (listener or data-version reader) runs.
    watching: AtomicBool,
    /// Times a waiter looked in the database for what it waits for.
    looks: AtomicU64,
}

impl std::fmt::Debug for Bells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bells").field("looks", &self.looks()).finish_non_exhaustive()
    }
}

/// One waiter's subscription to a topic; it leaves when dropped.
pub struct Bell {
    rung: watch::Receiver<u64>,
    bells: Arc<Bells>,
    topic: String,
}

impl Bells {
    /// A bell for `topic`: [`Bell::rung`] returns once it was rung after
    /// the bell was made or last heard.
    pub(super) fn subscribe(self: &Arc<Self>, topic: &str) -> Bell {
        let mut topics = self.topics.lock().expect("bells lock");
        let rung = match topics.get(topic) {
            Some(sender) => sender.subscribe(),
            None => {
                let (sender, receiver) = watch::channel(0);
                topics.insert(topic.to_owned(), sender);
                receiver
            }
        };
        let first = topics.len() == 1;
        drop(topics);
        if first {
            self.first_waiter.notify_one();
        }
        Bell { rung, bells: self.clone(), topic: topic.to_owned() }
    }

    /// Wakes `topic`'s waiters in this process.
    pub fn ring(&self, topic: &str) {
        if let Some(sender) = self.topics.lock().expect("bells lock").get(topic) {
            sender.send_modify(|n| *n += 1);
        }
    }

    /// Wakes every waiter in this process: something may have been missed
    /// (the listener reconnected, another SQLite connection committed).
    pub(super) fn ring_all(&self) {
        for sender in self.topics.lock().expect("bells lock").values() {
            sender.send_modify(|n| *n += 1);
        }
    }

    pub(super) fn anyone_waiting(&self) -> bool {
        !self.topics.lock().expect("bells lock").is_empty()
    }

    /// Counts one look in the database by a waiter.
    pub fn looked(&self) {
        self.looks.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times waiters looked in the database, since the process
    /// started (the tests check that a waiting stream does not poll).
    pub fn looks(&self) -> u64 {
        self.looks.load(Ordering::Relaxed)
    }

    /// True the first time it is asked: the caller starts the watcher.
    pub(super) fn start_watching(&self) -> bool {
        !self.watching.swap(true, Ordering::AcqRel)
    }

    /// Hears other replicas' writes on PostgreSQL until the process ends:
    /// `LISTEN`s on [`CHANNEL`] and rings each notified topic; after any
    /// break in the connection, when notifications may have been missed,
    /// rings every topic.
    pub(super) async fn listen_postgres(self: Arc<Self>, url: String) {
        use sqlx::postgres::PgListener;
        loop {
            match PgListener::connect(&url).await {
                Ok(mut listener) => match listener.listen(CHANNEL).await {
                    Ok(()) => {
                        // Anything written before the LISTEN took effect.
                        self.ring_all();
                        loop {
                            match listener.try_recv().await {
                                Ok(Some(notification)) => self.ring(notification.payload()),
                                // The connection broke: it reconnects at the next call.
                                Ok(None) => self.ring_all(),
                                Err(error) => {
                                    tracing::warn!(error = format!("{error:#}"), "the database listener stopped");
                                    break;
                                }
                            }
                        }
                    }
                    Err(error) => tracing::warn!(error = format!("{error:#}"), "cannot LISTEN for stream events"),
                },
                Err(error) => tracing::warn!(error = format!("{error:#}"), "cannot open the database listener"),
            }
            self.ring_all();
            tokio::time::sleep(RECONNECT_AFTER).await;
        }
    }

    /// Returns once anything waits (at once if something does).
    pub(super) async fn someone_waits(&self) {
        let first = self.first_waiter.notified();
        if !self.anyone_waiting() {
            first.await;
        }
    }
}

impl Bell {
    /// Returns once the topic was rung since the bell was made or this
    /// last returned (at once if it already was).
    pub async fn rung(&mut self) {
        if self.rung.changed().await.is_err() {
            // The sender is kept while any bell of the topic lives.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Bell {
    fn drop(&mut self) {
        let mut topics = self.bells.topics.lock().expect("bells lock");
        // This bell's receiver is the last one: nobody waits on the topic.
        if topics.get(&self.topic).is_some_and(|sender| sender.receiver_count() <= 1) {
            topics.remove(&self.topic);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_ring_wakes_its_topics_waiters_once_and_a_ring_before_waiting_is_not_lost() {
        let bells = Arc::new(Bells::default());
        let mut one = bells.subscribe("turn_a");
        let mut two = bells.subscribe("turn_a");
        let mut other = bells.subscribe("turn_b");
        bells.ring("turn_a");
        // Rung before anyone waited: heard at once.
        tokio::time::timeout(Duration::from_secs(1), one.rung()).await.expect("one hears it");
        tokio::time::timeout(Duration::from_secs(1), two.rung()).await.expect("two hears it");
        assert!(tokio::time::timeout(Duration::from_millis(50), one.rung()).await.is_err(), "heard once");
        assert!(tokio::time::timeout(Duration::from_millis(50), other.rung()).await.is_err(), "not its topic");
        bells.ring_all();
        tokio::time::timeout(Duration::from_secs(1), other.rung()).await.expect("ring_all reaches every topic");
    }

    #[tokio::test]
    async fn a_topic_is_forgotten_when_its_last_waiter_leaves() {
        let bells = Arc::new(Bells::default());
        let one = bells.subscribe("turn_a");
        let two = bells.subscribe("turn_a");
        drop(one);
        assert!(bells.anyone_waiting());
        drop(two);
        assert!(!bells.anyone_waiting());
        bells.ring("turn_a");
    }
}
