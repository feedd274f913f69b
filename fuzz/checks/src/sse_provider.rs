//! The model provider's stream as the model client reads it:
//! `eventsource-stream` (what async-openai frames events with) gives the
//! same events however the network cuts the bytes, and merging their JSON
//! never panics and keeps its bounds (the step's tool calls).

use std::convert::Infallible;

use crate::chunks;
use arbitrary::Unstructured;
use futures::StreamExt;
use server::llm::stream::Accumulator;

/// The `data` of each event of `pieces`, read in that order.
fn events(pieces: Vec<&[u8]>) -> Vec<String> {
    let bytes = futures::stream::iter(pieces.into_iter().map(Ok::<_, Infallible>));
    futures::executor::block_on(
        eventsource_stream::EventStream::new(bytes)
            .take_while(|event| std::future::ready(event.is_ok()))
            .map(|event| event.expect("taken while ok").data)
            .collect(),
    )
}

/// One input: the fuzzer's bytes.
pub fn check(data: &[u8]) {
    let (cuts, stream) = data.split_at(data.len().min(16));
    let whole = events(vec![stream]);
    let mut u = Unstructured::new(cuts);
    let chunked = events(chunks(&mut u, stream).expect("cutting never fails"));
    assert_eq!(whole, chunked, "the cuts changed the events");

    let mut step = Accumulator::default();
    for data in whole.iter().take_while(|d| *d != "[DONE]") {
        let Ok(chunk) = serde_json::from_str(data) else { break };
        if step.merge_chunk(&chunk).is_err() {
            break;
        }
    }
    assert!(step.calls.len() <= 64, "{} tool calls", step.calls.len());
}
