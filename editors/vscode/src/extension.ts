// The VS Code side of cudarace: finds the `cudarace` binary, starts `cudarace lsp` for CUDA files
// (exactly `<path> lsp`, spawned here so that a server that cannot start is reported with its own
// stderr) and keeps the server's options in step with the `cudarace.*` settings. Everything that
// can be decided without VS Code lives in serverPath.ts, serverProcess.ts and settings.ts
// (unit-tested under node).

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  CloseAction,
  CloseHandlerResult,
  DidChangeConfigurationNotification,
  Disposable,
  Emitter,
  ErrorAction,
  ErrorCodes,
  ErrorHandler,
  ErrorHandlerResult,
  LanguageClient,
  LanguageClientOptions,
  Message,
  MessageTransports,
  MessageWriter,
  ResponseError,
  State,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-languageclient/node';
import { ServerProcess, startFailureMessage, startServerProcess } from './serverProcess';
import { ENV_VAR, resolveServerPath, SETTING } from './serverPath';
import { didChangeConfigurationParams, SettingKey, ServerOptions, toServerOptions } from './settings';

const CLIENT_ID = 'cudarace'; // also makes vscode-languageclient honour `cudarace.trace.server`
const CLIENT_NAME = 'cudarace';
/** `cuda-cpp` is VS Code's built-in id for .cu/.cuh; `cuda` is what some CUDA extensions use. */
const LANGUAGE_IDS = ['cuda-cpp', 'cuda'];

/**
 * The language client, with the client's own error popups silenced while the extension reports a
 * server that could not start (they would say "write EPIPE" or "couldn't create connection to
 * server", where the extension shows what the server printed).
 */
class CudaraceClient extends LanguageClient {
  quiet = false;

  override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
    super.error(message, data, this.quiet ? false : showNotification);
  }

  /**
   * The client stops itself after a failed `initialize` (`void this.stop()`), which throws when it
   * is not running: an unhandled rejection. There is nothing to stop then; the extension ends the
   * process.
   */
  override async stop(timeout?: number): Promise<void> {
    try {
      await super.stop(timeout);
    } catch (err) {
      if (this.state === State.Running) throw err;
    }
  }
}

/**
 * One client and the server process it runs now (when the client restarts a crashed server, the
 * new process replaces it).
 */
interface Session {
  client?: CudaraceClient;
  server?: ServerProcess;
  /** Set when the extension stops this session: what happens then is not reported. */
  stopping: boolean;
}

/**
 * Writes to the server; a write to a server that has gone away is dropped. Its exit is what gets
 * reported (by the error handler, with its stderr): failing the write would only add "write
 * EPIPE" errors, and an unhandled rejection inside vscode-jsonrpc for a request that fails to go.
 */
class ServerWriter implements MessageWriter {
  private readonly errors = new Emitter<[Error, Message | undefined, number | undefined]>();
  readonly onError = this.errors.event;
  readonly onClose: MessageWriter['onClose'];
  private readonly forwarding: Disposable;

  constructor(
    private readonly inner: MessageWriter,
    private readonly server: ServerProcess,
  ) {
    this.onClose = inner.onClose;
    this.forwarding = inner.onError((event) => {
      if (!this.gone(event[0])) this.errors.fire(event);
    });
  }

  private gone(err: unknown): boolean {
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    return !this.server.running || code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED';
  }

  async write(message: Message): Promise<void> {
    try {
      await this.inner.write(message);
    } catch (err) {
      if (!this.gone(err)) throw err;
    }
  }

  end(): void {
    this.inner.end();
  }

  dispose(): void {
    this.forwarding.dispose();
    this.errors.dispose();
    this.inner.dispose();
  }
}

let activatedAt = Date.now();
let client: CudaraceClient | undefined;
let session: Session | undefined;
let output: vscode.OutputChannel | undefined;
let lastProblems = '';
/** The options the running server has, as JSON: initializationOptions, then each change sent. */
let lastSentOptions: string | undefined;

function readSettings(): { options: ServerOptions; problems: string[] } {
  const config = vscode.workspace.getConfiguration('cudarace');
  return toServerOptions((key: SettingKey) => config.get(key));
}

/** Shows each invalid setting once (not again on every unrelated settings change). */
function reportProblems(problems: string[]): void {
  const joined = problems.join('\n');
  if (joined === lastProblems) return;
  lastProblems = joined;
  for (const problem of problems) {
    output?.appendLine(problem);
    void vscode.window.showWarningMessage(problem);
  }
}

