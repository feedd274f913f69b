//! A PDF attachment's text for the model (issue #32), read by `pdf-extract`
//! (on `lopdf`). A PDF is the visitor's file, so it may be hostile:
//!
//! - `lopdf` parses arrays and dictionaries by recursion without a bound
//!   (only literal strings have one), so a few kilobytes of `[[[[…` would
//!   overflow the stack, which kills the whole process: nothing unwinds to
//!   be caught. [`readable`] reads the file's syntax first — outside
//!   streams, and inside each Flate stream, decompressed here (object and
//!   content streams are parsed too) — and gives up on one that nests
//!   deeper than [`MAX_DEPTH`], inflates past [`MAX_INFLATED`] bytes (a
//!   decompression bomb `lopdf` would inflate whole), or keeps syntax behind
//!   a filter not read here (LZW, ASCII85, ASCIIHex, RunLength).
//! - The parser then runs on a thread of its own with a large stack,
//!   caught if it panics, waited for [`PDF_TIME`] at most, [`PDF_READERS`]
//!   at once (a PDF that never ends keeps its thread and its place: a
//!   thread cannot be killed).
//!
//! A PDF refused or failing here is not an error: the model is told the
//! file's name and that its content cannot be shown.

use std::io::Read;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use tokio::sync::Semaphore;

/// Deepest nesting of arrays and dictionaries read (real PDFs nest a few levels).
pub const MAX_DEPTH: usize = 64;
/// Bytes all of a PDF's Flate streams may inflate to, together.
pub const MAX_INFLATED: u64 = 64 * 1024 * 1024;
/// How long reading a PDF's text may take.
pub const PDF_TIME: Duration = Duration::from_secs(10);
/// PDFs read at once, at most.
pub const PDF_READERS: usize = 2;
/// The reading thread's stack: far more than [`MAX_DEPTH`] levels need.
pub const STACK: usize = 64 * 1024 * 1024;

static SLOTS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(PDF_READERS)));

/// The text of `pdf`, or why there is none (for the log).
pub async fn text(pdf: impl AsRef<[u8]> + Send + 'static) -> Result<String, String> {
    let Ok(Ok(permit)) = tokio::time::timeout(PDF_TIME, SLOTS.clone().acquire_owned()).await else {
        return Err("no PDF reader is free".into());
    };
    let (sender, answer) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("pdf-text".into())
        .stack_size(STACK)
        .spawn(move || {
            let _permit = permit;
            let _ = sender.send(read(pdf.as_ref()));
        })
        .map_err(|error| format!("cannot start a reader: {error}"))?;
    match tokio::time::timeout(PDF_TIME, answer).await {
        Ok(Ok(read)) => read,
        Ok(Err(_)) => Err("the reader ended without an answer".into()),
        Err(_) => Err("reading took too long".into()),
    }
}

/// The text of `pdf` when its syntax passes [`readable`], the parser's
/// panic caught. Run it on a thread with a stack of [`STACK`] bytes.
pub fn read(pdf: &[u8]) -> Result<String, String> {
    readable(pdf)?;
    match std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(pdf)) {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(error)) => Err(format!("not readable: {error}")),
        Err(_) => Err("the parser panicked".into()),
    }
}

/// Ok when `pdf`'s syntax is within what [`text`] reads (see the module).
pub fn readable(pdf: &[u8]) -> Result<(), String> {
    let mut inflated = 0;
    syntax(pdf, &mut inflated, true)
}

/// Walks `data`'s syntax: comments, literal and hex strings skipped,
/// arrays and dictionaries counted, streams (in a file, `top`) read when
/// Flate-compressed and skipped when they are images.
fn syntax(data: &[u8], inflated: &mut u64, top: bool) -> Result<(), String> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'%' => {
                while i < data.len() && data[i] != b'\n' && data[i] != b'\r' {
                    i += 1;
                }
            }
            b'(' => i = after_literal(data, i),
            b'<' if data.get(i + 1) == Some(&b'<') => {
                depth += 1;
                i += 1;
            }
            b'<' => {
                while i < data.len() && data[i] != b'>' {
                    i += 1;
                }
            }
            b'>' if data.get(i + 1) == Some(&b'>') => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b's' if top && data[i..].starts_with(b"stream") && (i == 0 || !data[i - 1].is_ascii_alphanumeric()) => {
                i = stream(data, i, inflated)?;
                continue;
            }
            _ => {}
        }
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH}"));
        }
        i += 1;
    }
    Ok(())
}

