//! A server-sent-events parser for `fetch` streams (EventSource cannot send
//! an Authorization header). Bytes in, complete events out; an event split
//! across chunks, or a character split across chunks, waits for the rest.

/// One event: its `event:` name (default `message`), its `data:` lines,
/// and its `id:` if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
    pub id: Option<String>,
}

/// Incremental parser state.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
}

/// Largest event kept while waiting for its end (a hostile stream cannot
/// grow the buffer without bound).
const MAX_EVENT_BYTES: usize = 1024 * 1024;

impl SseParser {
    /// Feeds bytes; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, separator)) = find_blank_line(&self.buffer) {
            let block: Vec<u8> = self.buffer.drain(..end + separator).take(end).collect();
            if let Some(event) = parse_block(&String::from_utf8_lossy(&block)) {
                events.push(event);
            }
        }
        if self.buffer.len() > MAX_EVENT_BYTES {
            self.buffer.clear();
        }
        events
    }
}

/// The position of the first blank line and the separator's length.
fn find_blank_line(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2));
    let crlf = buffer.windows(4).position(|w| w == b"\r\n\r\n").map(|p| (p, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn parse_block(block: &str) -> Option<SseEvent> {
    let mut event = String::new();
    // Lines joined by hand: `[&str]::join` costs the widget's WASM a kilobyte.
    let mut data: Option<String> = None;
    let mut id = None;
    for line in block.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)) {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => event = value.to_owned(),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            "id" => id = Some(value.to_owned()),
            _ => {}
        }
    }
    Some(SseEvent { event: if event.is_empty() { "message".into() } else { event }, data: data?, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_are_reassembled() {
        let mut p = SseParser::default();
        assert!(p.feed(b"event: text\ndata: {\"delta\":\"Hel").is_empty());
        let events = p.feed(b"lo\"}\n\nevent: done\ndata: {}\n\n");
        assert_eq!(events.len(), 2);
        assert_eq!(events[0], SseEvent { event: "text".into(), data: "{\"delta\":\"Hello\"}".into(), id: None });
        assert_eq!(events[1].event, "done");
    }

    #[test]
    fn a_character_split_across_chunks_survives() {
        let mut p = SseParser::default();
        let bytes = "event: text\ndata: café\n\n".as_bytes();
        let cut = bytes.iter().position(|&b| b == 0xC3).unwrap() + 1;
        assert!(p.feed(&bytes[..cut]).is_empty());
        assert_eq!(p.feed(&bytes[cut..])[0].data, "café");
    }

    #[test]
    fn comments_and_heartbeats_are_not_events() {
        let mut p = SseParser::default();
        assert!(p.feed(b": ping\n\n").is_empty());
        let events = p.feed(b"data: a\r\ndata: b\r\n\r\n");
        assert_eq!(events, vec![SseEvent { event: "message".into(), data: "a\nb".into(), id: None }]);
    }

    #[test]
    fn an_events_id_is_kept_for_resuming() {
        let mut p = SseParser::default();
        let events = p.feed(b"id: 7\nevent: text\ndata: {}\n\n");
        assert_eq!(events[0].id.as_deref(), Some("7"));
    }
}
