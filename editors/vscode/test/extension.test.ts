// activate() as VS Code would call it, against the `vscode` stand-in in test/stubs/vscode.ts: the
// glue between the pure modules and VS Code (only typechecked otherwise).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, describe, it } from 'node:test';
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
