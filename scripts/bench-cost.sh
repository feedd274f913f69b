#!/usr/bin/env bash
# Cost per turn (release build): the server binary as its own process runs
# turns of two model steps and one get call against fakes that answer at
# once, with every limit counting and every stream event stored, and
# reports its CPU time per turn. BENCH_CALLGRIND=1 also counts the
# instructions per turn under valgrind's callgrind (slow: about a minute);
# BENCH_CALLGRIND_KEEP=DIR keeps the profile for callgrind_annotate.
# BENCH_DATABASE=postgres runs on a fresh PostgreSQL database.
# BENCH_TURNS_PER_CONVERSATION=N runs conversations of N turns (the first,
# then N - 1 later ones) instead of one turn each.
# BENCH_STATEMENTS=1 also counts the database statements per turn (the
# server's sqlx statement log over a run, by statement), without timing it.
# BENCH_COMMITS=1 also reads, on SQLite, how many writes each commit took
# (the server's ca_sqlite_writes_per_commit, scraped during a run), one at
# a time and ten at a time.
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
if [[ -n "${BENCH_STATEMENTS:-}" ]]; then
  # The benchmark starts the server with a cleared environment: the log
  # level goes in through a wrapper that stands in for the binary.
  dir="$(mktemp -d)"
  printf '#!/bin/sh\nRUST_LOG=info,sqlx::query=debug CA_LOG_FORMAT=json exec "%s" "$@" 2>"%s/server.log"\n' \
    "$bin" "$dir" >"$dir/server"
  chmod +x "$dir/server"
  "$CARGO_TARGET_DIR/release/examples/turn_cost" "$dir/server" cpu >/dev/null
  python3 - "$dir/server.log" <<'PY'
import collections, json, sys
statements, turns = collections.Counter(), 0
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        event = json.loads(line)
    except ValueError:
        continue
    # CA_LOG_FORMAT=json puts an event's fields at the top level.
    if "db.statement" in event:
        statements[" ".join(event.get("summary", "?").split())] += 1
    elif event.get("message") == "turn finished":
        turns += 1
if not turns:
    sys.exit("no turn finished: is the log level passed to the server?")
total = sum(statements.values())
print(f"database statements: {total} over {turns} turns, {total / turns:.1f} per turn")
for summary, count in statements.most_common():
    if count >= turns:
        print(f"  {count / turns:4.1f} per turn  {summary}")
PY
  rm -rf "$dir"
fi
if [[ -n "${BENCH_COMMITS:-}" ]]; then
  # The metrics listener goes in through a wrapper, as the log level above.
  dir="$(mktemp -d)"
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  printf '#!/bin/sh\nCA_METRICS_ADDR=127.0.0.1:%s exec "%s" "$@"\n' "$port" "$bin" >"$dir/server"
  chmod +x "$dir/server"
  python3 - "$CARGO_TARGET_DIR/release/examples/turn_cost" "$dir/server" "$port" <<'PY'
import re, subprocess, sys, threading, time, urllib.request
bench, server, port = sys.argv[1:]
def scrape():
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read().decode()
    except OSError:
        return None
    found = [re.search(rf"^ca_sqlite_writes_per_commit_{k} (\S+)", text, re.M) for k in ("sum", "count")]
    return tuple(float(m.group(1)) for m in found) if all(found) else None
run = subprocess.Popen([bench, server, "cpu"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
last, one = [None], None
def watch():
    while run.poll() is None:
        last[0] = scrape() or last[0]
        time.sleep(0.1)
watcher = threading.Thread(target=watch)
watcher.start()
for line in run.stdout:
    if line.startswith("| 1 |"):
        one = scrape()
watcher.join()
if not one or not last[0]:
    sys.exit("no ca_sqlite_writes_per_commit read: is the database SQLite?")
print(f"SQLite writes per commit, one at a time (with the warm-up): {one[0] / one[1]:.2f} ({one[1]:.0f} commits)")
writes, commits = last[0][0] - one[0], last[0][1] - one[1]
print(f"SQLite writes per commit, ten at a time: {writes / commits:.2f} ({writes:.0f} writes in {commits:.0f} commits)")
PY
  rm -rf "$dir"
fi
