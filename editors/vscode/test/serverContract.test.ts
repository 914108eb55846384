// The settings mapping against the real server: what toServerOptions() produces is accepted by
// `cudarace lsp` and takes effect, both as initializationOptions and through
// workspace/didChangeConfiguration. Needs the server binary: CUDARACE_BIN (editors/test.sh sets
// it); skipped without it.
import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { didChangeConfigurationParams, SettingKey, toServerOptions } from '../src/settings';

const BIN = process.env.CUDARACE_BIN;
const skip = BIN === undefined || !fs.existsSync(BIN) ? 'CUDARACE_BIN is not set to a server binary' : false;

// Racy exactly when blockDim.x > 64: threads t and t + 64 of a block write the same cell (shared
// memory, so the grid size plays no part).
const KERNEL = '__global__ void wrap() {\n    __shared__ int s[64];\n    s[threadIdx.x % 64] = 1;\n}\n';
const URI = 'file:///tmp/cudarace-contract/wrap.cu';

type Message = { id?: number; method?: string; params?: any; result?: any; error?: any };

class Connection {
  private buffer = Buffer.alloc(0);
  private nextId = 1;
  readonly received: Message[] = [];
  private waiters: Array<() => void> = [];
  readonly stderr: string[] = [];

  constructor(readonly proc: ChildProcess) {
    proc.stdout!.on('data', (chunk: Buffer) => this.onData(chunk));
    proc.stderr!.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString()));
  }

  private onData(chunk: Buffer) {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const headerEnd = this.buffer.indexOf('\r\n\r\n');
      if (headerEnd < 0) return;
      const length = Number(/Content-Length: (\d+)/i.exec(this.buffer.subarray(0, headerEnd).toString())?.[1]);
      if (this.buffer.length < headerEnd + 4 + length) return;
      const body = this.buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString('utf8');
      this.buffer = this.buffer.subarray(headerEnd + 4 + length);
      const message: Message = JSON.parse(body);
      if (message.method !== undefined && message.id !== undefined) {
        // A request from the server (progress tokens, registrations…): accept it.
        this.send({ id: message.id, result: null });
      }
      this.received.push(message);
      this.waiters.forEach((w) => w());
    }
  }

  send(message: Message) {
    const body = JSON.stringify({ jsonrpc: '2.0', ...message });
    this.proc.stdin!.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  }

  request(method: string, params: unknown): number {
    const id = this.nextId++;
    this.send({ id, method, params });
    return id;
  }

  notify(method: string, params: unknown) {
    this.send({ method, params });
  }

  /** Resolves with the first message (at index >= from) matching `pred`. */
  waitFor(what: string, pred: (m: Message) => boolean, from = 0, timeoutMs = 60000): Promise<Message> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.received.slice(from).find(pred);
        if (found) {
          clearTimeout(timer);
          this.waiters = this.waiters.filter((w) => w !== check);
          resolve(found);
        }
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(`timed out waiting for ${what}; server stderr:\n${this.stderr.join('').slice(-2000)}`));
      }, timeoutMs);
      this.waiters.push(check);
      check();
    });
  }
}

const settings = (values: Partial<Record<SettingKey, unknown>>) => toServerOptions((key) => values[key]);
const races = (m: Message) =>
  m.method === 'textDocument/publishDiagnostics' &&
  m.params.uri === URI &&
  m.params.diagnostics.some((d: any) => d.code === 'data-race');
const clean = (m: Message) =>
  m.method === 'textDocument/publishDiagnostics' &&
  m.params.uri === URI &&
  !m.params.diagnostics.some((d: any) => d.code === 'data-race');
const invalid = (m: Message) => m.method === 'window/showMessage' && /invalid/i.test(m.params.message);

describe('settings reach the real server', { skip }, () => {
  let conn: Connection;

  before(async () => {
    conn = new Connection(spawn(BIN!, ['lsp'], { stdio: ['pipe', 'pipe', 'pipe'] }));
    // Every setting set, in the forms a user may type them.
    const init = settings({
      blockDim: '128',
      gridDim: [2],
      possibleSeverity: 'information',
      timeoutMs: 4000,
      workers: 1,
      gridChecks: true,
      logLevel: 'warn',
    });
    assert.deepEqual(init.problems, []);
    const id = conn.request('initialize', {
      processId: process.pid,
      rootUri: null,
      capabilities: {},
      initializationOptions: init.options,
    });
    const response = await conn.waitFor('the initialize response', (m) => m.id === id && m.method === undefined);
    assert.equal(response.error, undefined, JSON.stringify(response.error));
    conn.notify('initialized', {});
  });

  after(() => {
    conn?.proc.kill();
  });

  it('accepts the mapped initializationOptions, and blockDim takes effect', async () => {
    conn.notify('textDocument/didOpen', {
      textDocument: { uri: URI, languageId: 'cuda-cpp', version: 1, text: KERNEL },
    });
    await conn.waitFor('a data-race diagnostic with blockDim 128', races);
    assert.equal(conn.received.find(invalid), undefined, 'the server rejected the settings');
  });

  it('applies didChangeConfiguration with the mapped options', async () => {
    let from = conn.received.length;
    conn.notify('workspace/didChangeConfiguration', didChangeConfigurationParams(settings({ blockDim: [64] }).options));
    await conn.waitFor('the race to go with blockDim 64', clean, from);

    from = conn.received.length;
    conn.notify('workspace/didChangeConfiguration', didChangeConfigurationParams(settings({ blockDim: '256' }).options));
    await conn.waitFor('the race to come back with blockDim 256', races, from);
    assert.equal(conn.received.find(invalid), undefined, 'the server rejected the settings');
  });

  it('would notice a rejected setting (the check above can fail)', async () => {
    const from = conn.received.length;
    conn.notify('workspace/didChangeConfiguration', { settings: { blockDim: [0] } });
    await conn.waitFor('a warning about the invalid blockDim', invalid, from, 20000);
  });
});
