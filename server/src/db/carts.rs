//! The demo bistro's carts, kept server-side per customer (workspace +
//! user). The prices and totals are the bistro's own (`bistro::cart`).

use sqlx::FromRow;

use crate::db::Pool;
use crate::ids::now_ms;

/// One line of a cart.
#[derive(Debug, Clone, FromRow, PartialEq, Eq)]
pub struct CartLine {
    pub item: String,
    pub quantity: i64,
    pub notes: String,
}

pub async fn lines(pool: &Pool, customer: &str) -> anyhow::Result<Vec<CartLine>> {
    Ok(sqlx::query_as(
        "SELECT item, quantity, notes FROM bistro_cart_lines WHERE customer_key = $1 ORDER BY added_at, item",
    )
    .bind(customer)
    .fetch_all(pool)
    .await?)
}

/// Adds `quantity` of `item`; `notes`, when given, replace the line's notes.
pub async fn add(pool: &Pool, customer: &str, item: &str, quantity: i64, notes: Option<&str>) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    let existing: Option<(i64, String)> =
        sqlx::query_as("SELECT quantity, notes FROM bistro_cart_lines WHERE customer_key = $1 AND item = $2")
            .bind(customer)
            .bind(item)
            .fetch_optional(&mut *tx)
            .await?;
    match existing {
        Some((current, old_notes)) => {
            sqlx::query("UPDATE bistro_cart_lines SET quantity = $1, notes = $2 WHERE customer_key = $3 AND item = $4")
                .bind((current + quantity).min(99))
                .bind(notes.unwrap_or(&old_notes))
                .bind(customer)
                .bind(item)
                .execute(&mut *tx)
                .await?;
        }
        None => {
            sqlx::query(
                "INSERT INTO bistro_cart_lines (customer_key, item, quantity, notes, added_at) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(customer)
            .bind(item)
            .bind(quantity.min(99))
            .bind(notes.unwrap_or(""))
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// Removes one unit of `item`; nothing to remove is not an error.
pub async fn remove_one(pool: &Pool, customer: &str, item: &str) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    sqlx::query("UPDATE bistro_cart_lines SET quantity = quantity - 1 WHERE customer_key = $1 AND item = $2")
        .bind(customer)
        .bind(item)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM bistro_cart_lines WHERE customer_key = $1 AND quantity <= 0")
        .bind(customer)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Replaces the notes of `item`'s line; false when it is not in the cart.
pub async fn set_notes(pool: &Pool, customer: &str, item: &str, notes: &str) -> anyhow::Result<bool> {
    let updated = sqlx::query("UPDATE bistro_cart_lines SET notes = $1 WHERE customer_key = $2 AND item = $3")
        .bind(notes)
        .bind(customer)
        .bind(item)
        .execute(pool)
        .await?
        .rows_affected();
    Ok(updated > 0)
}

pub async fn clear(pool: &Pool, customer: &str) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM bistro_cart_lines WHERE customer_key = $1").bind(customer).execute(pool).await?;
    Ok(())
}
