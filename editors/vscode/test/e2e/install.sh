#!/usr/bin/env bash
# Installs what the real-client test needs:
#   - Debian packages (apt, as root): chromium (the browser Playwright drives), ripgrep,
#     python3-venv, and the headers and tools code-server's native modules build with;
# and, under $CUDARACE_E2E_DIR (default target/e2e):
#   - code-server 4.100.3 (VS Code 1.100.3) from npm, in $dir/code-server: the newest release
#     whose `engines.node` accepts Node 20 (4.103.2 and later want 22 or 24);
#   - Playwright (requirements.txt) from PyPI in a venv, $dir/venv.
# Re-running skips what is already installed at the pinned version (a marker file per part).
# About 3 minutes and 530 MB under target/e2e the first time (plus the Debian packages).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
dir="${CUDARACE_E2E_DIR:-$repo/target/e2e}"
CODE_SERVER_VERSION=4.100.3
# @vscode/ripgrep's postinstall downloads rg from GitHub unless this tarball is in its cache.
RG_CACHE="vscode-ripgrep-cache-1.15.11"
RG_TARBALL="ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
mkdir -p "$dir"
step() { printf '\n== e2e install: %s\n' "$*"; }

# --- Debian packages -------------------------------------------------------------------------
packages=(chromium fonts-dejavu-core ripgrep python3 python3-venv python3-pip ca-certificates
  libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev pkg-config build-essential)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  step "apt-get install ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "e2e install: missing Debian packages (${missing[*]}); run as root or install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi

# --- code-server -----------------------------------------------------------------------------
cs="$dir/code-server"
marker="$cs/.installed-$CODE_SERVER_VERSION"
if [ ! -f "$marker" ]; then
  step "npm install code-server@$CODE_SERVER_VERSION (about 3 minutes)"
  case "$(uname -m)" in
    x86_64) ;;
    *) echo "e2e install: only x86_64 is set up (the ripgrep tarball below is for x86_64)" >&2; exit 1 ;;
  esac
  rm -rf "$cs"
  mkdir -p "$cs" "$dir/tmp/$RG_CACHE"
  # Debian's rg in the tarball @vscode/ripgrep would otherwise fetch from GitHub (unreachable).
  rgdir="$(mktemp -d)"
  cp "$(command -v rg)" "$rgdir/rg"
  tar -C "$rgdir" -czf "$dir/tmp/$RG_CACHE/$RG_TARBALL" rg
  rm -rf "$rgdir"
  node_major="$(node -p 'process.versions.node.split(".")[0]')"
  if [ "$node_major" != 20 ]; then
    # code-server 4.100.3's postinstall insists on Node 20; newer Node runs it too.
    echo "e2e install: Node $node_major, not 20: setting FORCE_NODE_VERSION=$node_major" >&2
    export FORCE_NODE_VERSION="$node_major"
  fi
  # npm_config_unsafe_perm: code-server's postinstall refuses root without it (npm 11 dropped
  # the flag, the variable still reaches the script). nodedir: node-gyp takes Node's headers
  # from the installed Node instead of downloading them.
  nodedir_env=()
  if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then
    nodedir_env=(npm_config_nodedir=/usr)
  fi
  # A user config of our own (the user's ~/.npmrc, then two settings): `yes=true` because
  # node-pty's postinstall runs `npx node-gyp`, which `yes=false` would cancel; `allow-scripts`
  # because npm 11.19+ skips dependencies' install scripts unless allowed (and rejects the
  # setting on the command line or in the environment of a project install). Older npm ignores
  # `allow-scripts` and runs every script.
  npmrc="$dir/npmrc"
  { [ -f "$HOME/.npmrc" ] && grep -vE '^[[:space:]]*(yes|allow-scripts)[[:space:]]*=' "$HOME/.npmrc" || true
    echo "yes=true"
    echo "allow-scripts=argon2,@parcel/watcher,@vscode/deviceid,@vscode/ripgrep,@vscode/spdlog,kerberos,native-watchdog,node-pty"
  } > "$npmrc"
  export TMPDIR="$dir/tmp" npm_config_userconfig="$npmrc" npm_config_yes=true npm_config_unsafe_perm=true
  [ ${#nodedir_env[@]} -eq 0 ] || export "${nodedir_env[@]}"
  # code-server's own postinstall runs `npm install` in lib/vscode and lib/vscode/extensions (that
  # builds VS Code's native modules). Run under npm, it would hand the nested installs its
  # allow-scripts setting through the environment, which npm 11.19+ refuses; so the package is
  # installed without scripts, and its postinstall and argon2's build are run here.
  (
    cd "$cs"
    echo '{ "name": "cudarace-e2e-code-server", "private": true }' > package.json
    npm install --no-audit --no-fund --no-save --loglevel=warn --ignore-scripts "code-server@$CODE_SERVER_VERSION"
    cd node_modules/code-server
    npm_config_user_agent="npm/$(npm --version) node/$(node --version) linux x64" sh ./postinstall.sh
    cd "$cs"
    npm rebuild --no-audit --no-fund --loglevel=warn argon2
  )
  # code-server keeps its config and logs under XDG folders: here, not in $HOME.
  XDG_CONFIG_HOME="$dir/xdg/config" XDG_DATA_HOME="$dir/xdg/data" XDG_CACHE_HOME="$dir/xdg/cache" \
    "$cs/node_modules/.bin/code-server" --version
  # The postinstall is what builds VS Code's native modules: check that it ran.
  vsmods="$cs/node_modules/code-server/lib/vscode/node_modules"
  for m in node-pty @vscode/spdlog @parcel kerberos; do
    if [ -z "$(find "$vsmods/$m" -name '*.node' -print -quit 2>/dev/null)" ]; then
      echo "e2e install: $m has no native module: code-server's postinstall did not run or failed" >&2
      exit 1
    fi
  done
  [ -n "$(find "$cs/node_modules/argon2" -name '*.node' -print -quit)" ] ||
    { echo "e2e install: argon2 was not built" >&2; exit 1; }
  [ -x "$cs/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ] ||
    { echo "e2e install: @vscode/ripgrep has no rg" >&2; exit 1; }
  touch "$marker"
fi

# --- Playwright ------------------------------------------------------------------------------
venv="$dir/venv"
req_sum="$(sha256sum "$here/requirements.txt" | cut -c1-16)"
if [ ! -f "$venv/.installed-$req_sum" ]; then
  step "python3 -m venv + pip install -r requirements.txt"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  touch "$venv/.installed-$req_sum"
fi
step "ok ($(du -sh "$dir" | cut -f1) in $dir)"
