//! Context Assistant server: the HTTP API, the turn engine, the Remote
//! Tools client, the offline demo model and the Acme Bistro demo host.
//! `main.rs` only loads configuration and calls [`app::Application`].
//!
//! Dependencies point one way, down these layers (a module never imports
//! from a layer above it):
//!
//! 1. `app`: wiring — builds every part once and merges the routers;
//! 2. `api`, `caddie`, `bistro`, `demo`, `embed`, `ops`: the HTTP edges, each
//!    owning its router and taking only its own part of the state;
//! 3. `engine`: the turn loop (knows no edge; `TurnFinished` tells who listens);
//! 4. `host`, `llm`, `limits`, `display`, `markdown`, `component`, `schema`, `client_addr`,
//!    `workspaces`, `widget_page`, `auth`, `http`, `precompress`: services;
//! 5. `db` (every query), `config`, `crypto`, `secret`, `clock`, `ids`, `telemetry`, `metrics`.

pub mod api;
pub mod app;
pub mod app_frames;
pub mod attachments;
pub mod auth;
pub mod bistro;
pub mod caddie;
pub mod checker;
pub mod client_addr;
pub mod clock;
pub mod component;
pub mod config;
pub mod console;
pub mod crypto;
pub mod db;
pub mod demo;
pub mod display;
pub mod embed;
pub mod engine;
pub mod host;
pub mod http;
pub mod ids;
pub mod knowledge;
pub mod lanes;
pub mod limits;
pub mod llm;
pub mod markdown;
pub mod mcp;
pub mod metrics;
pub mod ops;
pub mod precompress;
pub mod retention;
pub mod sandbox;
pub mod schema;
pub mod secret;
pub mod serve;
pub mod sources;
pub mod suites;
pub mod telemetry;
pub mod usage;
pub mod widget_page;
pub mod workspaces;
