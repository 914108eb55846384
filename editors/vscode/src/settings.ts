// VS Code settings → the options `cudarace lsp` accepts.
//
// This is the ONE place that knows the server's option names and shapes: the extension sends the
// result as `initializationOptions` when it starts the server and as the `settings` of
// `workspace/didChangeConfiguration` when a `cudarace.*` setting changes. If the server's keys
// change, only this file (and its tests) change.
//
// No `vscode` import here: the caller passes a plain reader, so this module runs under `node --test`.

/** Options as the server reads them (camelCase keys; absent key = server default). */
export interface ServerOptions {
  /** Block size [x, y, z]; absent = symbolic (any legal launch). */
  blockDim?: [number, number, number];
  /** Grid size [x, y, z]; absent = symbolic. */
  gridDim?: [number, number, number];
  /** Severity of possible (not definite) findings. */
  possibleSeverity?: PossibleSeverity;
  /** Solver time limit per query, in milliseconds. */
  timeoutMs?: number;
  /** Solver worker threads; absent = one per available core. */
  workers?: number;
  /** Cross-block (grid-level) global-memory checks. */
  gridChecks?: boolean;
  /** `tracing` filter for the server's stderr log, e.g. "info" or "cudarace_lsp=debug". */
  logLevel?: string;
  /** The project's `compile_commands.json` (or its folder); absent = found next to each file. */
  compileCommands?: string;
  /** Read the CUDA toolkit's and Debian's system headers (off by default: slower). */
  systemIncludes?: boolean;
}

export type PossibleSeverity = 'warning' | 'information' | 'hint';
export const POSSIBLE_SEVERITIES: readonly PossibleSeverity[] = ['warning', 'information', 'hint'];

/** The `cudarace.*` setting names (without the prefix) this module reads. */
export const SETTING_KEYS = [
  'blockDim',
  'gridDim',
  'possibleSeverity',
  'timeoutMs',
  'workers',
  'gridChecks',
  'logLevel',
  'compileCommands',
  'systemIncludes',
] as const;
export type SettingKey = (typeof SETTING_KEYS)[number];

/** Reads one `cudarace.<key>` setting; `undefined`/`null` mean "not set". */
export type SettingReader = (key: SettingKey) => unknown;

export interface MappedSettings {
  options: ServerOptions;
  /** One human-readable line per setting that was ignored because its value is invalid. */
  problems: string[];
}

// CUDA launch limits (NOTES.md "Launch configuration"): a value beyond them can never be launched,
// so sending it would make the server reason about impossible threads.
const MAX_THREADS_PER_BLOCK = 1024;
const MAX_BLOCK_Z = 64;
const MAX_GRID_X = 2 ** 31 - 1;
const MAX_GRID_YZ = 65535;

/**
 * Parses a dimension setting: an array of 1–3 positive integers, or a string of 1–3 positive
 * integers separated by commas, `x` or whitespace ("256", "16,16", "16x16", "8 8 4").
 * Missing trailing dimensions are 1. Returns an error message for anything else.
 */
export function parseDim(value: unknown): [number, number, number] | string {
  let parts: unknown[];
  if (Array.isArray(value)) {
    parts = value;
  } else if (typeof value === 'string') {
    const trimmed = value.trim().replace(/^\[(.*)\]$/, '$1').trim();
    if (trimmed === '') return 'is empty';
    parts = trimmed.split(/\s*[,x×*]\s*|\s+/i);
  } else if (typeof value === 'number') {
    parts = [value];
  } else {
    return `must be an array like [16, 16] or a string like "16,16", not ${describe(value)}`;
  }
  if (parts.length < 1 || parts.length > 3) {
    return `must have 1 to 3 dimensions, not ${parts.length}`;
  }
  const dims: number[] = [];
  for (const part of parts) {
    const n = typeof part === 'string' && /^\d+$/.test(part) ? Number(part) : part;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) {
      return `must hold positive integers, not ${describe(part)}`;
    }
    dims.push(n);
  }
  while (dims.length < 3) dims.push(1);
  return [dims[0], dims[1], dims[2]];
}

function checkBlockDim(dim: [number, number, number]): string | undefined {
  const threads = dim[0] * dim[1] * dim[2];
  if (threads > MAX_THREADS_PER_BLOCK) {
    return `has ${threads} threads per block; CUDA allows at most ${MAX_THREADS_PER_BLOCK}`;
  }
  if (dim[2] > MAX_BLOCK_Z) return `z is ${dim[2]}; CUDA allows at most ${MAX_BLOCK_Z}`;
  return undefined;
}

