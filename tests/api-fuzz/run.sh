#!/usr/bin/env bash
# Property-based test of the API against its own OpenAPI document:
# schemathesis (PyPI) generates requests for every /v1 operation from
# /v1/openapi.json, valid and invalid, and checks that no answer is a 5xx,
# that every answer (status, content type, body) is the one the document
# describes, and so that every error is `{"error", "code"}`.
#
#   tests/api-fuzz/run.sh <server binary> <site root>
#
# prepare.py first makes what the operations act on (a workspace connected
# to the demo bistro host, a conversation, a component, pending actions);
# schemathesis.toml hands their ids and credentials to schemathesis. The
# server and schemathesis run in a network namespace with only loopback:
# generated tool-host URLs point anywhere, and a server that dialled one
# would reach nothing. Bounded by CA_FUZZ_MAX_TIME (seconds, default 120);
# CA_FUZZ_ARGS passes more schemathesis options.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$1"
SITE_ROOT="$2"
CA_CACHE="${CA_CACHE:-$HOME/.cache/context-assistant}"
VENV="$CA_CACHE/tools/api-fuzz-venv"
MAX_TIME="${CA_FUZZ_MAX_TIME:-120}"
# The same cases on every run, so a red run is the change's and not luck's;
# CA_FUZZ_SEED= (empty) draws a new seed.
SEED="${CA_FUZZ_SEED-20261201}"
PORT=3290
BASE="http://127.0.0.1:$PORT"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Debian's packages for the namespace and the requests; the venv.
if ! command -v ip >/dev/null || ! command -v curl >/dev/null; then
  log "installing iproute2 and curl from Debian"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 curl >&2
fi
"$HERE/../python-venv.sh" >/dev/null

NS="ca-fuzz-$$"
WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  local status=$?
  if [[ -n "$SERVER_PID" ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  # Whatever else still runs in the namespace.
  ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns delete "$NS" 2>/dev/null || true
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
# Stopped (./dev test ends early): clean up all the same.
trap 'exit 143' TERM INT
ip netns add "$NS"
ip netns exec "$NS" ip link set lo up
in_ns() { ip netns exec "$NS" "$@"; }

random_hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
ADMIN_TOKEN="fuzz-admin-token-$(random_hex 16)"
SECRET_KEY="$(random_hex 32)"
# Started directly (not through the in_ns function, whose subshell would be
# the background job): `ip netns exec` and `env` exec, so $! is the server.
ip netns exec "$NS" env -i PATH="$PATH" HOME="$HOME" LEPTOS_SITE_ADDR="127.0.0.1:$PORT" LEPTOS_SITE_ROOT="$SITE_ROOT" \
  CA_DATA_DIR="$WORK/data" CA_ADMIN_TOKEN="$ADMIN_TOKEN" CA_SECRET_KEY="$SECRET_KEY" CA_DEMO=0 \
  CA_ALLOW_PRIVATE_TOOL_HOSTS=1 CA_ALLOW_PRIVATE_MODEL_HOSTS=1 CA_TURNS_PER_USER_PER_MINUTE=100000 \
  CA_TURNS_PER_IP_PER_MINUTE=100000 CA_TURNS_PER_WORKSPACE_PER_MINUTE=100000 RUST_LOG=warn \
  "$BIN" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  in_ns curl -sf "$BASE/ready" >/dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
  sleep 0.1
done

# A workspace connected to the demo bistro host, its credentials, and a
# conversation, a component and pending actions to act on.
prepared="$(in_ns env BASE="$BASE" ADMIN_TOKEN="$ADMIN_TOKEN" CA_SECRET_KEY="$SECRET_KEY" \
  "$VENV/bin/python" "$HERE/prepare.py")"
eval "$prepared"

log "schemathesis against $BASE/v1/openapi.json (at most ${MAX_TIME}s)"
status=0
in_ns "$VENV/bin/schemathesis" --no-color --config-file "$HERE/schemathesis.toml" run "$BASE/v1/openapi.json" \
  --checks all --max-time "$MAX_TIME" --workers 2 --request-timeout 30 --generation-database none \
  ${SEED:+--seed "$SEED"} ${CA_FUZZ_ARGS:-} || status=$?
if grep -q "panicked" "$WORK/server.log"; then
  log "the server panicked:"
  grep -A5 "panicked" "$WORK/server.log" >&2
  status=1
fi
exit "$status"
