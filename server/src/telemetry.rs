//! Structured logs. `RUST_LOG` filters (default `info`); `CA_LOG_FORMAT`
//! picks readable lines (`text`, the default) or one JSON object per line
//! (`json`) for a log pipeline. In JSON, every line carries the fields of
//! the spans it happened in — a turn's `turn_id`, `conversation_id` and
//! `workspace_id` on every line of that turn. Never log a secret, a token,
//! a query string or a message's text.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    /// `CA_LOG_FORMAT`: `text` (or unset) or `json`.
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value.map(str::trim) {
            None | Some("" | "text") => Ok(LogFormat::Text),
            Some("json") => Ok(LogFormat::Json),
            Some(other) => Err(format!("invalid CA_LOG_FORMAT: `{other}` is not text or json")),
        }
    }
}

/// Installs the global subscriber once; later calls (tests) are no-ops.
pub fn init(format: LogFormat) {
    let _ = tracing::subscriber::set_global_default(subscriber(format, std::io::stderr));
}

fn filter() -> EnvFilter {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,hyper=warn,tower_http=info"));
    quiet_model_client(filter)
}

/// async-openai logs an event it cannot parse whole, at error level: that
/// is the model's text, which may quote what a visitor wrote. Off even when
/// `RUST_LOG` asks for it; the model client logs each failure itself,
/// without content.
fn quiet_model_client(filter: EnvFilter) -> EnvFilter {
    filter.add_directive("async_openai=off".parse().expect("a valid directive"))
}

/// The subscriber for `format`, writing to `writer`.
pub fn subscriber<W>(format: LogFormat, writer: W) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt as _;
    let builder = tracing_subscriber::fmt().with_env_filter(filter()).with_target(false).with_writer(writer);
    match format {
        LogFormat::Text => Box::new(builder.finish().with(StreamEndsQuiet)),
        LogFormat::Json => Box::new(
            builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(true)
                .finish()
                .with(StreamEndsQuiet),
        ),
    }
}

/// rmcp warns `sse stream error: …` whenever an MCP server's event stream
/// breaks off instead of ending cleanly — PyPI `mcp`'s servers end theirs
/// that way when a session ends (`body error`) — and then reconnects by
/// itself; when it gives up it says so at error level (`… max retry times
/// reached`), and a stream it cannot read is `fatal sse stream error`.
/// The warning is a session's normal end, not a fault: it is dropped; the
/// other two are kept.
struct StreamEndsQuiet;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for StreamEndsQuiet {
    fn event_enabled(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) -> bool {
        let meta = event.metadata();
        if *meta.level() != tracing::Level::WARN || !meta.target().starts_with("rmcp::transport") {
            return true;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        !message.0.starts_with("sse stream error: ")
    }
}

/// An event's `message` field, as written.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::Instrument;

    use super::*;

    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_lines_carry_the_turns_ids_across_awaits() {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = subscriber(LogFormat::Json, move || writer.clone());
        tracing::subscriber::with_default(subscriber, || {
            let span =
                tracing::info_span!("turn", turn_id = "turn_1", conversation_id = "conv_1", workspace_id = "ws_1");
            futures::executor::block_on(
                async {
                    // Suspended once: the line is written after an `.await`.
                    let mut yielded = false;
                    futures::future::poll_fn(|cx| {
                        if yielded {
                            return std::task::Poll::Ready(());
                        }
                        yielded = true;
                        cx.waker().wake_by_ref();
                        std::task::Poll::Pending
                    })
                    .await;
                    tracing::info!(tool = "lookup", "tool call");
                }
                .instrument(span),
            );
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.lines().next().expect("one line")).unwrap();
        assert_eq!(line["message"], "tool call");
        assert_eq!(line["tool"], "lookup");
        let turn = &line["spans"][0];
        assert_eq!((turn["name"].as_str(), turn["turn_id"].as_str()), (Some("turn"), Some("turn_1")));
        assert_eq!((turn["conversation_id"].as_str(), turn["workspace_id"].as_str()), (Some("conv_1"), Some("ws_1")));
    }

    #[test]
    fn the_model_clients_payload_logs_stay_off_whatever_rust_log_says() {
        let lines = Lines::default();
        let writer = lines.clone();
        let asked = EnvFilter::new("trace,async_openai=trace");
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(quiet_model_client(asked))
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "async_openai::error", "failed deserialization of: my card is 4111");
            tracing::error!(target: "server::llm", "the model sent a stream event that is not JSON");
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        assert!(text.contains("not JSON") && !text.contains("4111"), "{text}");
    }

    #[test]
    fn an_mcp_stream_that_breaks_off_and_is_reconnected_is_no_warning() {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = subscriber(LogFormat::Text, move || writer.clone());
        tracing::subscriber::with_default(subscriber, || {
            // As rmcp's client_side_sse.rs says them (its module is the target).
            tracing::warn!(target: "rmcp::transport::common::client_side_sse", "sse stream error: {}", "body error");
            tracing::warn!(target: "rmcp::transport::common::client_side_sse", id = "7", "sse stream error: {}", "body error");
            tracing::warn!(target: "rmcp::transport::common::client_side_sse", "fatal sse stream error: {}", "bad utf-8");
            tracing::error!(target: "rmcp::transport::common::client_side_sse", "sse stream error: {}, max retry times reached", "body error");
            tracing::warn!(target: "server::mcp", "sse stream error: ours, kept");
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.contains("fatal sse stream error") && text.contains("max retry times reached"), "{text}");
        assert!(text.contains("ours, kept"), "{text}");
    }

    #[test]
    fn only_text_or_json_is_a_log_format() {
        assert_eq!(LogFormat::parse(None), Ok(LogFormat::Text));
        assert_eq!(LogFormat::parse(Some("json")), Ok(LogFormat::Json));
        assert!(LogFormat::parse(Some("xml")).unwrap_err().contains("CA_LOG_FORMAT"));
    }
}
