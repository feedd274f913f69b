//! What an uploaded file is, judged from its bytes (never its name or the
//! `Content-Type` it came with), and the file as it is kept: images are
//! decoded and encoded again, so nothing but their pixels survives — no
//! EXIF, no GPS, no script appended to a JPEG — and a decoding bomb is
//! refused by pixel limits before it is decoded.
//!
//! The signatures are checked here rather than by a detection crate: the
//! allowlist is six kinds, each one a few bytes to compare, and a generic
//! detector would still need this mapping onto what we accept.

use std::io::{BufRead, Cursor, Seek};

use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};

/// The kinds of file an attachment may be (issue #32's allowlist).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Png,
    Jpeg,
    Webp,
    Gif,
    Pdf,
    Text,
}

/// Every kind, in the order the settings list them.
pub const ALL: [Kind; 6] = [Kind::Png, Kind::Jpeg, Kind::Webp, Kind::Gif, Kind::Pdf, Kind::Text];

/// Widest and tallest image taken, in pixels.
pub const MAX_SIDE: u32 = 8192;
/// Most pixels an image may have (about 24 megapixels).
pub const MAX_PIXELS: u64 = 24_000_000;
/// Most memory one image's decoding may take.
const MAX_DECODE_BYTES: u64 = 128 * 1024 * 1024;

impl Kind {
    /// Its media type, as stored and served.
    pub fn media_type(self) -> &'static str {
        match self {
            Kind::Png => "image/png",
            Kind::Jpeg => "image/jpeg",
            Kind::Webp => "image/webp",
            Kind::Gif => "image/gif",
            Kind::Pdf => "application/pdf",
            Kind::Text => "text/plain",
        }
    }

    /// The kind of a media type (as a workspace's settings name it).
    pub fn from_media_type(media_type: &str) -> Option<Kind> {
        ALL.into_iter().find(|k| k.media_type() == media_type)
    }

    pub fn is_image(self) -> bool {
        matches!(self, Kind::Png | Kind::Jpeg | Kind::Webp | Kind::Gif)
    }
}

/// The kind of a file from its first bytes (`head`: at least the first
/// 512, or all of a shorter file); `None` for anything not accepted.
pub fn sniff(head: &[u8]) -> Option<Kind> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(Kind::Png)
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some(Kind::Jpeg)
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some(Kind::Webp)
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some(Kind::Gif)
    } else if head.starts_with(b"%PDF-") {
        Some(Kind::Pdf)
    } else if looks_like_text(head) {
        Some(Kind::Text)
    } else {
        None
    }
}

/// Plain text: UTF-8 (a character cut at the end of `head` allowed), no
/// NUL and no control characters but tab, line feed, carriage return and
/// form feed — which an executable, an archive or a document never is.
fn looks_like_text(head: &[u8]) -> bool {
    if head.is_empty() {
        return false;
    }
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // A multi-byte character cut by the end of the sample.
        Err(e) if e.error_len().is_none() && head.len() - e.valid_up_to() < 4 => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    text.chars().all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r' | '\x0c'))
}

/// Why a file is not kept.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    #[error("the image is {0} by {1} pixels; at most {MAX_SIDE} a side and {MAX_PIXELS} in all are accepted")]
    TooManyPixels(u32, u32),
    #[error("the image could not be read: {0}")]
    BrokenImage(String),
    #[error("the text is not UTF-8")]
    NotText,
}

/// The file as it is kept, from `file` (read from its start) of `kind`:
/// an image decoded within the pixel limits, turned upright and encoded
/// again in its own format (a GIF as the PNG of its first frame, which
/// `kind` then says); anything else as it is (`None`: keep the upload).
pub fn clean(kind: Kind, file: impl BufRead + Seek) -> Result<Option<(Kind, Vec<u8>)>, Refused> {
    match kind {
        Kind::Png | Kind::Jpeg | Kind::Webp | Kind::Gif => reencode(kind, file).map(Some),
        Kind::Text => check_text(file).map(|()| None),
        Kind::Pdf => Ok(None),
    }
}

