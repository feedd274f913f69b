//! Sitemaps (sitemaps.org protocol 0.9): a `<urlset>` lists pages, a
//! `<sitemapindex>` lists other sitemaps; either may come gzipped. Read
//! with quick-xml, bounded: the protocol's 50,000 entries and 50 MB
//! uncompressed per file; no DTD or entity is ever expanded.
//!
//! Written here rather than with the `sitemap` crate, which is barely
//! kept: the part we need is the two lists, and the limits are ours.

use std::io::Read;

use quick_xml::Reader;
use quick_xml::events::Event;
use url::Url;

/// Entries read from one sitemap file, at most (the protocol's limit).
pub const MAX_ENTRIES: usize = 50_000;
/// Bytes of one sitemap once uncompressed, at most (the protocol's limit).
pub const MAX_BYTES: u64 = 50 * 1024 * 1024;

/// What one sitemap file lists.
#[derive(Debug, Default, PartialEq)]
pub struct Sitemap {
    /// Pages (`<urlset>`).
    pub pages: Vec<Url>,
    /// Other sitemaps (`<sitemapindex>`).
    pub sitemaps: Vec<Url>,
}

/// Why a sitemap could not be read.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum BadSitemap {
    #[error("it is not a sitemap: {0}")]
    NotXml(String),
    #[error("it is larger than 50 MB uncompressed")]
    TooLarge,
    #[error("it is neither a <urlset> nor a <sitemapindex>")]
    NotASitemap,
}

/// Reads a sitemap's bytes (gzipped or not). Entries that are not http(s)
/// URLs are left out.
pub fn parse(bytes: &[u8]) -> Result<Sitemap, BadSitemap> {
    let xml = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .take(MAX_BYTES + 1)
            .read_to_end(&mut out)
            .map_err(|e| BadSitemap::NotXml(format!("bad gzip: {e}")))?;
        out
    } else {
        bytes.to_vec()
    };
    if xml.len() as u64 > MAX_BYTES {
        return Err(BadSitemap::TooLarge);
    }
    let mut reader = Reader::from_reader(xml.as_slice());
    reader.config_mut().trim_text(true);
    let mut sitemap = Sitemap::default();
    let mut root: Option<Vec<u8>> = None;
    // The text of the `<loc>` being read: quick-xml gives it in pieces
    // around each `&amp;`-like reference.
    let mut loc: Option<String> = None;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => {
                let name = e.local_name().as_ref().to_ascii_lowercase();
                if root.is_none() {
                    if name != b"urlset" && name != b"sitemapindex" {
                        return Err(BadSitemap::NotASitemap);
                    }
                    root = Some(name.clone());
                }
                loc = (name == b"loc").then(String::new);
            }
            Ok(Event::Text(t)) => {
                if let Some(loc) = &mut loc {
                    loc.push_str(&t.decode().map_err(|e| BadSitemap::NotXml(e.to_string()))?);
                }
            }
            Ok(Event::CData(t)) => {
                if let Some(loc) = &mut loc {
                    loc.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Ok(Event::GeneralRef(r)) => {
                if let Some(loc) = &mut loc {
                    // The five predefined entities and character references
                    // only: no other entity is ever expanded.
                    let c = match &*r {
                        b"amp" => Some('&'),
                        b"lt" => Some('<'),
                        b"gt" => Some('>'),
                        b"quot" => Some('"'),
                        b"apos" => Some('\''),
                        _ => r.resolve_char_ref().ok().flatten(),
                    };
                    loc.extend(c);
                }
            }
            Ok(Event::End(_)) => {
                if let Some(text) = loc.take() {
                    push(&mut sitemap, root.as_deref(), text.trim());
                }
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(BadSitemap::NotXml(e.to_string())),
        }
        if sitemap.pages.len() + sitemap.sitemaps.len() >= MAX_ENTRIES {
            break;
        }
        buf.clear();
    }
    if root.is_none() {
        return Err(BadSitemap::NotASitemap);
    }
    Ok(sitemap)
}

fn push(sitemap: &mut Sitemap, root: Option<&[u8]>, loc: &str) {
    let Ok(url) = Url::parse(loc) else { return };
    if !matches!(url.scheme(), "http" | "https") {
        return;
    }
    if root == Some(b"sitemapindex") { sitemap.sitemaps.push(url) } else { sitemap.pages.push(url) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urlset_lists_its_pages() {
        let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
            <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
              <url><loc>https://example.com/a?x=1&amp;y=2</loc><lastmod>2026-01-01</lastmod></url>
              <url><loc> https://example.com/b </loc></url>
              <url><loc>javascript:alert(1)</loc></url>
            </urlset>"#;
        let sitemap = parse(xml).unwrap();
        assert_eq!(
            sitemap.pages.iter().map(Url::as_str).collect::<Vec<_>>(),
            ["https://example.com/a?x=1&y=2", "https://example.com/b"]
        );
        assert!(sitemap.sitemaps.is_empty());
    }

    #[test]
    fn an_index_lists_sitemaps_and_gzip_is_read() {
        use std::io::Write;
        let xml = br#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
            <sitemap><loc>https://example.com/s1.xml.gz</loc></sitemap></sitemapindex>"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(xml).unwrap();
        let sitemap = parse(&gz.finish().unwrap()).unwrap();
        assert_eq!(sitemap.sitemaps.len(), 1);
        assert!(sitemap.pages.is_empty());
    }

    #[test]
    fn what_is_not_a_sitemap_is_refused() {
        assert_eq!(parse(b"<html><body>hi</body></html>"), Err(BadSitemap::NotASitemap));
        assert!(parse(b"not xml at all <<<").is_err());
        let bomb = br#"<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">]><urlset><url><loc>&a;</loc></url></urlset>"#;
        assert!(parse(bomb).map(|s| s.pages.is_empty()).unwrap_or(true), "entities are never expanded");
    }
}
