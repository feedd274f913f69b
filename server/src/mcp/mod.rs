//! MCP servers as tool sources (issue #30), beside the Remote Tools host.
//! What is here so far: the client, one connection to a server (rmcp over
//! Streamable HTTP, [`client`]; its `tools/call` sent by us, `call`), the process's connections, one per
//! integration and reused ([`pool`]), the classification of its tools into our
//! verbs ([`classify`]) and the reading of a tool's result into the
//! engine's output ([`content`]). The connect endpoint and the engine's
//! use of several sources follow.

pub mod apps;
mod call;
pub mod check;
pub mod classify;
pub mod client;
pub mod content;
pub mod elicit;
mod error;
pub mod pool;
