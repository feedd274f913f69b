//! Secrets at rest: XChaCha20-Poly1305 under the server key, and hashes of
//! api keys. The key comes from `CA_SECRET_KEY` or a generated key file in
//! the data directory (mode 0600), so a restart can still read what it wrote.
//! During a rotation other keys open too (`CA_SECRET_KEY_NEXT` before
//! the switch, `CA_SECRET_KEY_PREVIOUS` after it), and [`Vault::reseal`]
//! moves what they sealed to the current key.

use std::path::Path;

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::ids::random_bytes;
use crate::secret::Secret;

/// The server's master key. Cheap to clone.
#[derive(Clone)]
pub struct Vault {
    key: [u8; 32],
    /// Keys of a rotation (the next one, or the previous one): they only open.
    others: Vec<[u8; 32]>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Vault(***)")
    }
}

impl Vault {
    /// Uses `configured` (64 hex digits) or reads/creates `<data_dir>/secret.key`;
    /// each of `others` (64 hex digits, named by its variable) also opens
    /// sealed values.
    pub fn load(configured: Option<&Secret>, others: &[(&str, &Secret)], data_dir: &Path) -> anyhow::Result<Self> {
        let mut vault = Self::load_current(configured, data_dir)?;
        for (variable, key) in others {
            vault.others.push(hex_key(key, variable)?);
        }
        Ok(vault)
    }

    fn load_current(configured: Option<&Secret>, data_dir: &Path) -> anyhow::Result<Self> {
        if let Some(configured) = configured {
            return Ok(Self { key: hex_key(configured, "CA_SECRET_KEY")?, others: Vec::new() });
        }
        let path = data_dir.join("secret.key");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let bytes =
                    hex::decode(text.trim()).with_context(|| format!("the key file {} is not hex", path.display()))?;
                let key: [u8; 32] =
                    bytes.try_into().map_err(|_| anyhow::anyhow!("the key file {} is not 32 bytes", path.display()))?;
                Ok(Self { key, others: Vec::new() })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = random_bytes::<32>();
                write_private(&path, hex::encode(key).as_bytes())
                    .with_context(|| format!("cannot write the key file {}", path.display()))?;
                Ok(Self { key, others: Vec::new() })
            }
            Err(e) => Err(e).with_context(|| format!("cannot read the key file {}", path.display())),
        }
    }

    #[cfg(test)]
    pub fn for_tests() -> Self {
        Self { key: [7; 32], others: Vec::new() }
    }

    /// Encrypts `plain`; the output is url-safe base64 of nonce ‖ ciphertext.
    pub fn seal(&self, plain: &str) -> String {
        let cipher = XChaCha20Poly1305::new((&self.key).into());
        let nonce = random_bytes::<24>();
        let sealed = cipher
            .encrypt(XNonce::from_slice(&nonce), plain.as_bytes())
            .expect("encryption of an in-memory buffer cannot fail");
        let mut out = nonce.to_vec();
        out.extend(sealed);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// Decrypts what [`Vault::seal`] wrote with this key or, during a
    /// rotation, the previous one.
    pub fn open(&self, sealed: &str) -> anyhow::Result<Secret> {
        self.open_with_any(sealed).map(|(plain, _)| plain)
    }

    /// A value another key sealed, sealed anew with the current key;
    /// `None` when the current key already opens it.
    pub fn reseal(&self, sealed: &str) -> anyhow::Result<Option<String>> {
        let (plain, by_previous) = self.open_with_any(sealed)?;
        Ok(by_previous.then(|| self.seal(plain.expose())))
    }

    /// The plain text, and whether another key than the current one opened it.
    fn open_with_any(&self, sealed: &str) -> anyhow::Result<(Secret, bool)> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed).context("sealed value is not base64")?;
        if bytes.len() < 24 + 16 {
            bail!("sealed value is too short");
        }
        let (nonce, body) = bytes.split_at(24);
        let decrypt = |key: &[u8; 32]| XChaCha20Poly1305::new(key.into()).decrypt(XNonce::from_slice(nonce), body);
        let (plain, by_other) = match decrypt(&self.key) {
            Ok(plain) => (plain, false),
            Err(_) => (self.others.iter().find_map(|key| decrypt(key).ok()).ok_or_else(not_ours)?, true),
        };
        Ok((Secret::new(String::from_utf8(plain).context("sealed value is not UTF-8")?), by_other))
    }

    /// A stable secret derived for one purpose (for example the built-in
    /// bistro host's bearer), the same on every replica sharing the key.
    pub fn derive(&self, purpose: &str) -> Secret {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC accepts any key length");
        mac.update(purpose.as_bytes());
        Secret::new(hex::encode(mac.finalize().into_bytes()))
    }
}

