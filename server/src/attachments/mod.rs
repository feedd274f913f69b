//! Attachments (issue #32): a visitor's photos and files. An upload is
//! spooled to a temporary file as it arrives (never whole in memory),
//! judged by its bytes (`kind`), an image encoded again, then kept in the
//! object store (`store`) under `{workspace}/{id}`; the database records
//! whose it is (`db::attachments`).

pub mod kind;
pub mod pdf;
pub mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

pub use kind::{Kind, Refused};

/// The most characters of a text attachment the model is given.
pub const TEXT_CHARS: usize = 20_000;
/// The first bytes a file's kind is judged by.
pub const HEAD: usize = 512;

/// The attachments' store and limits, shared by every request.
#[derive(Clone)]
pub struct Attachments {
    store: Arc<dyn ObjectStore>,
    /// Largest upload taken, in bytes.
    pub max_bytes: u64,
    /// Where uploads are spooled while they arrive.
    spool: PathBuf,
    /// Signs the short-lived links tools get files by.
    links: Links,
}

/// The short-lived signed links a tool gets a file by
/// (`GET /v1/attachments/{id}/content?exp=…&sig=…`): one file of one
/// workspace, until `exp`, without any other credential.
#[derive(Clone)]
pub struct Links {
    /// Derived from the server's key: the same on every replica.
    pub key: crate::secret::Secret,
    /// The assistant's origin, e.g. `https://assistant.example`.
    pub origin: Arc<str>,
    /// How long a link lasts (`CA_ATTACHMENT_LINK_SECS`).
    pub lifetime: std::time::Duration,
}

impl Links {
    fn mac(&self, workspace_id: &str, id: &str, exp: &str) -> hmac::Hmac<Sha256> {
        crate::crypto::fields_mac(&self.key, &[workspace_id, id, exp])
    }

    /// The link to attachment `id` of `workspace_id`, valid from `now_ms`
    /// for the links' lifetime.
    pub fn sign(&self, workspace_id: &str, id: &str, now_ms: i64) -> String {
        use hmac::Mac;
        let exp = (now_ms / 1000 + self.lifetime.as_secs() as i64).to_string();
        let sig = hex::encode(self.mac(workspace_id, id, &exp).finalize().into_bytes());
        format!("{}/v1/attachments/{id}/content?exp={exp}&sig={sig}", self.origin)
    }

    /// True when `sig` signs attachment `id` of `workspace_id` until `exp`
    /// (seconds) and that is still ahead of `now_ms`.
    pub fn verify(&self, workspace_id: &str, id: &str, exp: &str, sig: &str, now_ms: i64) -> bool {
        use hmac::Mac;
        let (Ok(expires), Ok(sig)) = (exp.parse::<i64>(), hex::decode(sig)) else { return false };
        // Constant time, then the clock.
        self.mac(workspace_id, id, exp).verify_slice(&sig).is_ok() && expires * 1000 > now_ms
    }
}

