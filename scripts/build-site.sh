#!/usr/bin/env bash
# Builds the site the server serves (LEPTOS_SITE_ROOT, default target/site):
# the widget's WASM and JS glue, its CSS, public/, and the console's WASM.
#
#   scripts/build-site.sh release   what ships (./dev demo, ./dev test)
#   scripts/build-site.sh debug     a debug WASM: a panic says what and where
#                                   in the browser's console (a release one traps)
#
# These are cargo-leptos' five steps written out (cargo → wasm-bindgen →
# wasm-opt → JS and CSS minified → public/ copied), so that neither command
# compiles cargo-leptos itself: that took ~11 of a cold `./dev test`'s
# minutes on 2 cores (docs/benchmarks.md, "Fast feedback"). The server finds
# these files by LEPTOS_OUTPUT_NAME, which ./dev also sets for the server's
# build (Leptos' hydration script names `pkg/<name>.wasm` from it).
#
# The release WASM is built with the standard library rebuilt for size:
#   -Zbuild-std            std from source (rust-src), optimized with the widget
#   optimize_for_size      std's own smaller code paths
#   -Cpanic=immediate-abort a panic traps at once: no message formatting
#   -Zfmt-debug=none       `{:?}` prints nothing: no Debug code in the WASM
#   -Zlocation-detail=none no file/line strings
# These are unstable flags of the pinned stable toolchain, allowed for this
# one build by RUSTC_BOOTSTRAP=1 (never for the server or the tests: build
# scripts such as proc-macro2's read it, and their builds would differ). The
# WASM builds have their own target directory (front/), so nothing else is
# rebuilt. docs/benchmarks.md has what each flag saves.
#
# Needs on PATH: wasm-bindgen (= Cargo.lock's), and for release wasm-opt,
# terser and lightningcss (./dev installs them into its cache).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
mode="${1:?usage: scripts/build-site.sh release|debug}"
NAME="${LEPTOS_OUTPUT_NAME:?set LEPTOS_OUTPUT_NAME: the stem of the widget files}"
SITE="${LEPTOS_SITE_ROOT:-$ROOT/target/site}"
PKG="$SITE/pkg"
FRONT="${CARGO_TARGET_DIR:-$ROOT/target}/front"
# Both crates' features for the browser.
WASM_ARGS=(-p widget -p console --lib --target wasm32-unknown-unknown --no-default-features --features hydrate)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

case "$mode" in
  release) profile=wasm-release ;;
  debug) profile=debug ;;
  *)
    echo "usage: scripts/build-site.sh release|debug" >&2
    exit 2
    ;;
esac

# The release site is kept in the cache, by a hash of everything it is
# built from: the front's sources (widget/, console/, style/, public/),
# Cargo.toml and Cargo.lock, cargo's config, this script, the toolchain's
# and the tools' versions and the build's environment. A fresh clone
# whose front did not change (most commits) then copies it instead of
# compiling the two WASMs again (~1 min on 2 cores: cargo's fingerprints
# go by path and mtime, and a clone has new ones). Content, not time: a
# changed file, even one not yet committed, is another key. Outside a git
# checkout, or when a version cannot be read, there is no key and no cache.
CA_CACHE="${CA_CACHE:-$HOME/.cache/context-assistant}"
SITE_CACHE="$CA_CACHE/site"
site_key() {
  local files
  files="$(git ls-files -z --cached --others --exclude-standard --deduplicate -- \
    widget console style public Cargo.toml Cargo.lock .cargo scripts/build-site.sh | sort -z | xargs -0 sha256sum)" || return 1
  {
    echo "$files"
    rustc -Vv && cargo -V && wasm-bindgen --version && wasm-opt --version && terser --version && lightningcss --version
    echo "$NAME"
    env | { grep -E '^(RUSTFLAGS|RUSTC|RUSTDOCFLAGS|CARGO_ENCODED_RUSTFLAGS|CARGO_BUILD_|CARGO_PROFILE_|CARGO_TARGET_WASM32)' || true; } | sort
  } | sha256sum | cut -c1-32
}
key=""
if [[ "$mode" == release ]] && key="$(site_key 2>/dev/null)" && [[ -d "$SITE_CACHE/$key" ]]; then
  log "the release site of these sources is in the cache ($SITE_CACHE/$key): copied, not built"
  rm -rf "$SITE"
  mkdir -p "$(dirname "$SITE")"
  cp -r "$SITE_CACHE/$key" "$SITE"
  touch "$SITE_CACHE/$key"
  exit 0
