//! A visitor's PDF (issue #32): whatever its bytes, the check before the
//! parser answers, and a PDF it lets through is parsed to its text or an
//! error without overflowing the stack — an overflow kills the whole
//! server, as nothing unwinds to catch it (`server/src/attachments/pdf.rs`).

/// One input: the fuzzer's bytes after a PDF header (the parser's own first
/// check), read as the server reads a PDF attachment, on a thread with the
/// stack the server gives it.
pub fn check(data: &[u8]) {
    use server::attachments::pdf;
    let mut file = b"%PDF-1.4\n".to_vec();
    file.extend_from_slice(data);
    let read = std::thread::Builder::new()
        .stack_size(pdf::STACK)
        .spawn(move || pdf::read(&file).map(|text| text.len()))
        .expect("a reading thread starts")
        .join();
    assert!(read.is_ok(), "reading a PDF panicked past its catch");
}
