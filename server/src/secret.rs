//! A string that must never reach a log or a response by accident.

use std::fmt;

/// Holds a secret; `Debug` and `Display` print a placeholder.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that must use it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Compares in constant time (for bearer tokens).
    pub fn matches(&self, candidate: &str) -> bool {
        use sha2::{Digest, Sha256};
        use subtle::ConstantTimeEq;
        // Hash both sides first so the comparison length does not depend on the input.
        let a = Sha256::digest(self.0.as_bytes());
        let b = Sha256::digest(candidate.as_bytes());
        a.ct_eq(&b).into()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}