/// Where a literal string starting at `at` ends (balanced parentheses,
/// backslash escapes).
fn after_literal(data: &[u8], at: usize) -> usize {
    let (mut open, mut i) = (0usize, at);
    while i < data.len() {
        match data[i] {
            b'\\' => i += 1,
            b'(' => open += 1,
            b')' => {
                open -= 1;
                if open == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Reads the stream whose keyword is at `at`: returns where its
/// `endstream` ends.
fn stream(data: &[u8], at: usize, inflated: &mut u64) -> Result<usize, String> {
    let mut start = at + b"stream".len();
    if data.get(start) == Some(&b'\r') {
        start += 1;
    }
    if data.get(start) == Some(&b'\n') {
        start += 1;
    }
    let end = find(&data[start..], b"endstream").map_or(data.len(), |n| start + n);
    // The stream's dictionary: what precedes the keyword, back to its object.
    let from = find_last(&data[..at], b" obj").map_or(at.saturating_sub(4096), |n| n);
    let dictionary = &data[from..at];
    let says = |name: &[u8]| find(dictionary, name).is_some();
    if says(b"/Image") {
        // Pixels, never parsed as syntax.
    } else if [&b"/LZW"[..], b"/ASCII85", b"/A85", b"/ASCIIHex", b"/AHx", b"/RunLength", b"/RL"].iter().any(|f| says(f))
    {
        return Err("a stream behind a filter not read here".into());
    } else if says(b"/FlateDecode") || says(b"/Fl ") || says(b"/Fl/") || says(b"/Fl]") {
        let mut out = Vec::new();
        let left = MAX_INFLATED.saturating_sub(*inflated);
        let read = flate2::read::ZlibDecoder::new(&data[start..end]).take(left + 1).read_to_end(&mut out);
        if read.is_ok() {
            *inflated += out.len() as u64;
            if *inflated > MAX_INFLATED {
                return Err(format!("its streams inflate past {MAX_INFLATED} bytes"));
            }
            syntax(&out, inflated, false)?;
        }
    } else {
        syntax(&data[start..end], inflated, false)?;
    }
    Ok((end + b"endstream".len()).min(data.len()))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A one-page PDF showing `content` (a content stream, Flate-compressed
    /// when `deflate`), with `extra` in its catalog.
    pub fn pdf(content: &[u8], deflate: bool, extra: &str) -> Vec<u8> {
        let (stream, filter) = if deflate {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(content).unwrap();
            (z.finish().unwrap(), " /Filter /FlateDecode")
        } else {
            (content.to_vec(), "")
        };
        let mut out = b"%PDF-1.4\n".to_vec();
        let mut offsets = Vec::new();
        let mut object = |out: &mut Vec<u8>, body: Vec<u8>| {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n", offsets.len()).as_bytes());
            out.extend_from_slice(&body);
            out.extend_from_slice(b"\nendobj\n");
        };
        object(&mut out, format!("<< /Type /Catalog /Pages 2 0 R {extra}>>").into_bytes());
        object(&mut out, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec());
        object(
            &mut out,
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] /Contents 4 0 R \
              /Resources << /Font << /F1 5 0 R >> >> >>"
                .to_vec(),
        );
        let mut body = format!("<< /Length {}{filter} >>\nstream\n", stream.len()).into_bytes();
        body.extend_from_slice(&stream);
        body.extend_from_slice(b"\nendstream");
        object(&mut out, body);
        object(&mut out, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec());
        let xref = out.len();
        out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", offsets.len() + 1).as_bytes());
        for offset in &offsets {
            out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
        }
        out.extend_from_slice(
            format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", offsets.len() + 1).as_bytes(),
        );
        out
    }

    #[test]
    fn a_plain_pdf_is_read() {
        let text = b"BT /F1 18 Tf 20 100 Td (Allergies: peanuts \\(and sesame\\)) Tj ET";
        assert_eq!(readable(&pdf(text, false, "")), Ok(()));
        assert_eq!(readable(&pdf(text, true, "")), Ok(()));
    }

    #[test]
    fn deep_nesting_is_refused_outside_and_inside_streams() {
        let deep = format!("/Deep {}{} ", "[".repeat(30_000), "]".repeat(30_000));
        assert!(readable(&pdf(b"BT ET", false, &deep)).unwrap_err().contains("nested"));
        let dictionaries = format!("/Deep {}{} ", "<< /A ".repeat(100), ">>".repeat(100));
        assert!(readable(&pdf(b"BT ET", false, &dictionaries)).is_err());
        let content = format!("BT {} ET", "[".repeat(100_000));
        assert!(readable(&pdf(content.as_bytes(), true, "")).unwrap_err().contains("nested"));
        // Brackets inside strings and comments are text, not nesting.
        let quoted = format!("BT ({}) Tj ET % {}", "[".repeat(500), "[".repeat(500));
        assert_eq!(readable(&pdf(quoted.as_bytes(), true, "")), Ok(()));
    }

    #[test]
    fn a_decompression_bomb_and_unread_filters_are_refused() {
        let bomb = vec![b' '; (MAX_INFLATED + 10) as usize];
        assert!(readable(&pdf(&bomb, true, "")).unwrap_err().contains("inflate"));
        let mut hidden = pdf(b"BT ET", false, "");
        let at = find(&hidden, b"/Length").unwrap();
        hidden.splice(at..at, b"/Filter /LZWDecode ".iter().copied());
        assert!(readable(&hidden).unwrap_err().contains("filter"));
    }
}
