#!/usr/bin/env bash
# Open streams on one node (release build; tests/examples/streams.rs): the
# server binary carries LEVELS turns at once (default 1000,5000,10000),
# each streaming to its client while a tool holds its answer, and this
# prints, per level, the server's resident memory per open stream, the CPU
# the waiting streams cost, the files it holds, and how every turn ended
# (completed, refused with 503 + Retry-After, failed). CAPACITY (default
# 10000) is the server's CA_MAX_CONCURRENT_TURNS and CA_MAX_OPEN_STREAMS:
# a level above it shows what the node refuses. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CA_CACHE:-$HOME/.cache/context-assistant}/target}"
export LEPTOS_OUTPUT_NAME=context-assistant
# Apart: built with the tests' features (reqwest's cookies), the server
# would not be the one that ships.
cargo build --quiet --release -p server --bin context-assistant
cargo build --quiet --release -p tests --example streams
# Two sockets a stream on this side and on the server's (which raises its
# own soft limit, and lowers its caps to what the limit allows); a root
# with the privilege raises the hard limit here for both.
ulimit -Hn 200000 2>/dev/null || true
ulimit -n "$(ulimit -Hn)"
"$CARGO_TARGET_DIR/release/examples/streams" "$CARGO_TARGET_DIR/release/context-assistant" \
  "${1:-1000,5000,10000}" "${CAPACITY:-10000}"