/** A .vsix unpacked by a tool that drops file modes leaves the bundled server non-executable. */
function restoreBundledServerMode(extensionPath: string): void {
  if (process.platform === 'win32') return;
  const bundled = path.join(extensionPath, 'server', 'cudarace');
  try {
    const stat = fs.statSync(bundled);
    if (stat.isFile() && (stat.mode & 0o111) === 0) fs.chmodSync(bundled, 0o755);
  } catch {
    // No bundled server (or a read-only install): resolution below looks elsewhere.
  }
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  restoreBundledServerMode(context.extensionPath);
  const resolution = resolveServerPath({
    env: process.env,
    settingPath: vscode.workspace.getConfiguration('cudarace').get<string | null>('server.path'),
    extensionPath: context.extensionPath,
    platform: process.platform,
    workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
  });
  if (!resolution.ok) {
    output?.appendLine(resolution.message);
    // Not awaited: activation must not wait for the user to dismiss a notification.
    void vscode.window.showErrorMessage(resolution.message, 'Open Settings').then((choice) => {
      if (choice === 'Open Settings') {
        return vscode.commands.executeCommand('workbench.action.openSettings', SETTING);
      }
      return undefined;
    });
    return;
  }
  output?.appendLine(`Using ${resolution.path} (from ${describeSource(resolution.source)}).`);

  const { options, problems } = readSettings();
  reportProblems(problems);

  const serverPath = resolution.path;
  const current: Session = { stopping: false };
  session = current;
  // The extension starts the process itself (see serverProcess.ts): exactly `<path> lsp`, with
  // its stderr kept for the message shown when it cannot start.
  const serverOptions = async (): Promise<MessageTransports> => {
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const started = await startServerProcess(serverPath, { cwd, env: process.env }, (created) => {
      current.server = created;
    }).catch((err) => {
      // Reported by reportStartFailure (the client's "couldn't create connection" would repeat it).
      if (current.client !== undefined) current.client.quiet = true;
      throw err;
    });
    // The server's log, as the client would show it for a server it started.
    started.proc.stderr!.on('data', (chunk: Buffer) => {
      try {
        output?.append(chunk.toString());
      } catch {
        // The channel is gone: VS Code is shutting down.
      }
    });
    return {
      reader: new StreamMessageReader(started.proc.stdout!),
      writer: new ServerWriter(new StreamMessageWriter(started.proc.stdin!), started),
    };
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: LANGUAGE_IDS.flatMap((language) => [
      { scheme: 'file', language },
      { scheme: 'untitled', language },
    ]),
    initializationOptions: options,
    outputChannel: output,
    errorHandler: errorHandler(current),
    // A failed `initialize`: the client would pop up the bare error ("write EPIPE", "Pending
    // response rejected since connection got disposed"). A server that exited is reported with
    // its stderr (reportStartFailure); an error the server answered with is shown as it said it.
    initializationFailedHandler: (error) => {
      const answered = error instanceof ResponseError && !CONNECTION_ERRORS.includes(error.code);
      if (answered && !current.stopping) {
        void vscode.window.showErrorMessage(`The cudarace server refused to start: ${error.message}`);
      }
      return false;
    },
    // Makes the client send workspace/didChangeConfiguration when a cudarace.* setting changes (and
    // once after start); the middleware below replaces VS Code's raw values with the mapped options.
    synchronize: { configurationSection: 'cudarace' },
    middleware: {
      workspace: {
        didChangeConfiguration: async () => {
          const current = client;
          if (current === undefined) return;
          const mapped = readSettings();
          reportProblems(mapped.problems);
          // The server re-checks every open document on a configuration change: skip the
          // notification when nothing it reads changed (the one sent right after start, a change
          // of cudarace.trace.server).
          const json = JSON.stringify(mapped.options);
          if (json === lastSentOptions) return;
          lastSentOptions = json;
          await current.sendNotification(
            DidChangeConfigurationNotification.type,
            didChangeConfigurationParams(mapped.options),
          );
        },
        // A server that pulls settings (workspace/configuration) gets the same mapped options
        // as the ones pushed in initializationOptions, not VS Code's raw setting values.
        configuration: (params, token, next) => {
          const pulled = params.items.map((item) =>
            item.section === undefined || item.section === 'cudarace' ? readSettings().options : undefined,
          );
          if (pulled.every((value) => value !== undefined)) return pulled;
          return next(params, token);
        },
      },
    },
  };

  lastSentOptions = JSON.stringify(options);
  const created = new CudaraceClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  current.client = created;
  client = created;
  created.onDidChangeState((event) => {
    // The server answered `initialize`: from now on a crash is a crash, not a failure to start.
    if (event.newState === State.Running && current.server !== undefined) current.server.started = true;
  });
  const asked = Date.now();
  try {
    await created.start();
    // start() also returns normally when the server died while starting (the failure is
    // reported by the error handler).
    if (created.state !== State.Running) return;
    const now = Date.now();
    output?.appendLine(
      `The server (pid ${current.server?.proc.pid}) answered initialize ${now - asked} ms after it was started, ` +
        `${now - activatedAt} ms after activation.`,
    );
  } catch (err) {
    if (!current.stopping) await reportStartFailure(current.server, err);
  }
}

