#!/usr/bin/env bash
# Our CPU per turn beside the lightest peer's, in one run (issue #47's
# "≥ 10× lighter than the lightest peer"): the same turns (the user's
# message, a `get` tool call on the Remote Tools host, the answer; two
# model steps, streamed over HTTP as server-sent events) against the same
# fakes, served by our release server (`tests/examples/turn_cost.rs`, as
# `scripts/bench-cost.sh` runs it) and by the Vercel AI SDK in Node
# (`scripts/peer/server.mjs`), alternated: ours, the peer, ours, the peer.
# Each prints its CPU per turn, 1 and 10 turns at a time. The peer stores
# nothing and counts no limits; ours stores every turn (SQLite) and counts
# every limit. BENCH_ROUNDS=N alternates N times (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CA_CACHE:-$HOME/.cache/context-assistant}/target}"
export LEPTOS_OUTPUT_NAME=context-assistant
peer=scripts/peer
want="$(sha256sum "$peer/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$peer/node_modules/.installed" 2>/dev/null || true)" != "$want" ]]; then
  echo "installing the peer (npm ai, @ai-sdk/openai-compatible)" >&2
  (cd "$peer" && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$want" >"$peer/node_modules/.installed"
fi
cargo build --quiet --release -p server --bin context-assistant -p tests --example turn_cost
bench="$CARGO_TARGET_DIR/release/examples/turn_cost"
for round in $(seq "${BENCH_ROUNDS:-2}"); do
  echo "## round $round: ours"
  "$bench" "$CARGO_TARGET_DIR/release/context-assistant" cpu
  echo "## round $round: the peer"
  "$bench" --peer "$peer/server.mjs"
done
