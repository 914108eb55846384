// The VS Code side of cudarace: finds the `cudarace` binary, starts `cudarace lsp` for CUDA files
// and keeps the server's options in step with the `cudarace.*` settings. Everything that can be
// decided without VS Code lives in serverPath.ts and settings.ts (unit-tested under node).

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions as ExecutableOptions,
  TransportKind,
} from 'vscode-languageclient/node';
import { ENV_VAR, resolveServerPath, SETTING } from './serverPath';
import { didChangeConfigurationParams, SettingKey, ServerOptions, toServerOptions } from './settings';

const CLIENT_ID = 'cudarace'; // also makes vscode-languageclient honour `cudarace.trace.server`
const CLIENT_NAME = 'cudarace';
/** `cuda-cpp` is VS Code's built-in id for .cu/.cuh; `cuda` is what some CUDA extensions use. */
const LANGUAGE_IDS = ['cuda-cpp', 'cuda'];

let client: LanguageClient | undefined;
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

  const executable = { command: resolution.path, args: ['lsp'], transport: TransportKind.stdio };
  const serverOptions: ExecutableOptions = { run: executable, debug: executable };
  const clientOptions: LanguageClientOptions = {
    documentSelector: LANGUAGE_IDS.flatMap((language) => [
      { scheme: 'file', language },
      { scheme: 'untitled', language },
    ]),
    initializationOptions: options,
    outputChannel: output,
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
  client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  try {
    await client.start();
  } catch (err) {
    const message = `The cudarace server (${resolution.path}) failed to start: ${String(err)}`;
    output?.appendLine(message);
    void vscode.window.showErrorMessage(message);
  }
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
  const running = client;
  client = undefined;
  if (running !== undefined) {
    try {
      await running.stop();
    } catch (err) {
      output?.appendLine(`Stopping the server failed: ${String(err)}`);
    }
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
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
