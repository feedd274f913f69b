//! The model provider's stream: however the network cuts the bytes, the
//! same `data` payloads come out, and merging them never panics and keeps
//! its bounds (the step's tool calls).

use crate::chunks;
use arbitrary::Unstructured;
use server::llm::stream::{Accumulator, SseLines};

/// One input: the fuzzer's bytes.
pub fn check(data: &[u8]) {
    let (cuts, stream) = data.split_at(data.len().min(16));
    let mut once = SseLines::default();
    let mut whole = once.push(stream);
    whole.extend(once.finish());
    let mut lines = SseLines::default();
    let mut u = Unstructured::new(cuts);
    let mut chunked: Vec<String> =
        chunks(&mut u, stream).expect("cutting never fails").into_iter().flat_map(|piece| lines.push(piece)).collect();
    chunked.extend(lines.finish());
    assert_eq!(whole, chunked, "the cuts changed the payloads");

    let mut step = Accumulator::default();
    for payload in &whole {
        if step.push(payload).is_err() {
            break;
        }
    }
    assert!(step.calls.len() <= 64, "{} tool calls", step.calls.len());
}
