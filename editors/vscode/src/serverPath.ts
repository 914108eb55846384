// Where the `cudarace` binary is: the first of
//   1. the CUDARACE_SERVER_PATH environment variable,
//   2. the `cudarace.server.path` setting,
//   3. the binary bundled in the extension (`server/cudarace` inside the extension folder),
//   4. `cudarace` on PATH.
// A path the user gave explicitly (1 or 2) that does not point to an executable file is an error,
// not a reason to fall through silently to another binary: the user would debug the wrong server.
//
// No `vscode` import here: everything the resolution needs comes in through `ResolveInput`.

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

export const ENV_VAR = 'CUDARACE_SERVER_PATH';
export const SETTING = 'cudarace.server.path';
export const BINARY_NAME = 'cudarace';

export type ServerSource = 'env' | 'setting' | 'bundled' | 'path';

export interface ResolveInput {
  env: Readonly<Record<string, string | undefined>>;
  /** The `cudarace.server.path` setting (undefined, null or "" when unset). */
  settingPath: string | null | undefined;
  /** The extension's install folder (holds `server/cudarace` when packed with the server). */
  extensionPath: string;
  platform: NodeJS.Platform;
  /** First workspace folder, for relative setting paths and `${workspaceFolder}`. */
  workspaceFolder?: string;
  homeDir?: string;
  /** Whether `p` is an executable regular file; defaults to a check on the real file system. */
  isExecutable?: (p: string) => boolean;
}

export type Resolution =
  | { ok: true; path: string; source: ServerSource }
  | { ok: false; message: string };

export function isExecutableFile(p: string): boolean {
  try {
    if (!fs.statSync(p).isFile()) return false;
    if (process.platform === 'win32') return true;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Expands `~`, `${workspaceFolder}` and `${env:NAME}`; makes a relative path absolute. */
export function expandPath(raw: string, input: ResolveInput): string {
  const home = input.homeDir ?? os.homedir();
  const pathApi = input.platform === 'win32' ? path.win32 : path.posix;
  let p = raw.trim();
  p = p.replace(/\$\{env:([^}]+)\}/g, (_m, name: string) => input.env[name] ?? '');
  if (input.workspaceFolder !== undefined) {
    p = p.replace(/\$\{workspaceFolder\}/g, input.workspaceFolder);
  }
  if (p === '~') p = home;
  else if (p.startsWith('~/') || p.startsWith('~\\')) p = pathApi.join(home, p.slice(2));
  if (!pathApi.isAbsolute(p) && input.workspaceFolder !== undefined) {
    p = pathApi.join(input.workspaceFolder, p);
  }
  return p;
}

/** The names a binary may have on this platform (`cudarace`, or `cudarace.exe` etc. on Windows). */
function binaryNames(input: ResolveInput): string[] {
  if (input.platform !== 'win32') return [BINARY_NAME];
  const pathext = (input.env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM')
    .split(';')
    .filter((e) => e !== '')
    .map((e) => e.toLowerCase());
  return pathext.map((ext) => BINARY_NAME + ext);
}

/** The PATH entries, in order. Windows spells the variable `Path`. */
function pathEntries(input: ResolveInput): string[] {
  const value =
    input.env.PATH ??
    Object.entries(input.env).find(([k]) => k.toUpperCase() === 'PATH')?.[1] ??
    '';
  const delimiter = input.platform === 'win32' ? ';' : ':';
  return value.split(delimiter).filter((entry) => entry !== '');
}

const HOW_TO_FIX =
  `Install it (from the cudarace repository: \`cargo install --path server/crates/cudarace\`, ` +
  `which puts \`cudarace\` on PATH), or set the \`${SETTING}\` setting or the ${ENV_VAR} ` +
  `environment variable to the binary's full path, then run "cudarace: Restart Language Server".`;

export function resolveServerPath(input: ResolveInput): Resolution {
  const isExec = input.isExecutable ?? isExecutableFile;
  const pathApi = input.platform === 'win32' ? path.win32 : path.posix;

  const fromEnv = input.env[ENV_VAR];
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    const p = expandPath(fromEnv, input);
    if (isExec(p)) return { ok: true, path: p, source: 'env' };
    return {
      ok: false,
      message:
        `The ${ENV_VAR} environment variable points to "${p}", which is not an executable file. ` +
        `Fix or unset the variable (then restart VS Code).`,
    };
  }

  if (typeof input.settingPath === 'string' && input.settingPath.trim() !== '') {
    const p = expandPath(input.settingPath, input);
    if (isExec(p)) return { ok: true, path: p, source: 'setting' };
    return {
      ok: false,
      message:
        `The ${SETTING} setting points to "${p}", which is not an executable file. ` +
        `Fix the setting or clear it to use the bundled server or \`${BINARY_NAME}\` on PATH.`,
    };
  }

  for (const name of binaryNames(input)) {
    const bundled = pathApi.join(input.extensionPath, 'server', name);
    if (isExec(bundled)) return { ok: true, path: bundled, source: 'bundled' };
  }

  for (const dir of pathEntries(input)) {
    for (const name of binaryNames(input)) {
      const candidate = pathApi.join(dir, name);
      if (isExec(candidate)) return { ok: true, path: candidate, source: 'path' };
    }
  }

  return {
    ok: false,
    message:
      `Could not find the cudarace language server: ${ENV_VAR} is not set, ${SETTING} is empty, ` +
      `this extension has no bundled server, and there is no \`${BINARY_NAME}\` on PATH. ` +
      HOW_TO_FIX,
  };
}
