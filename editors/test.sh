#!/usr/bin/env bash
# The editor integrations' tests (CI calls this after `cargo test`):
#   1. editors/vscode/test.sh — npm ci, typecheck, bundle, unit tests, package and check the .vsix
#      (also a .vsix with the debug server packed in, checked to find and run it);
#   2. editors/neovim/test/run.sh — headless Neovim: plugin unit tests, then the end-to-end test
#      against `cudarace lsp`.
# Needs node/npm (20+) and nvim (Debian: apt-get install -y neovim). Builds the server with
# `cargo build -p cudarace` unless CUDARACE_BIN names one. Runs both parts, exits non-zero if either failed.
set -uo pipefail
editors="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$editors/.." && pwd)"

build=0
if [ -z "${CUDARACE_BIN:-}" ]; then
  echo "== editors: cargo build -p cudarace"
  if (cd "$repo" && cargo build -p cudarace); then
    export CUDARACE_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/cudarace"
  else
    build=1
    echo "editors: building the server failed; the VS Code checks run without it, the Neovim test cannot" >&2
  fi
else
  export CUDARACE_BIN
fi

vscode=0
"$editors/vscode/test.sh" || vscode=$?
neovim=0
if [ $build -eq 0 ]; then
  "$editors/neovim/test/run.sh" || neovim=$?
else
  neovim=1
fi

verdict() { if [ "$1" -eq 0 ]; then echo ok; else echo "FAILED ($1)"; fi; }
echo
echo "== editors: server build $(verdict $build), vscode $(verdict $vscode), neovim $(verdict $neovim)"
[ $build -eq 0 ] && [ $vscode -eq 0 ] && [ $neovim -eq 0 ]
