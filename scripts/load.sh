#!/usr/bin/env bash
# Load script (loopback only, bounded: about 6 s per level): ramps
# concurrent streaming turns against the release server binary and prints a
# markdown table for docs/benchmarks.md — turns/s, time to the first event,
# the server's CPU per turn, its memory per open stream, and the turns it
# shed with 503 beyond CA_MAX_CONCURRENT_TURNS (LOAD_MAX_CONCURRENT_TURNS,
# default 100, so the table shows shedding). Levels: LOAD_LEVELS (default
# 1,10,50,100,200,400).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CA_CACHE:-$HOME/.cache/context-assistant}/target}"
export LEPTOS_OUTPUT_NAME=context-assistant
# One invocation: the server's library is built once for both.
cargo build --quiet --release -p server --bin context-assistant -p tests --example load
"$CARGO_TARGET_DIR/release/examples/load" "$CARGO_TARGET_DIR/release/context-assistant" \
  "${LOAD_LEVELS:-1,10,50,100,200,400}"
