//! The widget's files, compressed once: at start the server writes a
//! brotli (quality 11) and a gzip copy next to each `.wasm`, `.js` and
//! `.css` of the site's `pkg/` folder (and the folders in it) when it is missing or older than its
//! source, and the static file service sends the smallest the browser
//! accepts. The opened widget is then ~130 KB instead of ~415 KB on the
//! wire (docs/benchmarks.md). A read-only site folder only means no copies.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Compresses what needs it; blocking work, run it off the async threads.
pub fn compress_site(site_root: &Path) -> usize {
    compress_dir(&site_root.join("pkg"))
}

/// [`compress_site`] for one folder and those under it (the widget's own
/// JS modules are in `pkg/snippets/…`).
fn compress_dir(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut written = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            written += compress_dir(&path);
            continue;
        }
        let wanted = path.extension().and_then(|e| e.to_str()).is_some_and(|e| matches!(e, "wasm" | "js" | "css"));
        if !wanted {
            continue;
        }
        for (suffix, compress) in [("br", brotli_bytes as fn(&[u8]) -> std::io::Result<Vec<u8>>), ("gz", gzip_bytes)] {
            match compress_one(&path, suffix, compress) {
                Ok(true) => written += 1,
                Ok(false) => {}
                Err(error) => tracing::warn!(file = %path.display(), %error, "cannot write a compressed copy"),
            }
        }
    }
    written
}

fn compress_one(source: &Path, suffix: &str, compress: fn(&[u8]) -> std::io::Result<Vec<u8>>) -> std::io::Result<bool> {
    let target = PathBuf::from(format!("{}.{suffix}", source.display()));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(copy), Some(original)) = (modified(&target), modified(source))
        && copy >= original
    {
        return Ok(false);
    }
    let compressed = compress(&std::fs::read(source)?)?;
    // Written aside and renamed: a request never sees half a file.
    let partial = PathBuf::from(format!("{}.partial", target.display()));
    std::fs::write(&partial, compressed)?;
    std::fs::rename(&partial, &target)?;
    Ok(true)
}

fn brotli_bytes(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut out, 4096, 11, 22);
        writer.write_all(data)?;
    }
    Ok(out)
}

fn gzip_bytes(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data)?;
    encoder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_written_once_and_decompress_to_the_original() {
        let dir = tempfile_dir();
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        let wasm: Vec<u8> = (0..50_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        std::fs::write(dir.join("pkg/app.wasm"), &wasm).unwrap();
        std::fs::write(dir.join("pkg/notes.txt"), b"left alone").unwrap();
        std::fs::create_dir_all(dir.join("pkg/snippets/widget-1/src/js")).unwrap();
        std::fs::write(dir.join("pkg/snippets/widget-1/src/js/dom.js"), b"export const x = 1;").unwrap();

        assert_eq!(compress_site(&dir), 4);
        assert!(dir.join("pkg/snippets/widget-1/src/js/dom.js.br").exists(), "a snippet's copy too");
        assert_eq!(compress_site(&dir), 0, "up to date: nothing rewritten");

        let br = std::fs::read(dir.join("pkg/app.wasm.br")).unwrap();
        let mut back = Vec::new();
        brotli::Decompressor::new(&br[..], 4096).read_to_end(&mut back).unwrap();
        assert_eq!(back, wasm);
        let gz = std::fs::read(dir.join("pkg/app.wasm.gz")).unwrap();
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut back).unwrap();
        assert_eq!(back, wasm);
        assert!(!dir.join("pkg/notes.txt.br").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    use std::io::Read;

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ca-precompress-{}", crate::ids::new_id("t")));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
