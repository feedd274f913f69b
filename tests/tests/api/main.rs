//! Integration tests: the real server on a random port, with a fresh
//! SQLite file or a fresh PostgreSQL database per test.

mod documented;
mod helpers;
#[path = "../../tls_host.rs"]
mod tls_host;

mod actions;
mod architecture;
mod assistant_tests;
mod attachments;
mod audit;
mod bistro;
mod caddie;
mod chat;
mod checker;
mod components;
mod config;
mod console;
mod contract;
mod embed;
mod erasure;
mod feedback;
mod fuzzing;
mod host_http2;
mod idempotency;
mod idp;
mod keys;
mod knowledge;
mod languages;
mod limits;
mod mcp;
mod mcp_apps;
mod mcp_sources;
mod op;
mod openapi;
mod ops;
mod providers;
mod quotas;
mod resume;
mod rotation;
mod setup;
mod usage;
mod workspace;
