#!/usr/bin/env bash
# Runs every cargo fuzz target (libFuzzer, nightly) for a bounded time.
#
#   fuzz/run.sh [SECONDS]   each target for SECONDS (default 60), growing the
#                           corpus kept in $CA_CACHE/fuzz/corpus/<target>
#   fuzz/run.sh --smoke     each target for a fixed, seeded number of inputs
#                           from the committed seeds only: the same inputs
#                           every run (./dev test runs this)
#   FUZZ_TARGETS="markdown sse_provider" fuzz/run.sh 600   only these targets
#
# A crash stops the run: libFuzzer prints the input, the script prints where
# it was saved and how to replay it. Each crash becomes a regression test
# beside the code it broke (see docs/fuzzing.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CA_CACHE="${CA_CACHE:-$HOME/.cache/context-assistant}"
TOOLS="$CA_CACHE/tools"
export PATH="$TOOLS/bin:$HOME/.cargo/bin:$PATH"
# Its own target directory: instrumented nightly builds share nothing with the product's.
export CARGO_TARGET_DIR="$CA_CACHE/fuzz-target"
CARGO_FUZZ_VERSION="0.13.2"
SMOKE_RUNS=20000

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz/run.sh: cargo fuzz needs the nightly toolchain (rustup toolchain list shows none)" >&2
  exit 1
fi
if [[ "$(cargo-fuzz --version 2>/dev/null || true)" != *"$CARGO_FUZZ_VERSION"* ]]; then
  log "installing cargo-fuzz $CARGO_FUZZ_VERSION (about a minute, once)"
  cargo install cargo-fuzz --version "=$CARGO_FUZZ_VERSION" --locked --root "$TOOLS"
fi

mode="${1:-60}"
cd "$ROOT/fuzz"
targets="${FUZZ_TARGETS:-$(cargo +nightly fuzz list --fuzz-dir .)}"

log "building the fuzz targets (nightly, address sanitizer)"
# Debug assertions on, as in the tests: an overflow is a crash.
cargo +nightly fuzz build --fuzz-dir . -O --debug-assertions

for target in $targets; do
  seeds="$ROOT/fuzz/seeds/$target"
  artifacts="$CA_CACHE/fuzz/artifacts/$target"
  mkdir -p "$seeds" "$artifacts"
  if [[ "$mode" == "--smoke" ]]; then
    corpus="$(mktemp -d)"
    flags=(-seed=1 "-runs=$SMOKE_RUNS")
    log "fuzzing $target: $SMOKE_RUNS seeded inputs"
  else
    corpus="$CA_CACHE/fuzz/corpus/$target"
    mkdir -p "$corpus"
    flags=("-max_total_time=$mode")
    log "fuzzing $target for ${mode}s"
  fi
  status=0
  cargo +nightly fuzz run --fuzz-dir . -O --debug-assertions "$target" "$corpus" "$seeds" -- \
    "${flags[@]}" -max_len=8192 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    "-artifact_prefix=$artifacts/" 2>"$CA_CACHE/fuzz/$target.log" || status=$?
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+.*DONE)" "$CA_CACHE/fuzz/$target.log" >&2 || true
  if [[ "$mode" == "--smoke" ]]; then rm -rf "$corpus"; fi
  if [[ $status -ne 0 ]]; then
    tail -n 40 "$CA_CACHE/fuzz/$target.log" >&2
    echo "fuzz/run.sh: $target failed; the input is in $artifacts/" >&2
    echo "replay it: (cd fuzz && cargo +nightly fuzz run --fuzz-dir . -O --debug-assertions $target $artifacts/<file>)" >&2
    exit 1
  fi
done
log "fuzzing: every target ran clean"
