// Checks a packed .vsix the way VS Code will use it.
//   node scripts/check-vsix.mjs FILE.vsix [--expect-server | --expect-no-server]
// A .vsix is a zip; this reads it with a small central-directory reader (no dependencies) and checks:
//  - the manifest (extension/package.json) and its `main` entry point are in the zip;
//  - the contributed language ids, activation events, Restricted Mode support and every setting
//    are there;
//  - nothing that should stay out (node_modules, sources, tests, maps) got in;
//  - --expect-server: extension/server/cudarace is there with its executable bit, and, extracted as
//    VS Code extracts it, the extension's own resolution picks it (source "bundled") and it runs;
//  - --expect-no-server: no server binary is in the zip.
// Exits non-zero with one line per failed check.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--'));
const expectServer = args.includes('--expect-server');
const expectNoServer = args.includes('--expect-no-server');
if (!file) {
  console.error('usage: check-vsix.mjs FILE.vsix [--expect-server | --expect-no-server]');
  process.exit(2);
}

const SETTINGS = [
  'cudarace.server.path',
  'cudarace.blockDim',
  'cudarace.gridDim',
  'cudarace.possibleSeverity',
  'cudarace.timeoutMs',
  'cudarace.workers',
  'cudarace.gridChecks',
  'cudarace.logLevel',
  'cudarace.trace.server',
];

