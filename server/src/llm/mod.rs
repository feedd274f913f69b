//! The model: any OpenAI-compatible chat-completions endpoint, spoken to
//! over HTTP in the dialect every provider accepts and read in whichever
//! dialect it answers (`stream.rs`; the fixture corpus in
//! `tests/tests/api/fixtures/providers/` holds the ones we know). The
//! built-in demo model ([`demo`]) is such an endpoint served by this same
//! binary, so there is one code path.
//!
//! The request and the stream are our own JSON rather than a client
//! library's types: strict types are where other agents' turns die on
//! Azure's filter chunks, Gemini's signatures or a missing `index`.

pub mod demo;
mod errors;
mod history;
mod model;
pub mod stream;
mod types;
pub mod wire;

pub use errors::ModelError;
pub use model::{Model, ModelPolicy, estimate_tokens};
pub use types::{ChatMessage, Finish, StepOutput, ToolCall};
