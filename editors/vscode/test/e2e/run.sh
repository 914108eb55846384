#!/usr/bin/env bash
# The VS Code extension in a real VS Code: code-server 4.100.3 (VS Code 1.100.3) with the packaged
# .vsix installed (the server inside, as a user builds it), driven through headless Chromium with
# Playwright. drive.py asserts what a user sees (squiggles, Problems, hover, the verified quick fix,
# divergence, a setting) and prints the timings.
#
#   editors/vscode/test/e2e/run.sh
#
# CUDARACE_BIN: the server to pack (default: `cargo build -p cudarace`, target/debug/cudarace).
# CUDARACE_E2E_DIR: where code-server, the venv and the run's files go (default target/e2e).
# Screenshots, the timings (timings.json) and the logs of a run go to target/e2e-screenshots/.
# Installs what it needs first (install.sh: Debian packages, code-server from npm, Playwright from
# PyPI; about 3 minutes the first time). Exits non-zero if anything fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ext="$(cd "$here/../.." && pwd)"
repo="$(cd "$ext/../.." && pwd)"
dir="${CUDARACE_E2E_DIR:-$repo/target/e2e}"
shots="$repo/target/e2e-screenshots"
step() { printf '\n== vscode e2e: %s\n' "$*"; }

step "install (install.sh)"
bash "$here/install.sh"
code_server="$dir/code-server/node_modules/.bin/code-server"
python="$dir/venv/bin/python"

bin="${CUDARACE_BIN:-}"
if [ -z "$bin" ]; then
  step "cargo build -p cudarace"
  (cd "$repo" && cargo build -p cudarace)
  bin="${CARGO_TARGET_DIR:-$repo/target}/debug/cudarace"
fi
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac

step "package the extension with $bin inside"
[ -d "$ext/node_modules" ] || (cd "$ext" && npm ci --no-audit --no-fund)
vsix="$dir/cudarace-e2e.vsix"
CUDARACE_BIN="$bin" "$ext/scripts/package-with-server.sh" "$vsix"

# A fresh run: user data, extensions, and a copy of the workspace (the test edits its files).
run="$dir/run"
rm -rf "$run" "$shots"
mkdir -p "$run/user/User" "$run/extensions" "$run/xdg" "$shots"
cp -r "$here/workspace" "$run/workspace"
# Workspace trust stays on and the workspace untrusted: the extension must work in Restricted Mode.
cat > "$run/user/User/settings.json" <<'EOF'
{
  "security.workspace.trust.startupPrompt": "never",
  "security.workspace.trust.banner": "never",
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "workbench.enableExperiments": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "update.mode": "none",
  "chat.commandCenter.enabled": false,
  "git.enabled": false,
  "editor.minimap.enabled": false
}
EOF
# code-server's own config and logs stay in the run folder, not in $HOME.
export XDG_CONFIG_HOME="$run/xdg/config" XDG_DATA_HOME="$run/xdg/data" XDG_CACHE_HOME="$run/xdg/cache"
cs_args=(--user-data-dir "$run/user" --extensions-dir "$run/extensions")

step "install the .vsix into code-server"
"$code_server" "${cs_args[@]}" --install-extension "$vsix"
"$code_server" "${cs_args[@]}" --list-extensions --show-versions | tee "$run/extensions.txt"
grep -q '^cudarace.cudarace@' "$run/extensions.txt"

# The extension must use the server inside the .vsix: no CUDARACE_SERVER_PATH, and no `cudarace`
# on the PATH code-server (and so the extension host) sees.
path_without_cudarace=""
IFS=: read -r -a path_dirs <<< "$PATH"
for d in "${path_dirs[@]}"; do
  [ -n "$d" ] && [ ! -x "$d/cudarace" ] && path_without_cudarace="${path_without_cudarace:+$path_without_cudarace:}$d"
done

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
step "start code-server on 127.0.0.1:$port"
env -u CUDARACE_SERVER_PATH PATH="$path_without_cudarace" \
  "$code_server" "${cs_args[@]}" --auth none --bind-addr "127.0.0.1:$port" --disable-telemetry \
  --disable-update-check --disable-getting-started-override --ignore-last-opened \
  --config "$run/xdg/code-server.yaml" "$run/workspace" > "$shots/code-server.log" 2>&1 &
cs_pid=$!
cleanup() {
  kill "$cs_pid" 2>/dev/null || true
  wait "$cs_pid" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 120); do
  if "$python" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/healthz', timeout=2)" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$cs_pid" 2>/dev/null; then
    echo "vscode e2e FAILED: code-server exited:" >&2
    tail -n 40 "$shots/code-server.log" >&2
    exit 1
  fi
  sleep 0.5
done

step "drive the workbench (drive.py)"
status=0
"$python" "$here/drive.py" --url "http://127.0.0.1:$port/?folder=$run/workspace" \
  --workspace "$run/workspace" --shots "$shots" --server "$bin" --logs "$run/user/logs" || status=$?

# The extension's output channel (the server's stderr and the client's log) and the extension
# host's log, next to the screenshots.
find "$run/user/logs" -name '*cudarace*.log' -exec cp {} "$shots/" \; 2>/dev/null || true
find "$run/user/logs" -name '*exthost.log' -exec cp {} "$shots/" \; 2>/dev/null || true
if [ "$status" -ne 0 ]; then
  for log in "$shots"/*cudarace*.log "$shots"/*exthost.log; do
    [ -s "$log" ] || continue
    echo "---- last lines of $log:" >&2
    tail -n 30 "$log" >&2
  done
  echo "vscode e2e FAILED (screenshots and logs in $shots)" >&2
  exit "$status"
fi
step "ok (screenshots in $shots)"