/** Reads the zip's central directory: name → { method, compressedSize, size, offset, mode }. */
function readZip(buf) {
  // End of central directory: signature 0x06054b50, within the last 64 KiB + 22 bytes.
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65557); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip file (no end-of-central-directory record)');
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const entries = new Map();
  for (let n = 0; n < count; n++) {
    if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error(`bad central directory entry ${n}`);
    const madeBy = buf.readUInt16LE(p + 4) >> 8; // 3 = Unix: the high 16 bits of the external attributes are the mode
    const method = buf.readUInt16LE(p + 10);
    const compressedSize = buf.readUInt32LE(p + 20);
    const size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const external = buf.readUInt32LE(p + 38);
    const offset = buf.readUInt32LE(p + 42);
    const name = buf.toString('utf8', p + 46, p + 46 + nameLen);
    entries.set(name, { method, compressedSize, size, offset, mode: madeBy === 3 ? external >>> 16 : undefined });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

function extract(buf, entry) {
  if (buf.readUInt32LE(entry.offset) !== 0x04034b50) throw new Error('bad local file header');
  const nameLen = buf.readUInt16LE(entry.offset + 26);
  const extraLen = buf.readUInt16LE(entry.offset + 28);
  const start = entry.offset + 30 + nameLen + extraLen;
  const data = buf.subarray(start, start + entry.compressedSize);
  if (entry.method === 0) return Buffer.from(data);
  if (entry.method === 8) return inflateRawSync(data);
  throw new Error(`unsupported compression method ${entry.method}`);
}

const failures = [];
const check = (ok, message) => {
  if (!ok) failures.push(message);
};

const buf = readFileSync(file);
const entries = readZip(buf);
const names = [...entries.keys()];

check(entries.has('extension.vsixmanifest'), 'extension.vsixmanifest missing');
const manifestEntry = entries.get('extension/package.json');
if (!manifestEntry) {
  console.error(`${file}: extension/package.json missing`);
  process.exit(1);
}
const manifest = JSON.parse(extract(buf, manifestEntry).toString('utf8'));

// Entry point: VS Code resolves `main` like require() does, so ".js" may be left off.
const main = posix.join('extension', posix.normalize(manifest.main ?? ''));
const mainEntry = entries.get(main) ?? entries.get(`${main}.js`);
check(typeof manifest.main === 'string' && mainEntry !== undefined, `main entry point ${manifest.main} not in the .vsix`);
if (mainEntry) {
  const js = extract(buf, mainEntry).toString('utf8');
  check(js.length > 1000, `main entry point ${main} is suspiciously small (${js.length} bytes)`);
  check(/\bactivate\b/.test(js), `main entry point ${main} does not export activate`);
  check(js.includes('cuda-cpp') && js.includes('"lsp"'), `main entry point ${main} does not start "cudarace lsp" for cuda-cpp`);
  check(!/require\(["']vscode-languageclient/.test(js), 'vscode-languageclient is not bundled (it would be missing at run time)');
}

const languages = manifest.contributes?.languages ?? [];
const cudaCpp = languages.find((l) => l.id === 'cuda-cpp');
check(cudaCpp !== undefined, 'contributes.languages lacks cuda-cpp');
check(cudaCpp?.extensions?.includes('.cu') && cudaCpp?.extensions?.includes('.cuh'), 'cuda-cpp does not claim .cu and .cuh');
for (const id of ['cuda-cpp', 'cuda']) {
  check(manifest.activationEvents?.includes(`onLanguage:${id}`), `no activation event onLanguage:${id}`);
}
check(manifest.activationEvents?.includes('workspaceContains:**/*.cu'), 'no activation event workspaceContains:**/*.cu');
check(
  manifest.capabilities?.untrustedWorkspaces?.supported === 'limited',
  'capabilities.untrustedWorkspaces.supported is not "limited" (the extension would be off in Restricted Mode)',
);
const properties = manifest.contributes?.configuration?.properties ?? {};
for (const key of SETTINGS) check(key in properties, `setting ${key} not contributed`);
for (const cmd of ['cudarace.restartServer', 'cudarace.showOutput']) {
  check(manifest.contributes?.commands?.some((c) => c.command === cmd), `command ${cmd} not contributed`);
}
check(typeof manifest.engines?.vscode === 'string', 'engines.vscode missing');

for (const name of names) {
  check(!/(^|\/)node_modules\//.test(name), `${name}: node_modules must not be packed (the bundle holds the code)`);
  check(!/^extension\/(src|test|scripts|out)\//.test(name), `${name}: sources/tests must not be packed`);
  check(!name.endsWith('.map') && !name.endsWith('.ts'), `${name}: source maps / TypeScript must not be packed`);
}

const serverNames = ['extension/server/cudarace', 'extension/server/cudarace.exe'];
const serverName = serverNames.find((n) => entries.has(n));
if (expectNoServer) check(serverName === undefined, `${serverName} is packed but this .vsix was built without the server`);
if (expectServer) {
  if (serverName === undefined) {
    failures.push('extension/server/cudarace missing (expected a .vsix built with the server)');
  } else {
    const entry = entries.get(serverName);
    check(entry.size > 0, `${serverName} is empty`);
    // A native binary inside: the package must be marked for its platform, or VS Code would
    // install it anywhere.
    const vsixManifest = entries.has('extension.vsixmanifest')
      ? extract(buf, entries.get('extension.vsixmanifest')).toString('utf8')
      : '';
    const platform = { 'linux-x64': 'linux-x64', 'linux-arm64': 'linux-arm64', 'darwin-x64': 'darwin-x64', 'darwin-arm64': 'darwin-arm64' }[
      `${process.platform === 'darwin' ? 'darwin' : process.platform}-${process.arch}`
    ];
    check(
      platform !== undefined && vsixManifest.includes(`TargetPlatform="${platform}"`),
      `extension.vsixmanifest does not name the target platform ${platform ?? `${process.platform}-${process.arch}`}`,
    );
    if (serverName.endsWith('/cudarace')) {
      check(entry.mode !== undefined && (entry.mode & 0o111) !== 0, `${serverName} lost its executable bit (mode ${entry.mode?.toString(8)})`);
    }
    // Install it as VS Code does (mode from the zip) and let the extension's resolution find it.
    const dir = mkdtempSync(join(tmpdir(), 'cudarace-vsix-'));
    try {
      const target = join(dir, ...serverName.split('/'));
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, extract(buf, entry), { mode: entry.mode ?? 0o644 });
      const here = dirname(fileURLToPath(import.meta.url));
      // Built by `node scripts/build.mjs --tests`.
      const resolver = join(here, '..', 'out', 'lib', 'serverPath.js');
      if (!existsSync(resolver)) {
        console.error(`${file}: ${resolver} is missing: run \`node scripts/build.mjs --tests\` first (--expect-server runs the extension's own server resolution)`);
        process.exit(2);
      }
      const { resolveServerPath } = createRequire(import.meta.url)(resolver);
      const r = resolveServerPath({ env: { PATH: '' }, settingPath: undefined, extensionPath: join(dir, 'extension'), platform: process.platform });
      check(r.ok && r.source === 'bundled' && r.path === target, `the extension does not pick the bundled server: ${JSON.stringify(r)}`);
      if (r.ok) {
        const run = spawnSync(r.path, ['--help'], { encoding: 'utf8', timeout: 20000 });
        check(run.status === 0 && /lsp/.test(run.stdout), `the bundled server does not run (\`cudarace --help\` exit ${run.status}, ${run.error ?? run.stderr.trim().slice(0, 200)})`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

if (failures.length > 0) {
  for (const f of failures) console.error(`${file}: ${f}`);
  process.exit(1);
}
const size = (buf.length / 1024).toFixed(0);
console.log(`${file}: ok (${names.length} files, ${size} KiB${serverName ? `, bundled ${serverName}` : ', no bundled server'})`);
