#!/usr/bin/env bash
# Engine benchmark (release build): turns against zero-latency fakes on
# loopback at 1, 10 and 100 concurrent conversations. Prints a markdown
# table for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CA_CACHE:-$HOME/.cache/context-assistant}/target}"
export LEPTOS_OUTPUT_NAME=context-assistant
cargo run --quiet --release -p tests --example engine_bench
