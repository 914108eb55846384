#!/usr/bin/env bash
# Packs the extension WITH the cudarace server inside (extension/server/cudarace), for this platform.
#
#   editors/vscode/scripts/package-with-server.sh [OUT.vsix]     (default: cudarace-<target>.vsix)
#
# Builds the release binary (`cargo build --release -p cudarace`) unless CUDARACE_BIN names a binary
# to pack instead (the tests pack the debug build to save a release build). The server links Z3
# dynamically: the machine that installs the .vsix needs Z3's shared library (Debian: libz3-4).
# Needs node_modules (runs `npm ci` if missing). Check the result with
#   node scripts/build.mjs --tests     # once: check-vsix.mjs runs the extension's own server
#                                      # resolution from out/lib/serverPath.js, built by this
#   node scripts/check-vsix.mjs OUT.vsix --expect-server
set -euo pipefail
ext="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo="$(cd "$ext/../.." && pwd)"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=linux-x64 ;;
  Linux-aarch64 | Linux-arm64) target=linux-arm64 ;;
  Darwin-x86_64) target=darwin-x64 ;;
  Darwin-arm64) target=darwin-arm64 ;;
  *) echo "package-with-server: unsupported platform $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
out="${1:-$ext/cudarace-$target.vsix}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

if [ -n "${CUDARACE_BIN:-}" ]; then
  bin="$CUDARACE_BIN"
else
  (cd "$repo" && cargo build --release -p cudarace)
  bin="${CARGO_TARGET_DIR:-$repo/target}/release/cudarace"
fi
if [ ! -x "$bin" ]; then
  echo "package-with-server: $bin is not an executable file" >&2
  exit 1
fi

# server/ is build output (git-ignored); remove it afterwards so a later plain `npm run package`
# does not pick up a stale binary.
trap 'rm -rf "$ext/server"' EXIT
rm -rf "$ext/server"
mkdir -p "$ext/server"
cp "$bin" "$ext/server/cudarace"
chmod 755 "$ext/server/cudarace"
if command -v strip >/dev/null 2>&1; then
  strip "$ext/server/cudarace" 2>/dev/null || true
fi

cd "$ext"
[ -d node_modules ] || npm ci
npx --no-install vsce package --no-dependencies --skip-license --allow-missing-repository \
  --target "$target" -o "$out"
echo "package-with-server: packed $bin into $out"