function checkGridDim(dim: [number, number, number]): string | undefined {
  if (dim[0] > MAX_GRID_X) return `x is ${dim[0]}; CUDA allows at most ${MAX_GRID_X}`;
  if (dim[1] > MAX_GRID_YZ || dim[2] > MAX_GRID_YZ) {
    return `y and z must be at most ${MAX_GRID_YZ}`;
  }
  return undefined;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return `a value of type ${typeof value}`;
}

function isUnset(value: unknown): boolean {
  // VS Code reports a cleared string setting as "" and a cleared array as [] in some UIs.
  return (
    value === undefined ||
    value === null ||
    (typeof value === 'string' && value.trim() === '') ||
    (Array.isArray(value) && value.length === 0)
  );
}

/** Maps the `cudarace.*` settings to server options; invalid values are dropped and reported. */
export function toServerOptions(read: SettingReader): MappedSettings {
  const options: ServerOptions = {};
  const problems: string[] = [];
  const bad = (key: SettingKey, why: string) => problems.push(`cudarace.${key} ${why}; ignored.`);

  const dims: Array<['blockDim' | 'gridDim', (d: [number, number, number]) => string | undefined]> =
    [
      ['blockDim', checkBlockDim],
      ['gridDim', checkGridDim],
    ];
  for (const [key, check] of dims) {
    const raw = read(key);
    if (isUnset(raw)) continue;
    const dim = parseDim(raw);
    if (typeof dim === 'string') {
      bad(key, dim);
      continue;
    }
    const limit = check(dim);
    if (limit !== undefined) {
      bad(key, limit);
      continue;
    }
    options[key] = dim;
  }

  const severity = read('possibleSeverity');
  if (!isUnset(severity)) {
    const normalized = typeof severity === 'string' ? severity.trim().toLowerCase() : severity;
    // "info" is what people type; the server's name is "information".
    const name = normalized === 'info' ? 'information' : normalized;
    if (POSSIBLE_SEVERITIES.includes(name as PossibleSeverity)) {
      options.possibleSeverity = name as PossibleSeverity;
    } else {
      bad('possibleSeverity', `must be one of ${POSSIBLE_SEVERITIES.join(', ')}, not ${describe(severity)}`);
    }
  }

  for (const key of ['timeoutMs', 'workers'] as const) {
    const raw = read(key);
    if (isUnset(raw)) continue;
    const n = typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : raw;
    if (typeof n === 'number' && Number.isSafeInteger(n) && n >= 1) {
      options[key] = n;
    } else {
      bad(key, `must be a positive integer, not ${describe(raw)}`);
    }
  }

  const gridChecks = read('gridChecks');
  if (!isUnset(gridChecks)) {
    if (typeof gridChecks === 'boolean') options.gridChecks = gridChecks;
    else bad('gridChecks', `must be true or false, not ${describe(gridChecks)}`);
  }

  const logLevel = read('logLevel');
  if (!isUnset(logLevel)) {
    if (typeof logLevel === 'string') options.logLevel = logLevel.trim();
    else bad('logLevel', `must be a string such as "info" or "cudarace_lsp=debug", not ${describe(logLevel)}`);
  }

  const compileCommands = read('compileCommands');
  if (!isUnset(compileCommands)) {
    if (typeof compileCommands === 'string') options.compileCommands = compileCommands.trim();
    else bad('compileCommands', `must be a path to compile_commands.json, not ${describe(compileCommands)}`);
  }

  const systemIncludes = read('systemIncludes');
  if (!isUnset(systemIncludes)) {
    if (typeof systemIncludes === 'boolean') options.systemIncludes = systemIncludes;
    else bad('systemIncludes', `must be true or false, not ${describe(systemIncludes)}`);
  }

  return { options, problems };
}

/**
 * The `workspace/didChangeConfiguration` parameters for new options. The server reads the same
 * object as its `initializationOptions` (it also accepts it under a `cudarace` key), and takes it
 * as the whole configuration: a key left out means the server's default, so clearing a setting
 * resets it.
 */
export function didChangeConfigurationParams(options: ServerOptions): { settings: ServerOptions } {
  return { settings: options };
}