/// The longest side of an image given to a model: what the providers
/// scale larger images down to anyway (Anthropic's 1568, OpenAI's high
/// detail tiles), so nothing larger is sent.
pub const MODEL_SIDE: u32 = 1568;
/// A kept image at most this large and [`MODEL_SIDE`] goes to the model as
/// it is kept; a larger one is scaled down and encoded as JPEG.
const MODEL_BYTES: usize = 1_500_000;

/// A kept image (already cleaned: within the pixel limits) as a model is
/// given it: its media type and bytes. `None` when it cannot be read.
pub fn for_model(media_type: &str, bytes: &[u8]) -> Option<(&'static str, Vec<u8>)> {
    let kind = Kind::from_media_type(media_type).filter(|k| k.is_image())?;
    let (width, height) = reader(kind, Cursor::new(bytes)).into_dimensions().ok()?;
    if width.max(height) <= MODEL_SIDE && bytes.len() <= MODEL_BYTES && kind != Kind::Gif {
        return Some((kind.media_type(), bytes.to_vec()));
    }
    let image = reader(kind, Cursor::new(bytes)).decode().ok()?.resize(
        MODEL_SIDE,
        MODEL_SIDE,
        image::imageops::FilterType::Triangle,
    );
    let mut out = Cursor::new(Vec::new());
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
    DynamicImage::ImageRgb8(image.into_rgb8()).write_with_encoder(encoder).ok()?;
    Some((Kind::Jpeg.media_type(), out.into_inner()))
}

/// A reader of an image of `kind` (one of the four image kinds), within
/// the pixel and memory limits.
fn reader<R: BufRead + Seek>(kind: Kind, file: R) -> ImageReader<R> {
    let format = match kind {
        Kind::Png => ImageFormat::Png,
        Kind::Jpeg => ImageFormat::Jpeg,
        Kind::Webp => ImageFormat::WebP,
        _ => ImageFormat::Gif,
    };
    let mut reader = ImageReader::with_format(file, format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    reader
}

fn check_text(mut file: impl BufRead) -> Result<(), Refused> {
    let mut all = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut all).map_err(|_| Refused::NotText)?;
    std::str::from_utf8(&all).map(|_| ()).map_err(|_| Refused::NotText)
}