fi

# One cargo call for both WASMs: their dependencies are built once, with
# the features of both.
log "building the widget's and the console's WASM ($profile)"
if [[ "$mode" == release ]]; then
  RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$FRONT" cargo build "${WASM_ARGS[@]}" --profile wasm-release \
    -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size \
    --config "target.wasm32-unknown-unknown.rustflags=['-Zunstable-options','-Cpanic=immediate-abort','-Zfmt-debug=none','-Zlocation-detail=none']"
else
  CARGO_TARGET_DIR="$FRONT" cargo build "${WASM_ARGS[@]}"
fi

# A fresh site: nothing left from an earlier build.
rm -rf "$SITE"
mkdir -p "$PKG"
cp -r public/. "$SITE/"

wasm-bindgen --target web --no-typescript --out-dir "$PKG" --out-name "$NAME" \
  "$FRONT/wasm32-unknown-unknown/$profile/widget.wasm"
mv "$PKG/${NAME}_bg.wasm" "$PKG/$NAME.wasm"
wasm-bindgen --target web --no-typescript --out-dir "$PKG" --out-name console \
  "$FRONT/wasm32-unknown-unknown/$profile/console.wasm"

if [[ "$mode" == debug ]]; then
  cp style/main.css "$PKG/$NAME.css"
  exit 0
fi

log "optimizing the WASM and minifying the JS and CSS"
# -Oz run to a fixed point (--converge), without the JS stream adapters that
# wasm-streams exports for server functions' streaming bodies (this app has
# none, and nothing in the browser calls them). docs/benchmarks.md has each
# one's saving.
OPT_FEATURES=(--enable-bulk-memory --enable-nontrapping-float-to-int)
wasm-opt -Oz --converge "${OPT_FEATURES[@]}" "--remove-exports=*intounderlying*" \
  -o "$PKG/$NAME.wasm" "$PKG/$NAME.wasm"
wasm-opt -Oz "${OPT_FEATURES[@]}" --enable-sign-ext --enable-mutable-globals --enable-reference-types \
  --enable-multivalue -o "$PKG/console_bg.wasm" "$PKG/console_bg.wasm"
# The widget's own JS modules (`#[wasm_bindgen(module)]`) are loaded with it: minified alike.
for js in "$PKG/$NAME.js" "$PKG/console.js" $(find "$PKG/snippets" -name '*.js' 2>/dev/null); do
  terser "$js" --module --compress --mangle --output "$js"
done
# Browsers as browserslist's `defaults` (what cargo-leptos targets).
lightningcss --minify --targets defaults style/main.css -o "$PKG/$NAME.css"

# Kept for the next build of the same sources (renamed into place whole,
# so a run beside this one never copies half a site); the four newest kept.
# Only if the sources did not change while it was built.
if [[ -n "$key" && "$(site_key 2>/dev/null)" == "$key" ]]; then
  mkdir -p "$SITE_CACHE"
  staged="$(mktemp -d "$SITE_CACHE/.staging.XXXXXX")"
  chmod 755 "$staged"
  cp -r "$SITE/." "$staged/"
  mv -T "$staged" "$SITE_CACHE/$key" 2>/dev/null || rm -rf "$staged"
  find "$SITE_CACHE" -mindepth 1 -maxdepth 1 -name '.staging.*' -mmin +60 -exec rm -rf {} +
  ls -1dt "$SITE_CACHE"/*/ | tail -n +5 | xargs -r rm -rf
fi
