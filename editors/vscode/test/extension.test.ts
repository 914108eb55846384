// activate() as VS Code would call it, against the `vscode` stand-in in test/stubs/vscode.ts: the
// glue between the pure modules and VS Code (only typechecked otherwise).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { activate, deactivate } from '../src/extension';
import { recorded } from './stubs/vscode';

function context(extensionPath: string) {
  return { extensionPath, subscriptions: [] as Array<{ dispose(): unknown }> } as never;
}

describe('activate without a server', () => {
  beforeEach(() => {
    recorded.errors.length = 0;
    recorded.commands.length = 0;
    recorded.executed.length = 0;
    recorded.output.length = 0;
    recorded.settings = {};
    recorded.errorChoice = undefined;
  });

  it('registers the commands and says how to get a server', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'cudarace-ext-'));
    const saved = { PATH: process.env.PATH, env: process.env.CUDARACE_SERVER_PATH };
    process.env.PATH = empty;
    delete process.env.CUDARACE_SERVER_PATH;
    try {
      await activate(context(empty));
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.env !== undefined) process.env.CUDARACE_SERVER_PATH = saved.env;
      fs.rmSync(empty, { recursive: true, force: true });
    }
    assert.deepEqual(recorded.commands.sort(), ['cudarace.restartServer', 'cudarace.showOutput']);
    assert.equal(recorded.errors.length, 1);
    assert.match(recorded.errors[0].message, /Could not find the cudarace language server/);
    assert.deepEqual(recorded.errors[0].items, ['Open Settings']);
    assert.ok(recorded.output.some((line) => /cargo install/.test(line)));
    await deactivate();
  });

  it('opens the server.path setting when asked to', async () => {
    recorded.settings['cudarace.server.path'] = '/nonexistent/cudarace';
    recorded.errorChoice = 'Open Settings';
    await activate(context(os.tmpdir()));
    await new Promise((resolve) => setImmediate(resolve)); // the notification is not awaited
    assert.match(recorded.errors[0].message, /cudarace\.server\.path.*"\/nonexistent\/cudarace"/);
    assert.deepEqual(recorded.executed, [{ command: 'workbench.action.openSettings', args: ['cudarace.server.path'] }]);
    await deactivate();
  });
});

/** An executable shell script standing in for the server. */
function fakeServer(dir: string, script: string): string {
  const file = path.join(dir, 'cudarace');
  fs.writeFileSync(file, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  return file;
}

type Seen = { errors: Array<{ message: string; items: string[] }>; output: string[]; unhandled: string[] };

/** Activates the extension in a process of its own with this server (see test/harness/activate.ts). */
function activateWith(server: string, dir: string): Seen {
  const harness = path.join(__dirname, '..', 'harness', 'activate.js');
  const run = spawnSync(process.execPath, [harness, dir, '10000'], {
    encoding: 'utf8',
    env: { ...process.env, CUDARACE_SERVER_PATH: server },
    timeout: 30000,
  });
  assert.equal(run.status, 0, `harness failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

describe('a server that cannot start', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cudarace-ext-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is started as `<path> lsp`, with no transport argument', () => {
    const args = path.join(dir, 'args');
    // Records its arguments, then fails like a server that rejected them.
    const seen = activateWith(fakeServer(dir, `echo "$@" > '${args}'\necho "error: cannot start" >&2\nexit 2`), dir);
    assert.equal(fs.readFileSync(args, 'utf8').trim(), 'lsp');
    assert.equal(seen.errors.length, 1, JSON.stringify(seen.errors));
  });

  it("says what the server printed, once, and not the client's EPIPE", () => {
    // What `cudarace lsp --stdio` printed before the server accepted --stdio.
    const server = fakeServer(
      dir,
      `echo "error: unexpected argument '--stdio' found" >&2\necho >&2\necho "Usage: cudarace lsp [OPTIONS]" >&2\nexit 2`,
    );
    const seen = activateWith(server, dir);
    assert.equal(seen.errors.length, 1, JSON.stringify(seen.errors));
    const [shown] = seen.errors;
    assert.equal(
      shown.message,
      `The cudarace server (${server}) could not start: error: unexpected argument '--stdio' found (exit status 2).`,
    );
    assert.deepEqual(shown.items, ['Show Output', 'Open Settings']);
    // The whole stderr is in the output channel, and no EPIPE anywhere.
    const output = seen.output.join('');
    assert.match(output, /Usage: cudarace lsp/);
    assert.doesNotMatch(output, /EPIPE/);
  });

  it('says so when the server exits without a word', () => {
    const server = fakeServer(dir, 'exit 3');
    const seen = activateWith(server, dir);
    assert.deepEqual(
      seen.errors.map((e) => e.message),
      [`The cudarace server (${server}) could not start (exit status 3, nothing on stderr).`],
    );
  });

  it('names a binary that cannot run', () => {
    // Executable, but with an interpreter that does not exist: the spawn itself fails.
    const file = path.join(dir, 'cudarace');
    fs.writeFileSync(file, '#!/nonexistent/interpreter\n', { mode: 0o755 });
    const seen = activateWith(file, dir);
    assert.deepEqual(
      seen.errors.map((e) => e.message),
      [`The cudarace server (${file}) could not start: ENOENT.`],
    );
  });
});