fn reencode(kind: Kind, file: impl BufRead + Seek) -> Result<(Kind, Vec<u8>), Refused> {
    let broken = |e: image::ImageError| match e {
        image::ImageError::Limits(_) => Refused::TooManyPixels(0, 0),
        other => Refused::BrokenImage(other.to_string()),
    };
    let mut decoder = reader(kind, file).into_decoder().map_err(broken)?;
    let (width, height) = decoder.dimensions();
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(Refused::TooManyPixels(width, height));
    }
    let orientation = decoder.orientation().map_err(broken)?;
    let mut image = DynamicImage::from_decoder(decoder).map_err(|e| match e {
        image::ImageError::Limits(_) => Refused::TooManyPixels(width, height),
        other => Refused::BrokenImage(other.to_string()),
    })?;
    // The EXIF orientation is applied to the pixels: the tag itself goes.
    image.apply_orientation(orientation);
    let mut out = Cursor::new(Vec::new());
    let written = match kind {
        Kind::Jpeg => {
            let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90);
            DynamicImage::ImageRgb8(image.into_rgb8()).write_with_encoder(encoder)
        }
        Kind::Webp => image.write_with_encoder(image::codecs::webp::WebPEncoder::new_lossless(&mut out)),
        // PNG, and a GIF's first frame as PNG.
        _ => image.write_to(&mut out, ImageFormat::Png),
    };
    written.map_err(|e| Refused::BrokenImage(e.to_string()))?;
    let kind = if kind == Kind::Gif { Kind::Png } else { kind };
    Ok((kind, out.into_inner()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        DynamicImage::new_rgb8(width, height).write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_model_gets_a_small_image_as_kept_and_a_large_one_scaled_down() {
        let small = png(40, 30);
        assert_eq!(for_model("image/png", &small), Some(("image/png", small.clone())));
        let (media_type, bytes) = for_model("image/png", &png(4000, 1000)).unwrap();
        assert_eq!(media_type, "image/jpeg");
        let scaled = image::load_from_memory(&bytes).unwrap();
        assert_eq!((scaled.width(), scaled.height()), (MODEL_SIDE, 392));
        assert_eq!(for_model("image/png", b"\x89PNG\r\n\x1a\nbroken"), None);
        assert_eq!(for_model("application/pdf", b"%PDF-1.7"), None);
    }

    #[test]
    fn the_kind_comes_from_the_bytes() {
        assert_eq!(sniff(&png(2, 2)), Some(Kind::Png));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0\0\x10JFIF"), Some(Kind::Jpeg));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WEBPVP8 "), Some(Kind::Webp));
        assert_eq!(sniff(b"GIF89a\x01\0\x01\0"), Some(Kind::Gif));
        assert_eq!(sniff(b"%PDF-1.7\n"), Some(Kind::Pdf));
        assert_eq!(sniff("Allergies: peanuts, “sesame”.\r\n".as_bytes()), Some(Kind::Text));
        // An executable, whatever it is named, and anything else.
        assert_eq!(sniff(b"\x7fELF\x02\x01\x01\0\0\0"), None);
        assert_eq!(sniff(b"MZ\x90\0\x03\0\0\0"), None);
        assert_eq!(sniff(b"PK\x03\x04zip"), None);
        assert_eq!(sniff(b"text with a NUL\0 inside"), None);
        assert_eq!(sniff(b"\x1b[31mterminal codes"), None);
        assert_eq!(sniff(b""), None);
        assert_eq!(sniff(b"\xc3\x28 not utf-8"), None);
        // A character cut by the end of the sample is still text.
        assert_eq!(sniff("ok é".as_bytes().split_last().unwrap().1), Some(Kind::Text));
    }

    #[test]
    fn an_image_is_encoded_again_without_what_followed_it() {
        let mut polyglot = png(3, 2);
        polyglot.extend_from_slice(b"<script>alert(1)</script>");
        let (kind, kept) = clean(Kind::Png, Cursor::new(&polyglot)).unwrap().unwrap();
        assert_eq!(kind, Kind::Png);
        assert!(!kept.windows(8).any(|w| w == b"<script>"), "nothing after the image survives");
        let again = image::load_from_memory(&kept).unwrap();
        assert_eq!((again.width(), again.height()), (3, 2));
    }

    /// A tiny PNG whose header claims `side` × `side` pixels.
    pub(crate) fn bomb(side: u32) -> Vec<u8> {
        let mut bomb = png(1, 1);
        bomb[16..20].copy_from_slice(&side.to_be_bytes());
        bomb[20..24].copy_from_slice(&side.to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(&bomb[12..29]);
        bomb[29..33].copy_from_slice(&crc.sum().to_be_bytes());
        bomb
    }

    #[test]
    fn a_decoding_bomb_is_refused_before_it_is_decoded() {
        assert!(matches!(clean(Kind::Png, Cursor::new(&bomb(20_000))), Err(Refused::TooManyPixels(..))));
        // Within a side's limit, over the pixels' (8000 × 8000).
        assert_eq!(clean(Kind::Png, Cursor::new(&bomb(8000))), Err(Refused::TooManyPixels(8000, 8000)));
    }

    #[test]
    fn broken_images_and_text_that_is_not_utf8_are_refused() {
        assert!(matches!(clean(Kind::Png, Cursor::new(b"\x89PNG\r\n\x1a\nbroken")), Err(Refused::BrokenImage(_))));
        assert_eq!(clean(Kind::Text, Cursor::new(b"fine\n")), Ok(None));
        assert_eq!(clean(Kind::Text, Cursor::new(b"fine, then \xff")), Err(Refused::NotText));
        assert_eq!(clean(Kind::Pdf, Cursor::new(b"%PDF-1.7")), Ok(None));
    }
}