fn not_ours() -> anyhow::Error {
    anyhow::anyhow!(
        "sealed value does not decrypt with this server's key (CA_SECRET_KEY changed without CA_SECRET_KEY_PREVIOUS?)"
    )
}

/// 32 bytes from 64 hex digits; errors name `variable`.
fn hex_key(value: &Secret, variable: &str) -> anyhow::Result<[u8; 32]> {
    let bytes = hex::decode(value.expose()).with_context(|| format!("{variable} is not hex"))?;
    bytes.try_into().map_err(|_| anyhow::anyhow!("{variable} is not 32 bytes"))
}

/// HMAC-SHA256 under `key` of `fields`, each prefixed with its length, so
/// that no two different lists of fields sign the same string (signed
/// links: the bistro's checkout, attachments' links for tools).
pub fn fields_mac(key: &Secret, fields: &[&str]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key.expose().as_bytes()).expect("HMAC accepts any key length");
    for field in fields {
        mac.update(&(field.len() as u64).to_be_bytes());
        mac.update(field.as_bytes());
    }
    mac
}

/// SHA-256 of an api key, hex: what the database keeps instead of the key.
pub fn hash_api_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o600);
    options.open(path)?.write_all(contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_with_the_same_key_only() {
        let vault = Vault::for_tests();
        let sealed = vault.seal("host-secret");
        assert!(!sealed.contains("host-secret"));
        assert_eq!(vault.open(&sealed).unwrap().expose(), "host-secret");
        let other = Vault { key: [8; 32], others: Vec::new() };
        assert!(other.open(&sealed).is_err());
    }

    #[test]
    fn a_rotation_opens_old_values_and_reseals_them_under_the_new_key() {
        let old = Vault::for_tests();
        let sealed = old.seal("host-secret");
        let rotating = Vault { key: [9; 32], others: vec![[7; 32]] };
        assert_eq!(rotating.open(&sealed).unwrap().expose(), "host-secret");
        let resealed = rotating.reseal(&sealed).unwrap().expect("sealed by the previous key");
        assert!(rotating.reseal(&resealed).unwrap().is_none(), "already under the current key");
        let new_only = Vault { key: [9; 32], others: Vec::new() };
        assert_eq!(new_only.open(&resealed).unwrap().expose(), "host-secret");
        assert!(new_only.open(&sealed).is_err(), "without the previous key the old value stays shut");
        let stranger = Vault { key: [1; 32], others: vec![[2; 32]] };
        assert!(stranger.reseal(&sealed).is_err());
    }

    #[test]
    fn a_tampered_sealed_value_is_refused() {
        let vault = Vault::for_tests();
        let mut sealed = vault.seal("x").into_bytes();
        let last = sealed.len() - 1;
        sealed[last] = if sealed[last] == b'A' { b'B' } else { b'A' };
        assert!(vault.open(std::str::from_utf8(&sealed).unwrap()).is_err());
    }

    #[test]
    fn the_key_file_is_created_once_and_reused() {
        let dir = std::env::temp_dir().join(crate::ids::new_id("vault"));
        std::fs::create_dir_all(&dir).unwrap();
        let first = Vault::load(None, &[], &dir).unwrap();
        let second = Vault::load(None, &[], &dir).unwrap();
        assert_eq!(second.open(&first.seal("kept")).unwrap().expose(), "kept");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