/// A PDF's text as the model is given it: its layout's runs of blank
/// lines and trailing spaces dropped, at most [`TEXT_CHARS`] characters.
fn bounded(text: &str) -> String {
    let mut kept = String::new();
    for line in text.lines().map(str::trim_end) {
        if !(line.is_empty() && (kept.is_empty() || kept.ends_with("\n\n"))) {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    let kept = kept.trim_end();
    let mut shown: String = kept.chars().take(TEXT_CHARS).collect();
    if shown.len() < kept.len() {
        shown.push_str("\n[… the rest of the file is not shown]");
    }
    shown
}

/// The text of a file's first bytes: where the read stopped before the
/// file's end (`cut`), a last character the cut split is left out rather
/// than shown as U+FFFD; anything else not UTF-8 shows as U+FFFD.
fn text_prefix(bytes: &[u8], cut: bool) -> std::borrow::Cow<'_, str> {
    let mut end = bytes.len();
    // The last character's first byte (not a continuation byte 10xxxxxx),
    // among the last four, and the length it announces.
    if cut && let Some(start) = (end.saturating_sub(4)..end).rev().find(|&i| bytes[i] & 0xC0 != 0x80) {
        let announced = match bytes[start] {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        if start + announced > end {
            end = start;
        }
    }
    String::from_utf8_lossy(&bytes[..end])
}

/// What a workspace lets its visitors attach, as a file input's `accept`
/// (the widget's boot): its `attachment_types`, or every kind taken;
/// empty when it takes none.
pub fn accept(types: Option<&[String]>) -> String {
    let kinds = kind::ALL.into_iter().map(Kind::media_type);
    match types {
        Some(types) => kinds.filter(|k| types.iter().any(|t| t == k)).collect::<Vec<_>>().join(","),
        None => kinds.collect::<Vec<_>>().join(","),
    }
}

/// What cleaning made of an upload: an image's new bytes (and kind),
/// nothing to change (`None`), or why it is refused.
type Cleaned = anyhow::Result<Result<Option<(Kind, Vec<u8>)>, Refused>>;

/// An upload as kept: its kind (a GIF is kept as PNG), size and digest.
#[derive(Debug)]
pub struct Kept {
    pub kind: Kind,
    pub size: u64,
    pub sha256: String,
}

impl Attachments {
    pub fn new(store: Arc<dyn ObjectStore>, max_bytes: u64, spool: PathBuf, links: Links) -> Self {
        Self { store, max_bytes, spool, links }
    }

    /// The short-lived signed links tools get files by.
    pub fn links(&self) -> &Links {
        &self.links
    }

    /// A new spool file's path (the caller removes it: [`Spooled`]).
    pub async fn spool_file(&self) -> anyhow::Result<Spooled> {
        tokio::fs::create_dir_all(&self.spool).await.context("cannot create the spool directory")?;
        Ok(Spooled(self.spool.join(crate::ids::new_id("up"))))
    }

    /// Keeps the spooled upload at `spooled` of `kind` as `key`: an image
    /// as encoded again, anything else as it came (streamed in parts).
    pub async fn keep(&self, key: &str, kind: Kind, spooled: &Path) -> anyhow::Result<Result<Kept, Refused>> {
        let path = spooled.to_owned();
        let cleaned = tokio::task::spawn_blocking(move || -> Cleaned {
            let file = std::fs::File::open(&path).context("cannot read the spooled upload")?;
            Ok(kind::clean(kind, std::io::BufReader::new(file)))
        })
        .await??;
        let target = ObjectPath::from(key);
        match cleaned {
            Err(refused) => Ok(Err(refused)),
            Ok(Some((kind, bytes))) => {
                let kept = Kept { kind, size: bytes.len() as u64, sha256: hex::encode(Sha256::digest(&bytes)) };
                self.store.put(&target, PutPayload::from(bytes)).await.context("cannot store the attachment")?;
                Ok(Ok(kept))
            }
            Ok(None) => {
                let mut file = tokio::fs::File::open(spooled).await.context("cannot read the spooled upload")?;
                let upload = self.store.put_multipart(&target).await.context("cannot start storing the attachment")?;
                let mut writer = WriteMultipart::new(upload);
                let (mut size, mut digest) = (0u64, Sha256::new());
                let mut chunk = vec![0u8; 256 * 1024];
                loop {
                    let n = file.read(&mut chunk).await.context("cannot read the spooled upload")?;
                    if n == 0 {
                        break;
                    }
                    size += n as u64;
                    digest.update(&chunk[..n]);
                    writer.write(&chunk[..n]);
                }
                writer.finish().await.context("cannot store the attachment")?;
                Ok(Ok(Kept { kind, size, sha256: hex::encode(digest.finalize()) }))
            }
        }
    }

    /// The bytes kept as `key`, as a stream.
    pub async fn open(&self, key: &str) -> anyhow::Result<object_store::GetResult> {
        self.store.get(&ObjectPath::from(key)).await.context("cannot read the attachment")
    }

    /// The text the model is given of an attachment: a text file's content
    /// or a PDF's text, at most [`TEXT_CHARS`] characters (marked where it
    /// was cut); none for an image, or a PDF whose text cannot be read.
    pub async fn text_of(&self, attachment: &crate::db::attachments::Attachment) -> anyhow::Result<Option<String>> {
        if attachment.media_type == Kind::Pdf.media_type() {
            let bytes = self.open(&attachment.object_key).await?.bytes().await.context("cannot read the attachment")?;
            return Ok(match pdf::text(bytes).await {
                Ok(text) => Some(bounded(&text)),
                Err(why) => {
                    tracing::info!(attachment_id = %attachment.id, why, "a PDF's text is not given to the model");
                    None
                }
            });
        }
        if attachment.media_type != Kind::Text.media_type() {
            return Ok(None);
        }
        let size = u64::try_from(attachment.size).unwrap_or(0);
        if size == 0 {
            return Ok(Some(String::new()));
        }
        // At most four bytes a character: never more read than that.
        let range = 0..(TEXT_CHARS as u64 * 4).min(size);
        let path = ObjectPath::from(attachment.object_key.as_str());
        let bytes = self.store.get_range(&path, range.clone()).await.context("cannot read the attachment")?;
        let text = text_prefix(&bytes, range.end < size);
        let mut kept: String = text.chars().take(TEXT_CHARS).collect();
        if (kept.len() as u64) < size {
            kept.push_str("\n[… the rest of the file is not shown]");
        }
        Ok(Some(kept))
    }

    /// An image attachment kept as `key` as a model is given it (scaled
    /// down when large); `None` for one that cannot be read.
    pub async fn image_for_model(&self, key: &str, media_type: &str) -> anyhow::Result<Option<crate::llm::Image>> {
        use base64::Engine as _;
        let bytes = self.open(key).await?.bytes().await.context("cannot read the attachment")?;
        let media_type = media_type.to_owned();
        let prepared = tokio::task::spawn_blocking(move || kind::for_model(&media_type, &bytes)).await?;
        Ok(prepared.map(|(media_type, bytes)| crate::llm::Image {
            media_type,
            base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        }))
    }

    /// Forgets the bytes kept as `key` (already gone is fine).
    pub async fn remove(&self, key: &str) -> anyhow::Result<()> {
        match self.store.delete(&ObjectPath::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e).context("cannot delete the attachment"),
        }
    }
}

/// A spooled upload's file, removed when dropped.
pub struct Spooled(PathBuf);

impl Spooled {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The name an attachment is shown by: the last part of what the browser
/// sent, without control characters or direction marks, at most 200 characters; `file`
/// when nothing is left.
pub fn display_name(sent: Option<&str>) -> String {
    let base = sent.unwrap_or("").rsplit(['/', '\\']).next().unwrap_or("");
    // Control characters, and the direction marks that make `exe.jpg`
    // read as `gpj.exe`.
    let spoofing = |c: &char| matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let name: String = base.chars().filter(|c| !c.is_control() && !spoofing(c)).take(200).collect();
    let name = name.trim();
    if name.is_empty() || name == "." || name == ".." { "file".to_owned() } else { name.to_owned() }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_text_cut_mid_character_ends_on_the_last_whole_one() {
        let text = "café 日本語 🙂".as_bytes();
        for cut in 1..text.len() {
            let shown = super::text_prefix(&text[..cut], true);
            assert!(!shown.contains('\u{FFFD}'), "cut at {cut}: {shown:?}");
            assert!("café 日本語 🙂".starts_with(shown.as_ref()), "cut at {cut}: {shown:?}");
            assert!(shown.len() + 3 >= cut, "at most a split character left out at {cut}");
        }
        // The file's real end, or bad bytes inside, still show as U+FFFD.
        assert_eq!(super::text_prefix(b"ab\xE6", false), "ab\u{FFFD}");
        assert_eq!(super::text_prefix(b"a\xFFbc", true), "a\u{FFFD}bc");
    }

    use super::{Links, display_name};

    fn links() -> Links {
        Links {
            key: crate::secret::Secret::new("k".repeat(64)),
            origin: "https://assistant.example".into(),
            lifetime: std::time::Duration::from_secs(600),
        }
    }

    /// The `exp` and `sig` of a link.
    fn parts(link: &str) -> (String, String) {
        let query = link.split_once('?').unwrap().1;
        let field = |name: &str| query.split('&').find_map(|p| p.strip_prefix(&format!("{name}="))).unwrap().to_owned();
        (field("exp"), field("sig"))
    }

    #[test]
    fn a_link_opens_its_own_file_until_it_expires_and_nothing_else() {
        let now = 1_800_000_000_000;
        let link = links().sign("ws_1", "att_1", now);
        assert!(
            link.starts_with("https://assistant.example/v1/attachments/att_1/content?exp=1800000600&sig="),
            "{link}"
        );
        let (exp, sig) = parts(&link);
        assert!(links().verify("ws_1", "att_1", &exp, &sig, now));
        assert!(links().verify("ws_1", "att_1", &exp, &sig, now + 599_000));
        assert!(!links().verify("ws_1", "att_1", &exp, &sig, now + 600_000), "expired");
        assert!(!links().verify("ws_1", "att_2", &exp, &sig, now), "another file");
        assert!(!links().verify("ws_2", "att_1", &exp, &sig, now), "another workspace");
        assert!(!links().verify("ws_1", "att_1", "9999999999", &sig, now), "a later expiry");
        let mut forged = sig.clone().into_bytes();
        forged[0] = if forged[0] == b'0' { b'1' } else { b'0' };
        assert!(!links().verify("ws_1", "att_1", &exp, &String::from_utf8(forged).unwrap(), now));
        assert!(!links().verify("ws_1", "att_1", &exp, "", now));
        assert!(!links().verify("ws_1", "att_1", &exp, "not hex", now));
        let other = Links { key: crate::secret::Secret::new("x".repeat(64)), ..links() };
        assert!(!other.verify("ws_1", "att_1", &exp, &sig, now), "another server key");
    }

    #[test]
    fn a_name_is_its_last_part_without_control_characters_or_direction_marks() {
        assert_eq!(display_name(Some("C:\\Users\\me\\parcel.jpg")), "parcel.jpg");
        assert_eq!(display_name(Some("../../etc/passwd")), "passwd");
        assert_eq!(display_name(Some("a\u{202e}gpj.exe\n")), "agpj.exe");
        assert_eq!(display_name(Some("..")), "file");
        assert_eq!(display_name(None), "file");
        assert_eq!(display_name(Some(&"x".repeat(300))).len(), 200);
    }
}
