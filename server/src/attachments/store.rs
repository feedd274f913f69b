//! Where attachments' bytes are kept, through the `object_store` crate:
//! the local file system under `CA_DATA_DIR/attachments` by default, or
//! any S3-compatible store (`CA_ATTACHMENTS_URL=s3://bucket/prefix`, with
//! the standard `AWS_*` variables: `AWS_ENDPOINT_URL`, `AWS_REGION`,
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`).
//!
//! S3's request signing needs SHA-256 and HMAC-SHA256; object_store asks
//! for them through its `CryptoProvider`, which it implements on `ring` or
//! `aws-lc-rs`. Both are C and assembly builds (minutes on two cores) and
//! a second crypto library beside the RustCrypto crates the server already
//! signs its tokens with, so the provider here is those crates.

use std::sync::Arc;

use anyhow::Context;
use hmac::{Hmac, Mac};
use object_store::ObjectStore;
use object_store::client::{CryptoProvider, DigestAlgorithm, DigestContext, HmacContext, Signer, SigningAlgorithm};
use sha2::{Digest, Sha256};

use crate::config::S3Config;

/// The S3-compatible store `s3` names, or the local directory `local`
/// when there is none.
pub fn open(s3: Option<&S3Config>, local: &std::path::Path) -> anyhow::Result<Arc<dyn ObjectStore>> {
    let Some(s3) = s3 else {
        std::fs::create_dir_all(local).with_context(|| format!("cannot create {}", local.display()))?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(local)
            .with_context(|| format!("cannot keep attachments in {}", local.display()))?;
        return Ok(Arc::new(store));
    };
    let parsed = url::Url::parse(&s3.url).context("CA_ATTACHMENTS_URL is not a URL")?;
    anyhow::ensure!(parsed.scheme() == "s3", "CA_ATTACHMENTS_URL must be s3://bucket[/prefix]");
    let bucket = parsed.host_str().context("CA_ATTACHMENTS_URL names no bucket")?;
    // The instance's own AWS settings first (a role's credentials), then ours.
    let mut builder = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_crypto_provider(Arc::new(RustCrypto));
    if let Some(endpoint) = &s3.endpoint {
        // An S3-compatible server on plain HTTP (a test's, a private network's).
        builder = builder.with_endpoint(endpoint).with_allow_http(endpoint.starts_with("http://"));
    }
    if let Some(region) = &s3.region {
        builder = builder.with_region(region);
    }
    if let Some(key) = &s3.access_key_id {
        builder = builder.with_access_key_id(key);
    }
    if let Some(secret) = &s3.secret_access_key {
        builder = builder.with_secret_access_key(secret.expose());
    }
    if let Some(token) = &s3.session_token {
        builder = builder.with_token(token.expose());
    }
    let store = builder.build().context("cannot open the attachments' S3 store")?;
    let prefix = parsed.path().trim_matches('/');
    Ok(if prefix.is_empty() {
        Arc::new(store)
    } else {
        Arc::new(object_store::prefix::PrefixStore::new(store, prefix.to_owned()))
    })
}

/// SHA-256 and HMAC-SHA256 for S3's signatures, on the `sha2` and `hmac`
/// crates. RSA signing is Google Cloud's only and is not offered.
#[derive(Debug)]
struct RustCrypto;

impl CryptoProvider for RustCrypto {
    fn digest(&self, algorithm: DigestAlgorithm) -> object_store::Result<Box<dyn DigestContext>> {
        match algorithm {
            DigestAlgorithm::Sha256 => Ok(Box::new(Sha256Context(Sha256::new(), Vec::new()))),
            _ => Err(unsupported("this digest")),
        }
    }

    fn hmac(&self, algorithm: DigestAlgorithm, secret: &[u8]) -> object_store::Result<Box<dyn HmacContext>> {
        match algorithm {
            DigestAlgorithm::Sha256 => {
                let mac = Hmac::<Sha256>::new_from_slice(secret).map_err(|_| unsupported("this HMAC key"))?;
                Ok(Box::new(HmacSha256(mac, Vec::new())))
            }
            _ => Err(unsupported("this HMAC")),
        }
    }

    fn sign(&self, _algorithm: SigningAlgorithm, _pem: &[u8]) -> object_store::Result<Box<dyn Signer>> {
        Err(unsupported("RSA signing"))
    }
}

fn unsupported(what: &str) -> object_store::Error {
    object_store::Error::NotSupported { source: format!("{what} is not offered by the assistant's crypto").into() }
}

/// A digest being computed, and its value once finished.
struct Sha256Context(Sha256, Vec<u8>);

impl DigestContext for Sha256Context {
    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    fn finish(&mut self) -> object_store::Result<&[u8]> {
        self.1 = std::mem::take(&mut self.0).finalize().to_vec();
        Ok(&self.1)
    }
}

struct HmacSha256(Hmac<Sha256>, Vec<u8>);

impl HmacContext for HmacSha256 {
    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    fn finish(&mut self) -> object_store::Result<&[u8]> {
        self.1 = self.0.clone().finalize().into_bytes().to_vec();
        Ok(&self.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crypto_gives_the_published_test_vectors() {
        // FIPS 180-2's "abc", and RFC 4231's first HMAC-SHA256 case.
        let mut digest = RustCrypto.digest(DigestAlgorithm::Sha256).unwrap();
        digest.update(b"ab");
        digest.update(b"c");
        assert_eq!(
            hex::encode(digest.finish().unwrap()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut mac = RustCrypto.hmac(DigestAlgorithm::Sha256, &[0x0b; 20]).unwrap();
        mac.update(b"Hi There");
        assert_eq!(
            hex::encode(mac.finish().unwrap()),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert!(RustCrypto.sign(SigningAlgorithm::RS256, b"").is_err());
    }

    #[test]
    fn only_s3_urls_with_a_bucket_are_taken() {
        let dir = std::env::temp_dir().join(format!("ca-store-{}", std::process::id()));
        let s3 = |url: &str| S3Config {
            url: url.into(),
            endpoint: Some("http://127.0.0.1:9".into()),
            region: Some("us-east-1".into()),
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
        };
        assert!(open(Some(&s3("gs://bucket")), &dir).is_err());
        assert!(open(Some(&s3("not a url")), &dir).is_err());
        assert!(open(Some(&s3("s3://bucket/prefix")), &dir).is_ok());
        assert!(open(None, &dir).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
