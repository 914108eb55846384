#!/usr/bin/env bash
# The VS Code extension's checks: install (from the lock file), typecheck, bundle, unit tests,
# package the .vsix and check its contents. Exits non-zero on the first failure.
# With CUDARACE_BIN=path/to/cudarace the unit tests also check the settings mapping against that
# server (test/serverContract.test.ts), and it packs that binary in (scripts/package-with-server.sh)
# and checks that the .vsix carries a server the extension finds and can run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
step() { printf '\n== vscode: %s\n' "$*"; }

step "npm ci"
npm ci --no-audit --no-fund
step "typecheck (tsc --noEmit)"
npx --no-install tsc --noEmit -p .
step "bundle (esbuild)"
node scripts/build.mjs --production
step "unit tests (node --test)"
node scripts/build.mjs --tests
node scripts/run-unit-tests.mjs
step "package (vsce)"
rm -rf server out/cudarace.vsix
npx --no-install vsce package --no-dependencies --skip-license --allow-missing-repository -o out/cudarace.vsix
step "check the .vsix"
node scripts/check-vsix.mjs out/cudarace.vsix --expect-no-server
if [ -n "${CUDARACE_BIN:-}" ]; then
  step "package with the server ($CUDARACE_BIN) and check it"
  scripts/package-with-server.sh out/cudarace-with-server.vsix
  node scripts/check-vsix.mjs out/cudarace-with-server.vsix --expect-server
fi
step "ok"
