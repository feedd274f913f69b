#!/usr/bin/env bash
# What one read costs the assistant over MCP against the Remote Tools host
# (release build; tests/examples/read_cost.rs): the same get tool behind
# both, in a child process, called on the kept connection. Prints wall
# time and the assistant's CPU per read. BENCH_CALLGRIND=1 also counts
# this process's instructions under valgrind's callgrind (the child's are
# not counted) for READS_ONLY=remote and =mcp, so the difference per read
# is the protocol's.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CA_CACHE:-$HOME/.cache/context-assistant}/target}"
export LEPTOS_OUTPUT_NAME=context-assistant
cargo build --quiet --release -p tests --example read_cost
bin="$CARGO_TARGET_DIR/release/examples/read_cost"
"$bin"
if [[ -n "${BENCH_CALLGRIND:-}" ]]; then
  for only in remote mcp; do
    out="$(mktemp)"
    READS_ONLY="$only" valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" >/dev/null 2>&1
    total="$(callgrind_annotate "$out" | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)"
    echo "$only: $total instructions in this process (startup, warm-up and the measured reads)"
    rm -f "$out"
  done
fi
