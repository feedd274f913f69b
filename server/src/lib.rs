//! Context Assistant server: the HTTP API, the turn engine, the Remote
//! Tools client, the offline demo model and the Acme Bistro demo host.
//! `main.rs` only loads configuration and calls [`app::Application`].

pub mod api;
pub mod app;
pub mod auth;
pub mod bistro;
pub mod caddie;
pub mod component;
pub mod config;
pub mod crypto;
pub mod db;
pub mod demo;
pub mod display;
pub mod embed;
pub mod engine;
pub mod host;
pub mod ids;
pub mod llm;
pub mod markdown;
pub mod precompress;
pub mod schema;
pub mod secret;
pub mod state;
pub mod telemetry;
