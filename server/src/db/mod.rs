//! The database: one pool over SQLite or PostgreSQL (sqlx `Any`), the
//! migrations, and every query, in one place. Queries use `$n` placeholders,
//! which both engines accept, and portable types only (TEXT, BIGINT).
//!
//! `pool.rs` opens the database; a file per resource holds its queries
//! (workspaces, conversations, turns, actions, components, carts, and
//! caddie/ for the Caddie tool side).

pub mod actions;
pub mod apps;
pub mod attachments;
pub mod audit;
pub mod bells;
pub mod caddie;
pub mod carts;
pub mod components;
pub mod console;
mod conversations;
pub mod elicitations;
pub mod erasure;
pub mod feedback;
pub mod idempotency;
pub mod kitchen;
pub mod knowledge;
pub mod limits;
mod pool;
pub mod retention;
pub mod test_runs;
pub mod turn_events;
mod turns;
pub mod usage;
mod workspaces;

pub use conversations::*;
pub use pool::{NotReady, Pool, check_ready, connect};
pub use turns::*;
pub use workspaces::*;
