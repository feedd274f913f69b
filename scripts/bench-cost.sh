#!/usr/bin/env bash
# Cost per turn (release build): the server binary as its own process runs
# turns of two model steps and one get call against fakes that answer at
# once, with every limit counting and every stream event stored, and
# reports its CPU time per turn. BENCH_CALLGRIND=1 also counts the
# instructions per turn under valgrind's callgrind (slow: about a minute);
# BENCH_CALLGRIND_KEEP=DIR keeps the profile for callgrind_annotate.
# BENCH_DATABASE=postgres runs on a fresh PostgreSQL database.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CA_CACHE:-$HOME/.cache/context-assistant}/target}"
export LEPTOS_OUTPUT_NAME=context-assistant
if [[ "${BENCH_DATABASE:-sqlite}" == postgres ]]; then
  admin="${CA_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
  name="ca_cost_$(date +%s)"
  psql "$admin" -qc "CREATE DATABASE $name"
  trap 'psql "$admin" -qc "DROP DATABASE IF EXISTS $name WITH (FORCE)"' EXIT
  export BENCH_DATABASE_URL="${admin%/*}/$name"
fi
# One invocation: the server's library is built once for both.
cargo build --quiet --release -p server --bin context-assistant -p tests --example turn_cost
bin="$CARGO_TARGET_DIR/release/context-assistant"
"$CARGO_TARGET_DIR/release/examples/turn_cost" "$bin" cpu
if [[ -n "${BENCH_CALLGRIND:-}" ]]; then
  "$CARGO_TARGET_DIR/release/examples/turn_cost" "$bin" callgrind
fi
