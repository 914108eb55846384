// The server process, started by the extension itself (not by vscode-languageclient), so that
// when it cannot start the user sees what the server said on stderr ("error: unexpected argument",
// "error while loading shared libraries: libz3.so.4") instead of the client's "write EPIPE".
//
// `cudarace lsp` speaks LSP on stdin/stdout and needs no transport argument: the extension runs
// exactly `<path> lsp`. (vscode-languageclient's `transport: TransportKind.stdio` appends
// `--stdio`, which the server accepts now but rejected before, exiting at once.)
//
// No `vscode` import here: unit-tested under node.

import { ChildProcess, spawn, SpawnOptions } from 'child_process';

/** The arguments the extension passes: nothing but the subcommand. */
export const SERVER_ARGS: readonly string[] = ['lsp'];

/** How much of the server's stderr is kept for an error message (the output channel has all). */
const STDERR_KEPT = 8192;

export class ServerProcess {
  private stderrText = '';
  /** Set once the process has exited (code, or the signal that ended it). */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Set when the process could not be started at all (ENOENT, EACCES…). */
  spawnError: Error | undefined;
  /** Whether a failure of this process has been reported to the user (once is enough). */
  reported = false;
  /** Whether the server answered `initialize` (set by the extension). */
  started = false;
  /** Resolves when the process has exited and its stderr has been read to the end. */
  readonly finished: Promise<void>;

  constructor(readonly command: string, readonly proc: ChildProcess) {
    let markExited: () => void = () => {};
    let markEnded: () => void = () => {};
    const exited = new Promise<void>((resolve) => (markExited = resolve));
    const ended = new Promise<void>((resolve) => (markEnded = resolve));
    this.finished = Promise.all([exited, ended]).then(() => undefined);
    proc.on('error', (err) => {
      // Only a failure to spawn ends the process without an 'exit' event.
      if (proc.pid === undefined) {
        this.spawnError = err;
        markExited();
        markEnded();
      }
    });
    proc.on('exit', (code, signal) => {
      this.exit = { code, signal };
      markExited();
    });
    if (proc.stderr) {
      proc.stderr.on('data', (chunk: Buffer | string) => {
        this.stderrText = (this.stderrText + chunk.toString()).slice(-STDERR_KEPT);
      });
      proc.stderr.on('end', () => markEnded());
      proc.stderr.on('error', () => markEnded());
    } else {
      markEnded();
    }
  }

  get running(): boolean {
    return this.exit === undefined && this.spawnError === undefined;
  }

  get stderr(): string {
    return this.stderrText;
  }

  /** Waits until the process has finished (exit and stderr), at most `ms` milliseconds. */
  async settle(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.finished, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    if (timer !== undefined) clearTimeout(timer);
  }

  /** Ends the process if it still runs (after the client's shutdown/exit had their chance). */
  kill(): void {
    if (this.running) this.proc.kill();
  }
}

/**
 * Starts `<command> lsp` and waits until it has been spawned (or failed to). Rejects only when the
 * process could not be created at all; the ServerProcess is passed to `onCreated` either way, so
 * the caller can report the failure from it.
 */
export async function startServerProcess(
  command: string,
  options: SpawnOptions,
  onCreated: (server: ServerProcess) => void,
): Promise<ServerProcess> {
  const proc = spawn(command, [...SERVER_ARGS], { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
  const server = new ServerProcess(command, proc);
  onCreated(server);
  await new Promise<void>((resolve, reject) => {
    proc.once('spawn', () => resolve());
    proc.once('error', (err) => {
      if (proc.pid === undefined) reject(err);
    });
  });
  return server;
}

/** The line of stderr that says what went wrong: the first one mentioning an error, else the last. */
export function stderrSummary(stderr: string): string | undefined {
  const lines = stderr
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  if (lines.length === 0) return undefined;
  const errorLine = lines.find((line) => /\berror\b|panicked|cannot|not found|denied/i.test(line));
  const line = errorLine ?? lines[lines.length - 1];
  return line.length > 400 ? `${line.slice(0, 400)}…` : line;
}

/** The message shown when the server exited (or never ran) before it answered `initialize`. */
export function startFailureMessage(server: ServerProcess): string {
  const what = `The cudarace server (${server.command}) could not start`;
  if (server.spawnError !== undefined) {
    const code = (server.spawnError as NodeJS.ErrnoException).code;
    return `${what}: ${code ?? server.spawnError.message}.`;
  }
  const summary = stderrSummary(server.stderr);
  const exit =
    server.exit === undefined
      ? 'it stopped answering'
      : server.exit.signal !== null
        ? `killed by ${server.exit.signal}`
        : `exit status ${server.exit.code}`;
  return summary === undefined ? `${what} (${exit}, nothing on stderr).` : `${what}: ${summary} (${exit}).`;
}
