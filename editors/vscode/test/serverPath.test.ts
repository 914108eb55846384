import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { expandPath, isExecutableFile, ResolveInput, resolveServerPath } from '../src/serverPath';

/** A fake file system: the set of executable paths. */
function input(executables: string[], overrides: Partial<ResolveInput> = {}): ResolveInput {
  const set = new Set(executables);
  return {
    env: { PATH: '/usr/local/bin:/usr/bin' },
    settingPath: undefined,
    extensionPath: '/ext',
    platform: 'linux',
    workspaceFolder: '/ws',
    homeDir: '/home/u',
    isExecutable: (p) => set.has(p),
    ...overrides,
  };
}

describe('resolveServerPath order', () => {
  const all = ['/env/cudarace', '/set/cudarace', '/ext/server/cudarace', '/usr/bin/cudarace'];

  it('prefers the environment variable', () => {
    const r = resolveServerPath(
      input(all, { env: { PATH: '/usr/bin', CUDARACE_SERVER_PATH: '/env/cudarace' }, settingPath: '/set/cudarace' }),
    );
    assert.deepEqual(r, { ok: true, path: '/env/cudarace', source: 'env' });
  });

  it('then the setting', () => {
    const r = resolveServerPath(input(all, { settingPath: '/set/cudarace' }));
    assert.deepEqual(r, { ok: true, path: '/set/cudarace', source: 'setting' });
  });

  it('then the bundled binary', () => {
    const r = resolveServerPath(input(all));
    assert.deepEqual(r, { ok: true, path: '/ext/server/cudarace', source: 'bundled' });
  });

  it('then PATH, in PATH order', () => {
    const r = resolveServerPath(input(['/usr/bin/cudarace', '/usr/local/bin/cudarace']));
    assert.deepEqual(r, { ok: true, path: '/usr/local/bin/cudarace', source: 'path' });
  });

  it('treats empty env and setting values as unset', () => {
    const r = resolveServerPath(
      input(['/usr/bin/cudarace'], { env: { PATH: '/usr/bin', CUDARACE_SERVER_PATH: '  ' }, settingPath: '' }),
    );
    assert.deepEqual(r, { ok: true, path: '/usr/bin/cudarace', source: 'path' });
    assert.equal(resolveServerPath(input(['/usr/bin/cudarace'], { settingPath: null })).ok, true);
  });
});

describe('resolveServerPath errors', () => {
  it('says how to fix a missing server', () => {
    const r = resolveServerPath(input([]));
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.match(r.message, /Could not find the cudarace language server/);
    assert.match(r.message, /cargo install --path server\/crates\/cudarace/);
    assert.match(r.message, /cudarace\.server\.path/);
    assert.match(r.message, /CUDARACE_SERVER_PATH/);
  });

  it('does not fall through when the environment variable is wrong', () => {
    const r = resolveServerPath(
      input(['/usr/bin/cudarace'], { env: { PATH: '/usr/bin', CUDARACE_SERVER_PATH: '/nope/cudarace' } }),
    );
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.message, /CUDARACE_SERVER_PATH.*"\/nope\/cudarace".*not an executable/);
  });

  it('does not fall through when the setting is wrong', () => {
    const r = resolveServerPath(input(['/ext/server/cudarace'], { settingPath: '/nope/cudarace' }));
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.message, /cudarace\.server\.path.*"\/nope\/cudarace"/);
  });

  it('handles a missing PATH', () => {
    assert.equal(resolveServerPath(input([], { env: {} })).ok, false);
  });
});

describe('expandPath', () => {
  const base = input([]);
  it('expands ~, ${workspaceFolder} and ${env:NAME}', () => {
    assert.equal(expandPath('~/bin/cudarace', base), '/home/u/bin/cudarace');
    assert.equal(expandPath('${workspaceFolder}/target/debug/cudarace', base), '/ws/target/debug/cudarace');
    assert.equal(expandPath('${env:CARGO_HOME}/bin/cudarace', { ...base, env: { CARGO_HOME: '/c' } }), '/c/bin/cudarace');
  });

  it('takes relative paths from the workspace folder', () => {
    assert.equal(expandPath('target/release/cudarace', base), '/ws/target/release/cudarace');
    const r = resolveServerPath(input(['/ws/target/release/cudarace'], { settingPath: 'target/release/cudarace' }));
    assert.deepEqual(r, { ok: true, path: '/ws/target/release/cudarace', source: 'setting' });
  });
});

describe('Windows', () => {
  it('looks for cudarace.exe in the bundle and on Path', () => {
    const win = (execs: string[]) =>
      input(execs, {
        platform: 'win32',
        env: { Path: 'C:\\tools;C:\\cargo\\bin', PATHEXT: '.COM;.EXE' },
        extensionPath: 'C:\\ext',
        workspaceFolder: 'C:\\ws',
      });
    assert.deepEqual(resolveServerPath(win(['C:\\ext\\server\\cudarace.exe'])), {
      ok: true,
      path: 'C:\\ext\\server\\cudarace.exe',
      source: 'bundled',
    });
    assert.deepEqual(resolveServerPath(win(['C:\\cargo\\bin\\cudarace.exe'])), {
      ok: true,
      path: 'C:\\cargo\\bin\\cudarace.exe',
      source: 'path',
    });
  });
});

describe('isExecutableFile (real file system)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cudarace-path-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('accepts an executable file and rejects folders and plain files', { skip: process.platform === 'win32' }, () => {
    const exe = path.join(dir, 'cudarace');
    fs.writeFileSync(exe, '#!/bin/sh\n');
    fs.chmodSync(exe, 0o755);
    const plain = path.join(dir, 'notes.txt');
    fs.writeFileSync(plain, 'x');
    fs.chmodSync(plain, 0o644);
    assert.equal(isExecutableFile(exe), true);
    assert.equal(isExecutableFile(dir), false);
    assert.equal(isExecutableFile(path.join(dir, 'missing')), false);
    // root can read anything but still needs an x bit to exec
    assert.equal(isExecutableFile(plain), false);
  });

  it('finds a real bundled binary through the default check', () => {
    fs.mkdirSync(path.join(dir, 'ext', 'server'), { recursive: true });
    const bundled = path.join(dir, 'ext', 'server', 'cudarace');
    fs.writeFileSync(bundled, '#!/bin/sh\n');
    fs.chmodSync(bundled, 0o755);
    const r = resolveServerPath({ env: { PATH: '' }, settingPath: undefined, extensionPath: path.join(dir, 'ext'), platform: process.platform });
    assert.deepEqual(r, { ok: true, path: bundled, source: 'bundled' });
  });
});
