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
//! - The parser then runs in a child process of its own (this program,
//!   `context-assistant read-pdf`: the PDF on its standard input, the text
//!   on its standard output), which bounds its own address space
//!   ([`CHILD_MEMORY`]) and processor time before it reads, gets no
//!   environment (no secret of the server's), and is killed when it has not
//!   answered within [`PDF_TIME`]: a PDF that makes the parser loop or
//!   swell costs a process, never a thread or the server's memory.
//!   [`PDF_READERS`] run at once. Inside the child the parser runs on a
//!   thread with a large stack, caught if it panics. Where no reader
//!   program is set (the library used alone, [`use_reader`]), the same
//!   runs on a thread of the server's, which a PDF that never ends keeps.
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

/// The reading child's address space, at most.
pub const CHILD_MEMORY: u64 = 1024 * 1024 * 1024;
/// The reading child's processor time, at most (seconds).
pub const CHILD_CPU_SECS: u64 = 20;
/// The PDF the reading child takes, at most (`CA_MAX_ATTACHMENT_BYTES` is
/// 10 MB unless the operator raised it).
pub const CHILD_INPUT_BYTES: u64 = 256 * 1024 * 1024;
/// The reading child's answer, at most: more than the model is ever given.
pub const CHILD_TEXT_BYTES: usize = 4 * 1024 * 1024;

static SLOTS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(PDF_READERS)));
static READER: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Reads PDFs in child processes of `program` (`context-assistant`: its
/// `read-pdf` command, [`child_main`]). Set once, at start.
pub fn use_reader(program: std::path::PathBuf) {
    let _ = READER.set(program);
}

/// The text of `pdf`, or why there is none (for the log).
pub async fn text(pdf: impl AsRef<[u8]> + Send + 'static) -> Result<String, String> {
    let Ok(Ok(permit)) = tokio::time::timeout(PDF_TIME, SLOTS.clone().acquire_owned()).await else {
        return Err("no PDF reader is free".into());
    };
    if let Some(program) = READER.get() {
        let text = in_child(program, pdf.as_ref(), PDF_TIME).await;
        drop(permit);
        return text;
    }
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

/// The text of `pdf` read by `program read-pdf`, killed after `time`.
pub async fn in_child(program: &std::path::Path, pdf: &[u8], time: Duration) -> Result<String, String> {
    use tokio::io::AsyncWriteExt as _;
    let mut child = tokio::process::Command::new(program)
        .arg("read-pdf")
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("cannot start a reader: {error}"))?;
    let mut input = child.stdin.take().ok_or("the reader has no input")?;
    let pdf = pdf.to_vec();
    // Written beside the wait: a reader that answers before reading all
    // of it (or dies) must not leave the writer stuck.
    let writer = tokio::spawn(async move {
        let _ = input.write_all(&pdf).await;
    });
    let answer = tokio::time::timeout(time, child.wait_with_output()).await;
    writer.abort();
    // Timed out: the child was dropped with the future, and killed.
    let Ok(output) = answer else { return Err("reading took too long: the reader was killed".into()) };
    let output = output.map_err(|error| format!("the reader failed: {error}"))?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout[..output.stdout.len().min(CHILD_TEXT_BYTES)]).into_owned());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let why = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").chars().take(200).collect::<String>();
    Err(match output.status.code() {
        Some(_) if !why.is_empty() => why,
        Some(code) => format!("the reader stopped with status {code}"),
        None => "the reader was stopped by a signal (its memory or time ran out)".into(),
    })
}

/// `context-assistant read-pdf`: the text of the PDF on standard input, on
/// standard output (at most [`CHILD_TEXT_BYTES`]); why not on standard
/// error, with status 1. Bounds its own memory and processor time first.
pub fn child_main() -> std::process::ExitCode {
    use std::io::Write as _;
    let limits = rlimit::setrlimit(rlimit::Resource::AS, CHILD_MEMORY, CHILD_MEMORY)
        .and_then(|()| rlimit::setrlimit(rlimit::Resource::CPU, CHILD_CPU_SECS, CHILD_CPU_SECS));
    if let Err(error) = limits {
        eprintln!("cannot bound the reader: {error}");
        return std::process::ExitCode::from(1);
    }
    let mut pdf = Vec::new();
    if let Err(error) = std::io::stdin().take(CHILD_INPUT_BYTES).read_to_end(&mut pdf) {
        eprintln!("cannot read the PDF: {error}");
        return std::process::ExitCode::from(1);
    }
    let read = std::thread::Builder::new().stack_size(STACK).spawn(move || read(&pdf)).map(|t| t.join());
    match read {
        Ok(Ok(Ok(text))) => {
            let mut end = text.len().min(CHILD_TEXT_BYTES);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let _ = std::io::stdout().write_all(&text.as_bytes()[..end]);
            std::process::ExitCode::SUCCESS
        }
        Ok(Ok(Err(why))) => {
            eprintln!("{why}");
            std::process::ExitCode::from(1)
        }
        _ => {
            eprintln!("the reader's thread failed");
            std::process::ExitCode::from(1)
        }
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

    /// A reader that never answers is killed at the time bound, and no
    /// reader sees the server's environment (its secrets).
    #[tokio::test]
    async fn a_reader_that_never_answers_is_killed_and_sees_no_secret() {
        let dir = std::env::temp_dir().join(format!("ca-pdf-reader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (program, pid, env) = (dir.join("stuck-reader"), dir.join("pid"), dir.join("env"));
        std::fs::write(
            &program,
            format!("#!/bin/sh\nenv > {}\necho $$ > {}\nexec sleep 30\n", env.display(), pid.display()),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        // The test's own environment (cargo's), which the reader must not get.
        assert!(std::env::var("CARGO_MANIFEST_DIR").is_ok());

        let started = std::time::Instant::now();
        let read = in_child(&program, b"%PDF-1.4\n%%EOF\n", Duration::from_millis(700)).await;

        assert_eq!(read, Err("reading took too long: the reader was killed".to_owned()));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        let pid = std::fs::read_to_string(&pid).unwrap().trim().to_owned();
        // Killed: gone, or a zombie until it is reaped.
        let mut state = String::new();
        for _ in 0..50 {
            state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state.is_empty() || state.split(' ').nth(2) == Some("Z") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(state.is_empty() || state.split(' ').nth(2) == Some("Z"), "still running: {state}");
        let seen = std::fs::read_to_string(&env).unwrap();
        assert!(!seen.contains("CARGO_MANIFEST_DIR") && !seen.contains("CA_"), "{seen}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_reader_that_fails_says_why_and_one_that_is_killed_says_so() {
        let dir = std::env::temp_dir().join(format!("ca-pdf-failing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = |name: &str, body: &str| {
            let program = dir.join(name);
            std::fs::write(&program, format!("#!/bin/sh\ncat > /dev/null\n{body}\n")).unwrap();
            std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
            program
        };
        let says = script("says", "echo 'not readable: no pages' >&2; exit 1");
        let killed = script("killed", "kill -KILL $$");
        let answers = script("answers", "printf 'Allergies: peanuts'");

        let pdf = b"%PDF-1.4\n%%EOF\n";
        assert_eq!(in_child(&says, pdf, PDF_TIME).await, Err("not readable: no pages".to_owned()));
        assert!(in_child(&killed, pdf, PDF_TIME).await.unwrap_err().contains("stopped by a signal"));
        assert_eq!(in_child(&answers, pdf, PDF_TIME).await, Ok("Allergies: peanuts".to_owned()));
        let _ = std::fs::remove_dir_all(&dir);
    }

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
