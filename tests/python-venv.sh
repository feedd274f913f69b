#!/usr/bin/env bash
# The Python the tests use (schemathesis for the API run, PyJWT for the
# console's token snippet, openapi-spec-validator, PyPI's mcp for the
# hostile MCP App of tests/mcp/hostile_app.py, and moto's S3 server for the
# attachments' store, tests/s3/moto_s3.py, and junitparser, the JUnit XML
# reader that checks `context-assistant test --junit`), in a venv in the cache: made once, remade when
# tests/api-fuzz/requirements.txt changes. Prints the venv's python.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CA_CACHE="${CA_CACHE:-$HOME/.cache/context-assistant}"
VENV="$CA_CACHE/tools/api-fuzz-venv"
REQUIREMENTS="$HERE/api-fuzz/requirements.txt"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

if ! python3 -c 'import ensurepip' 2>/dev/null; then
  log "installing python3-venv from Debian"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
fi
if ! cmp -s "$REQUIREMENTS" "$VENV/requirements.txt" 2>/dev/null; then
  log "installing schemathesis, PyJWT, openapi-spec-validator, mcp, moto and junitparser from PyPI"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQUIREMENTS" >&2
  cp "$REQUIREMENTS" "$VENV/requirements.txt"
fi
echo "$VENV/bin/python"
