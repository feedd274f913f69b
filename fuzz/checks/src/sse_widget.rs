//! The widget's reader of the turn stream: however the network cuts the
//! bytes, the same events come out; nothing panics.

use crate::chunks;
use arbitrary::Unstructured;
use widget::sse::SseParser;

/// One input: the fuzzer's bytes.
pub fn check(data: &[u8]) {
    let (cuts, stream) = data.split_at(data.len().min(16));
    let whole = SseParser::default().feed(stream);
    let mut parser = SseParser::default();
    let mut u = Unstructured::new(cuts);
    let pieces = chunks(&mut u, stream).expect("cutting never fails");
    let chunked: Vec<_> = pieces.into_iter().flat_map(|piece| parser.feed(piece)).collect();
    assert_eq!(whole, chunked, "the cuts changed the events");
    for event in &whole {
        assert!(!event.event.is_empty() && !event.event.contains('\n'), "{event:?}");
    }
}
