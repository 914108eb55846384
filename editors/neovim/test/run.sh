#!/usr/bin/env bash
# Headless Neovim tests of the plugin: unit.lua (plugin logic), then e2e.lua against the real
# `cudarace lsp` (diagnostics, hover, verified code action).
#   editors/neovim/test/run.sh
# CUDARACE_BIN: the server binary (default: target/debug/cudarace in the repository; build it with
# `cargo build -p cudarace`). CUDARACE_NVIM: the Neovim to test (default: nvim on PATH).
# CUDARACE_NVIM_API: force the plugin's start-up path (config | start | start_client).
# CUDARACE_E2E_VERBOSE=1: print the diagnostics, the hover and the fixed buffer.
# Prints timings; exits non-zero on any failure or after a global timeout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
plugin="$(cd "$here/.." && pwd)"
repo="$(cd "$plugin/../.." && pwd)"

bin="${CUDARACE_BIN:-$repo/target/debug/cudarace}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
nvim="${CUDARACE_NVIM:-nvim}"
if ! command -v "$nvim" >/dev/null 2>&1; then
  echo "neovim e2e FAILED: $nvim not found (Debian: apt-get install -y neovim)" >&2
  exit 1
fi

# A private cache/state folder: Neovim's LSP log (lsp.log, which holds the server's stderr) lands
# there and is shown on failure; nothing from the user's own Neovim set-up is read (--clean -u NONE).
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export XDG_CACHE_HOME="$scratch/cache" XDG_STATE_HOME="$scratch/state" XDG_DATA_HOME="$scratch/data"
export XDG_CONFIG_HOME="$scratch/config"
export CUDARACE_BIN="$bin" CUDARACE_PLUGIN_DIR="$plugin" CUDARACE_FIXTURE="${CUDARACE_FIXTURE:-$here/racy.cu}"
export RUST_BACKTRACE=1

# The plugin's own logic first (no server needed).
timeout -k 5 60 "$nvim" --headless --clean -u NONE -i NONE -n -c "luafile $here/unit.lua" </dev/null

if [ ! -x "$bin" ]; then
  echo "neovim e2e FAILED: server binary $bin not found; build it with \`cargo build -p cudarace\` or set CUDARACE_BIN" >&2
  exit 1
fi

status=0
# `timeout` is the last guard; e2e.lua has its own global timeout (170 s) below this one.
timeout -k 5 200 "$nvim" --headless --clean -u NONE -i NONE -n \
  -c "luafile $here/e2e.lua" </dev/null || status=$?
if [ "$status" -ne 0 ]; then
  [ "$status" -eq 124 ] && echo "neovim e2e FAILED: killed by the outer timeout (200 s)" >&2
  for log in "$scratch"/cache/nvim/lsp.log "$scratch"/state/nvim/lsp.log; do
    if [ -s "$log" ]; then
      echo "---- last lines of Neovim's LSP log ($log):" >&2
      tail -n 40 "$log" >&2
    fi
  done
  exit "$status"
fi
