//! The contract's keys (caddie-tool-contract-ct1.md §1, assistant-api.md §5):
//! from the shared secret's bytes exactly as written, HKDF-SHA256 with no
//! salt and `info` = `caddie->tool` or `tool->caddie`, 32 bytes each; the
//! key id is the first 8 hex digits of SHA-256 of the same bytes. Each
//! direction has its own key, so a verifier of one cannot forge the other.

use hkdf::Hkdf;
use sha2::{Digest, Sha256};

use crate::secret::Secret;

/// The two direction keys of one shared secret.
#[derive(Clone)]
pub struct KeyPair {
    pub kid: String,
    pub caddie_to_tool: [u8; 32],
    pub tool_to_caddie: [u8; 32],
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyPair({}, ***)", self.kid)
    }
}

impl KeyPair {
    pub fn derive(secret: &Secret) -> Self {
        let ikm = secret.expose().as_bytes();
        Self {
            kid: key_id(ikm),
            caddie_to_tool: expand(ikm, b"caddie->tool"),
            tool_to_caddie: expand(ikm, b"tool->caddie"),
        }
    }
}

/// The current key pair and, during a rotation, the previous one.
#[derive(Clone, Debug)]
pub struct Keys {
    pub current: KeyPair,
    pub previous: Option<KeyPair>,
}

impl Keys {
    pub fn new(current: &Secret, previous: Option<&Secret>) -> Self {
        Self { current: KeyPair::derive(current), previous: previous.map(KeyPair::derive) }
    }

    /// Current first, then the previous one.
    pub fn all(&self) -> impl Iterator<Item = &KeyPair> {
        std::iter::once(&self.current).chain(self.previous.as_ref())
    }

    /// The pair a key id names, if it is one of ours.
    pub fn by_id(&self, kid: &str) -> Option<&KeyPair> {
        self.all().find(|k| k.kid == kid)
    }
}

fn expand(ikm: &[u8], info: &[u8]) -> [u8; 32] {
    let mut okm = [0u8; 32];
    Hkdf::<Sha256>::new(None, ikm).expand(info, &mut okm).expect("32 bytes is a valid HKDF-SHA256 length");
    okm
}

fn key_id(ikm: &[u8]) -> String {
    hex::encode(Sha256::digest(ikm))[..8].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pinned against an independent implementation (Python's hmac/hashlib,
    /// RFC 5869 by hand), so any hub can interoperate.
    #[test]
    fn derivation_is_pinned() {
        let pair = KeyPair::derive(&Secret::new("correct horse battery staple"));
        assert_eq!(pair.kid, "c4bbcb1f");
        assert_eq!(
            hex::encode(pair.caddie_to_tool),
            "6344f0949f72afef90f674843920ad0ae8aeda4cc41f781c09c1b87d60fb15bb"
        );
        assert_eq!(
            hex::encode(pair.tool_to_caddie),
            "e98b230ce3daac960c4ee1c2ca94dcca37f141b1a9b3b6b5ddc3963d3b854163"
        );
        assert_ne!(pair.caddie_to_tool, pair.tool_to_caddie);
    }

    #[test]
    fn the_secret_is_used_exactly_as_written() {
        let plain = KeyPair::derive(&Secret::new("s"));
        let padded = KeyPair::derive(&Secret::new(" s"));
        assert_ne!(plain.kid, padded.kid);
        assert_ne!(plain.caddie_to_tool, padded.caddie_to_tool);
    }
}
