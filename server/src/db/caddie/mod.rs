//! The Caddie tool side's tables (caddie-tool-contract-ct1.md): links,
//! launch tokens and contexts, sessions and sign-in flows, grants and the
//! audit log, and the status-report queue.

mod grants;
mod launch;
mod links;
mod reports;
mod sessions;

pub use grants::*;
pub use launch::*;
pub use links::*;
pub use reports::*;
pub use sessions::*;

use crate::db::Pool;
use crate::ids::now_ms;

/// Deletes what can no longer be used: expired sessions, launch contexts,
/// sign-in flows, and burnt jtis and nonces past every validity window.
pub async fn delete_expired(pool: &Pool) -> anyhow::Result<u64> {
    let now = now_ms();
    let mut deleted = 0;
    for (sql, cutoff) in [
        ("DELETE FROM user_sessions WHERE expires_at < $1", now),
        ("DELETE FROM caddie_launch_ctx WHERE expires_at < $1", now),
        ("DELETE FROM oidc_flows WHERE created_at < $1", now - FLOW_TTL_MS),
        ("DELETE FROM caddie_consumed_jti WHERE expires_at < $1", now - 120_000),
        ("DELETE FROM caddie_nonces WHERE expires_at < $1", now / 1000),
    ] {
        deleted += sqlx::query(sql).bind(cutoff).execute(pool).await?.rows_affected();
    }
    Ok(deleted)
}
