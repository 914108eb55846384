import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { SERVER_ARGS, startFailureMessage, startServerProcess, stderrSummary } from '../src/serverProcess';

describe('stderrSummary', () => {
  it('picks the line that says what went wrong', () => {
    assert.equal(
      stderrSummary("error: unexpected argument '--stdio' found\n\nUsage: cudarace lsp [OPTIONS]\n\nFor more information, try '--help'.\n"),
      "error: unexpected argument '--stdio' found",
    );
    assert.equal(
      stderrSummary('/opt/cudarace: error while loading shared libraries: libz3.so.4: cannot open shared object file\n'),
      '/opt/cudarace: error while loading shared libraries: libz3.so.4: cannot open shared object file',
    );
    assert.equal(stderrSummary('first\nlast\n'), 'last');
    assert.equal(stderrSummary('\n \n'), undefined);
  });
});

describe('startServerProcess', () => {
  it('runs `<path> lsp` and keeps its stderr for the message', async () => {
    assert.deepEqual(SERVER_ARGS, ['lsp']);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cudarace-proc-'));
    const file = path.join(dir, 'cudarace');
    fs.writeFileSync(file, '#!/bin/sh\necho "args: $*" >&2\nexit 4\n', { mode: 0o755 });
    try {
      const server = await startServerProcess(file, {}, () => {});
      await server.settle(5000);
      assert.equal(server.running, false);
      assert.equal(server.stderr, 'args: lsp\n');
      assert.equal(startFailureMessage(server), `The cudarace server (${file}) could not start: args: lsp (exit status 4).`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects when the binary cannot be spawned, and still hands over the process', async () => {
    let created: unknown;
    await assert.rejects(startServerProcess('/nonexistent/cudarace', {}, (s) => (created = s)), /ENOENT/);
    assert.ok(created);
  });
});
