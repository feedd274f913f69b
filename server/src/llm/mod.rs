//! The model: any OpenAI-compatible chat-completions endpoint, reached
//! through async-openai (`create_stream_byot`: the request and the chunks
//! are loose JSON of our own, since strict types are where other agents'
//! turns die on Azure's filter chunks, Gemini's signatures or a missing
//! `index`). Ours on top of it, each named for what it adds: the
//! [`stream::Accumulator`] of loose chunks (the fixture corpus in
//! `tests/tests/api/fixtures/providers/` holds the dialects we know), the
//! history budget (`history.rs`), the retry before the first token and the
//! mapping of failures to stop reasons (`model.rs`, `errors.rs`), and the
//! HTTP under async-openai (`transport.rs`). The built-in demo model
//! ([`demo`]) is such an endpoint served by this same binary, so there is
//! one code path.

pub mod demo;
mod errors;
mod history;
mod model;
pub mod stream;
mod transport;
mod types;
pub mod wire;

pub use errors::ModelError;
pub use model::{Model, ModelPolicy, embeddings_endpoint, estimate_tokens, known_vision, workspace_http};
pub use types::{ChatMessage, Finish, Image, StepOutput, ToolCall};
