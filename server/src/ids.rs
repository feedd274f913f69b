//! Identifiers and time: random ids with a readable prefix, unix milliseconds.

/// `prefix_` + 32 hex digits of OS randomness (128 bits).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", hex::encode(random_bytes::<16>()))
}

/// Bytes from the operating system's generator.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the operating system's random generator is available");
    bytes
}

/// Milliseconds since the unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}

/// Seconds since the unix epoch.
pub fn now_secs() -> i64 {
    now_ms() / 1000
}

/// A unix time in milliseconds as RFC 3339 (UTC), as the API writes times.
pub fn rfc3339(unix_ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_carry_their_prefix_and_128_random_bits() {
        let a = super::new_id("conv");
        let b = super::new_id("conv");
        assert!(a.starts_with("conv_") && a.len() == 5 + 32);
        assert_ne!(a, b);
    }
}