/** Errors of the connection itself (the server did not answer). */
const CONNECTION_ERRORS: number[] = [
  ErrorCodes.MessageWriteError,
  ErrorCodes.MessageReadError,
  ErrorCodes.PendingResponseRejected,
  ErrorCodes.ConnectionInactive,
];

/** How long to wait for the end of a failed server's stderr before reporting it. */
const STDERR_WAIT_MS = 3000;

/**
 * Says once, in the words of the server's stderr, why the server could not start; offers the
 * output (the whole stderr is there) and the setting that picks the binary.
 */
async function reportStartFailure(failed: ServerProcess | undefined, err?: unknown): Promise<void> {
  if (failed !== undefined) {
    if (failed.reported) return;
    failed.reported = true;
    await failed.settle(STDERR_WAIT_MS);
  }
  const message =
    failed !== undefined
      ? startFailureMessage(failed)
      : `The cudarace server could not start: ${err instanceof Error ? err.message : String(err)}`;
  output?.appendLine(message);
  const choice = await vscode.window.showErrorMessage(message, 'Show Output', 'Open Settings');
  if (choice === 'Show Output') output?.show(true);
  if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', SETTING);
}

/**
 * The client's default handling (restart a crashed server up to 4 times in 3 minutes), except
 * for a server that exits before it answered `initialize`: that one is not restarted (it would fail
 * the same way), and the extension reports it with the server's stderr instead of the client's
 * EPIPE messages.
 */
function errorHandler(current: Session): ErrorHandler {
  let fallback: ErrorHandler | undefined;
  const byDefault = (): ErrorHandler => (fallback ??= current.client!.createDefaultErrorHandler(4));
  const failedToStart = () => current.server !== undefined && !current.server.started;
  return {
    error(error: Error, message: Message | undefined, count: number | undefined): ErrorHandlerResult | Promise<ErrorHandlerResult> {
      if (current.stopping || failedToStart() || (current.server !== undefined && !current.server.running)) {
        // Writing to a server that has exited (EPIPE): closed() deals with its exit.
        return { action: ErrorAction.Continue, handled: true };
      }
      return byDefault().error(error, message, count);
    },
    async closed(): Promise<CloseHandlerResult> {
      if (current.stopping) return { action: CloseAction.DoNotRestart, handled: true };
      if (failedToStart()) {
        if (current.client !== undefined) current.client.quiet = true;
        void reportStartFailure(current.server);
        return { action: CloseAction.DoNotRestart, handled: true };
      }
      const result = await byDefault().closed();
      const crashed = current.server;
      if (result.action === CloseAction.DoNotRestart && crashed !== undefined) {
        // Given up on: say what the server said last.
        await crashed.settle(STDERR_WAIT_MS);
        const said = crashed.stderr.trim().split(/\r?\n/).slice(-5).join('\n');
        if (said.length > 0) {
          return { ...result, message: `${result.message ?? 'The cudarace server stopped.'}\nIts last words:\n${said}` };
        }
      }
      return result;
    },
  };
}

function describeSource(source: string): string {
  switch (source) {
    case 'env':
      return `the ${ENV_VAR} environment variable`;
    case 'setting':
      return `the ${SETTING} setting`;
    case 'bundled':
      return 'the server bundled with this extension';
    default:
      return 'PATH';
  }
}

async function stopClient(): Promise<void> {
  const stopping = session;
  client = undefined;
  session = undefined;
  if (stopping === undefined) return;
  stopping.stopping = true;
  const running = stopping.client;
  // Only a running client can be stopped (shutdown, exit); a starting one is ended with its process.
  if (running !== undefined && running.state === State.Running) {
    try {
      await running.stop();
    } catch (err) {
      output?.appendLine(`Stopping the server failed: ${String(err)}`);
    }
  }
  const proc = stopping.server;
  if (proc !== undefined) {
    if (running?.state !== State.Starting) await proc.settle(2000);
    proc.kill();
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  activatedAt = Date.now();
  output = vscode.window.createOutputChannel('cudarace');
  context.subscriptions.push(output);

  context.subscriptions.push(
    vscode.commands.registerCommand('cudarace.restartServer', async () => {
      await stopClient();
      await startClient(context);
    }),
    vscode.commands.registerCommand('cudarace.showOutput', () => output?.show(true)),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      // Other cudarace.* settings reach the server through the client's configuration
      // synchronization (see startClient); another binary needs a restart.
      if (event.affectsConfiguration(SETTING)) {
        await stopClient();
        await startClient(context);
      }
    }),
  );

  await startClient(context);
}

export async function deactivate(): Promise<void> {
  await stopClient();
}
