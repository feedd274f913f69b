//! The fuzz targets' properties (`fuzz/checks`) in the ordinary test build:
//! every committed seed (`fuzz/seeds/<target>`) and inputs made from them by
//! a seeded mutator — the same inputs every run, so this never goes red by
//! chance. Coverage-guided fuzzing with the address sanitizer, which grows
//! its own corpus, is `./dev fuzz-code` (docs/fuzzing.md).

use std::path::{Path, PathBuf};

/// Inputs per target beyond its seeds: about a second each in a debug build.
const INPUTS: usize = 4_000;
/// libFuzzer's `-max_len` in fuzz/run.sh.
const MAX_LEN: usize = 8_192;

/// xorshift64*: small, seeded, the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Bytes the readers treat specially: JSON, SSE and markdown punctuation,
/// and the edges of integers.
const INTERESTING: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"\n",
    b"\r\n",
    b"\n\n",
    b"data: ",
    b"event: ",
    b"id: ",
    b": ",
    b"\\u",
    b"<",
    b">",
    b"](",
    b"`",
    b"*",
    b"#",
    b"\x00",
    b"\xff",
    b"\x7f",
    b"\x80",
    b"\xe2\x80\xae",
    b".",
    b"=",
];

/// `input` changed one to four times as libFuzzer's mutators would, without
/// coverage to guide them: bytes flipped, set, inserted, removed, repeated,
/// spliced from another seed.
fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(8) {
            0 if at < out.len() => out[at] ^= 1 << rng.below(8),
            1 if at < out.len() => out[at] = rng.next() as u8,
            2 => {
                let n = 1 + rng.below(16);
                out.splice(at..at, rng.bytes(n));
            }
            3 if at < out.len() => {
                let end = (at + 1 + rng.below(32)).min(out.len());
                out.drain(at..end);
            }
            4 if at < out.len() => {
                let end = (at + 1 + rng.below(64)).min(out.len());
                let copy = out[at..end].to_vec();
                out.splice(at..at, copy);
            }
            5 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                let end = (from + rng.below(256)).min(other.len());
                out.splice(at..at, other[from..end].iter().copied());
            }
            6 => out.truncate(at),
            _ => {
                let word = INTERESTING[rng.below(INTERESTING.len())];
                out.splice(at..at, word.iter().copied());
            }
        }
    }
    out.truncate(MAX_LEN);
    out
}

fn seeds_of(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files.into_iter().map(|file| std::fs::read(file).unwrap()).collect()
}

/// Runs `target`'s check on its seeds, then on `INPUTS` inputs made from
/// them (one in eight made of random bytes alone). A failing input is saved
/// for the sanitizer build to replay.
fn replay(target: &str) {
    let (_, check) = fuzz_checks::TARGETS.iter().find(|(name, _)| *name == target).expect("a target of fuzz/checks");
    let seeds = seeds_of(target);
    assert!(!seeds.is_empty(), "fuzz/seeds/{target} holds the target's seeds");
    let mut rng = Rng(0x5eed_0000 + target.len() as u64);
    let mut made = Vec::with_capacity(INPUTS);
    for i in 0..INPUTS {
        made.push(if i % 8 == 0 {
            let n = rng.below(1024);
            rng.bytes(n)
        } else {
            let seed = &seeds[rng.below(seeds.len())];
            mutate(&mut rng, &seeds, seed)
        });
    }
    for (i, input) in seeds.iter().chain(&made).enumerate() {
        if std::panic::catch_unwind(|| check(input)).is_err() {
            let saved = std::env::temp_dir().join(format!("fuzz-{target}-{i}.bin"));
            std::fs::write(&saved, input).unwrap();
            panic!(
                "{target}: input {i} breaks a rule (above); saved to {}; replay it with the sanitizer: \
                 (cd fuzz && cargo +nightly fuzz run --fuzz-dir . -O --debug-assertions {target} {})",
                saved.display(),
                saved.display()
            );
        }
    }
}

#[test]
fn the_provider_stream_gives_the_same_events_however_cut_and_merges_within_bounds() {
    replay("sse_provider");
}

#[test]
fn every_display_card_kept_obeys_the_contract() {
    replay("display_cards");
}

#[test]
fn rendered_markdown_keeps_only_formatting_tags_and_safe_links() {
    replay("markdown");
}

#[test]
fn a_visitors_pdf_is_read_or_refused_without_taking_the_server_down() {
    replay("pdf");
}

#[test]
fn an_embed_token_passes_only_when_every_rule_holds() {
    replay("embed_token");
}

#[test]
fn a_launch_token_passes_only_with_every_claim_in_shape() {
    replay("launch_token");
}

#[test]
fn a_kept_component_is_in_shape_and_the_menu_reader_never_panics() {
    replay("component");
}

#[test]
fn every_fuzz_target_is_replayed_here() {
    let names: Vec<&str> = fuzz_checks::TARGETS.iter().map(|(name, _)| *name).collect();
    let source = include_str!("fuzzing.rs");
    for name in &names {
        assert!(source.contains(&format!("replay(\"{name}\")")), "{name} has a replay test");
    }
    let targets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/fuzz_targets");
    let mut files: Vec<String> = std::fs::read_dir(targets)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    files.sort();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(files, sorted, "each cargo fuzz target calls the check of the same name");
}
