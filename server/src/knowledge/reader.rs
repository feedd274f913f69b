//! The thread pages are read on: one per process, at the lowest
//! scheduling priority (nice 19, set through the `thread-priority` crate),
//! so that reading a site — the processor-heavy part of a sync — runs on
//! what the chat turns leave over and never slows them (docs/benchmarks.md,
//! "Knowledge"). Jobs run one at a time, in the order given.

use std::sync::OnceLock;
use std::sync::mpsc::{Sender, channel};

type Job = Box<dyn FnOnce() + Send>;

/// The reader thread's queue, started on first use.
fn queue() -> &'static Sender<Job> {
    static QUEUE: OnceLock<Sender<Job>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (sender, jobs) = channel::<Job>();
        std::thread::Builder::new()
            .name("knowledge-reader".into())
            .spawn(move || {
                if let Err(error) = thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min) {
                    tracing::warn!(?error, "the knowledge reader keeps the normal priority");
                }
                for job in jobs {
                    job();
                }
            })
            .expect("the reader thread starts");
        sender
    })
}

/// Runs `work` on the reader thread; `None` if it panicked.
pub async fn read<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (done, result) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        let _ = done.send(outcome.ok());
    });
    queue().send(job).ok()?;
    result.await.ok().flatten()
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn pages_are_read_at_the_lowest_priority_and_a_panic_is_contained() {
        let nice = super::read(|| {
            let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
            // Fields after the command's closing parenthesis; nice is the 19th field of the line.
            let fields: Vec<String> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest)
                .unwrap_or("")
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            fields.get(16).and_then(|n| n.parse::<i32>().ok())
        })
        .await
        .flatten();
        assert_eq!(nice, Some(19));
        assert_eq!(super::read(|| -> u8 { panic!("a page broke the reader") }).await, None);
        assert_eq!(super::read(|| 7).await, Some(7), "the reader goes on after a panic");
    }
}
