#!/usr/bin/env bash
# Engine benchmark (release build): turns against zero-latency fakes on
# loopback at 1, 10 and 100 concurrent conversations. Prints a markdown
# table for docs/benchmarks.md. BENCH_DATABASE=postgres runs it on a fresh
# PostgreSQL database (CA_TEST_POSTGRES_URL's server) instead of SQLite.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CA_CACHE:-$HOME/.cache/context-assistant}/target}"
export LEPTOS_OUTPUT_NAME=context-assistant
if [[ "${BENCH_DATABASE:-sqlite}" == postgres ]]; then
  admin="${CA_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
  name="ca_bench_$(date +%s)"
  psql "$admin" -qc "CREATE DATABASE $name"
  trap 'psql "$admin" -qc "DROP DATABASE IF EXISTS $name WITH (FORCE)"' EXIT
  export BENCH_DATABASE_URL="${admin%/*}/$name"
fi
cargo run --quiet --release -p tests --example engine_bench
