//! The signed, expiring checkout link and the demo pay page.
//!
//! The link carries `cart` (the readable `idxN-idxN` token), `total`,
//! `src` (attribution) and `exp` (unix seconds), and `sig`: hex
//! HMAC-SHA256 under a key only this server holds, over all four. The pay
//! page checks the signature and the expiry, then recomputes the total from
//! the cart token and the server's own prices: anything that does not add
//! up lands on "cart expired — start again", and nothing is charged.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::cart::CartLine;
use super::menu::MENU;
use crate::secret::Secret;

/// How long a checkout link is good for.
pub const LINK_TTL_SECS: i64 = 15 * 60;
/// The attribution carried to the order record.
pub const SOURCE: &str = "context-assistant";

/// `stone_pizzax2-lemon_tartx1`.
pub fn cart_token(lines: &[CartLine]) -> String {
    lines.iter().map(|l| format!("{}x{}", l.item, l.quantity)).collect::<Vec<_>>().join("-")
}

/// The lines of a cart token, if every part names a menu item and a
/// quantity of 1 to 99.
pub fn parse_cart_token(token: &str) -> Option<Vec<(&'static str, u32)>> {
    let mut lines = Vec::new();
    for part in token.split('-') {
        let (item, quantity) = part.rsplit_once('x')?;
        let item = MENU.iter().find(|m| m.id == item)?;
        let quantity: u32 = quantity.parse().ok().filter(|q| (1..=99).contains(q))?;
        if lines.iter().any(|(id, _)| *id == item.id) {
            return None;
        }
        lines.push((item.id, quantity));
    }
    (!lines.is_empty()).then_some(lines)
}

/// The total of a cart token at the server's prices.
pub fn total_of(lines: &[(&'static str, u32)]) -> u32 {
    lines.iter().map(|(id, q)| MENU.iter().find(|m| m.id == *id).map_or(0, |m| m.price * q)).sum()
}

fn mac(key: &Secret, cart: &str, total: &str, src: &str, exp: &str) -> Hmac<Sha256> {
    crate::crypto::fields_mac(key, &[cart, total, src, exp])
}

/// The query string of a signed link.
pub fn sign(key: &Secret, cart: &str, total: u32, exp: i64) -> String {
    let (total, exp) = (total.to_string(), exp.to_string());
    let sig = hex::encode(mac(key, cart, &total, SOURCE, &exp).finalize().into_bytes());
    format!("cart={cart}&total={total}&src={SOURCE}&exp={exp}&sig={sig}")
}

/// Why a link is refused; each lands on the same "start again" page.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkError {
    Missing,
    BadSignature,
    Expired,
    BadCart,
    TotalMismatch,
}

/// The verified order: its lines and the total recomputed from prices.
#[derive(Debug, PartialEq, Eq)]
pub struct Order {
    pub lines: Vec<(&'static str, u32)>,
    pub total: u32,
}

/// Checks a link's parameters at `now` (unix seconds).
pub fn verify(
    key: &Secret,
    cart: Option<&str>,
    total: Option<&str>,
    src: Option<&str>,
    exp: Option<&str>,
    sig: Option<&str>,
    now: i64,
) -> Result<Order, LinkError> {
    let (Some(cart), Some(total), Some(src), Some(exp), Some(sig)) = (cart, total, src, exp, sig) else {
        return Err(LinkError::Missing);
    };
    let sig = hex::decode(sig).map_err(|_| LinkError::BadSignature)?;
    mac(key, cart, total, src, exp).verify_slice(&sig).map_err(|_| LinkError::BadSignature)?;
    let exp: i64 = exp.parse().map_err(|_| LinkError::Missing)?;
    if now >= exp {
        return Err(LinkError::Expired);
    }
    let lines = parse_cart_token(cart).ok_or(LinkError::BadCart)?;
    let recomputed = total_of(&lines);
    if total.parse::<u32>().ok() != Some(recomputed) {
        return Err(LinkError::TotalMismatch);
    }
    Ok(Order { lines, total: recomputed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Secret {
        Secret::new("bistro-test-key")
    }

    fn params(query: &str) -> std::collections::HashMap<String, String> {
        url::form_urlencoded::parse(query.as_bytes()).into_owned().collect()
    }

    fn check(query: &str, now: i64) -> Result<Order, LinkError> {
        let p = params(query);
        let g = |k: &str| p.get(k).map(String::as_str);
        verify(&key(), g("cart"), g("total"), g("src"), g("exp"), g("sig"), now)
    }

    #[test]
    fn a_signed_link_verifies_with_the_recomputed_total() {
        let query = sign(&key(), "stone_pizzax2-lemon_tartx1", 36, 1_000);
        assert_eq!(check(&query, 999), Ok(Order { lines: vec![("stone_pizza", 2), ("lemon_tart", 1)], total: 36 }));
    }

    #[test]
    fn an_expired_link_is_refused() {
        let query = sign(&key(), "sparklingx1", 4, 1_000);
        assert_eq!(check(&query, 1_000), Err(LinkError::Expired));
    }

    #[test]
    fn tampering_with_any_field_breaks_the_signature() {
        let query = sign(&key(), "stone_pizzax2", 28, 1_000);
        for (from, to) in [
            ("total=28", "total=1"),
            ("stone_pizzax2", "stone_pizzax1"),
            ("exp=1000", "exp=9999"),
            ("src=context-assistant", "src=other"),
        ] {
            assert_eq!(check(&query.replace(from, to), 0), Err(LinkError::BadSignature), "{to}");
        }
        let other_key = sign(&Secret::new("another-key"), "stone_pizzax2", 28, 1_000);
        assert_eq!(check(&other_key, 0), Err(LinkError::BadSignature));
    }

    #[test]
    fn a_signed_but_wrong_total_is_refused() {
        // Even a correctly signed link must add up at today's prices.
        let query = sign(&key(), "stone_pizzax2", 20, 1_000);
        assert_eq!(check(&query, 0), Err(LinkError::TotalMismatch));
    }

    #[test]
    fn cart_tokens_name_menu_items_once_with_sane_quantities() {
        assert!(parse_cart_token("stone_pizzax2-lemon_tartx1").is_some());
        for bad in ["", "pizzax1", "stone_pizzax0", "stone_pizzax100", "stone_pizza", "sparklingx1-sparklingx2"] {
            assert!(parse_cart_token(bad).is_none(), "{bad}");
        }
    }
}
