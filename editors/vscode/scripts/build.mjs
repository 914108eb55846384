// Bundles the extension (dist/extension.js) or, with --tests, the unit tests (out/test/*.test.js).
//   node scripts/build.mjs               development bundle with source maps
//   node scripts/build.mjs --production  minified bundle, no source maps (what the .vsix ships)
//   node scripts/build.mjs --tests       unit-test bundles; `vscode` is NOT external there, so a
//                                        pure module that imports it fails this build; also
//                                        out/harness/activate.js (the extension in a process of
//                                        its own) and out/lib/serverPath.js for check-vsix.mjs
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  // VS Code 1.82 (the oldest this extension supports) runs extensions on Node 18.
  target: 'node18',
  logLevel: 'warning',
  absWorkingDir: root,
};

if (tests) {
  const entryPoints = readdirSync(join(root, 'test'))
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join('test', f));
  const pure = entryPoints.filter((f) => !f.endsWith('extension.test.ts'));
  await esbuild.build({ ...common, entryPoints: pure, outdir: 'out/test', sourcemap: 'inline' });
  // The extension glue, loaded against a stand-in for the `vscode` module.
  await esbuild.build({
    ...common,
    entryPoints: ['test/extension.test.ts'],
    outdir: 'out/test',
    sourcemap: 'inline',
    alias: { vscode: './test/stubs/vscode.ts' },
  });
  // The extension activated in a process of its own (test/harness/activate.ts).
  await esbuild.build({
    ...common,
    entryPoints: ['test/harness/activate.ts'],
    outdir: 'out/harness',
    sourcemap: 'inline',
    alias: { vscode: './test/stubs/vscode.ts' },
  });
  // check-vsix.mjs resolves the bundled server with the extension's own code.
  await esbuild.build({ ...common, entryPoints: ['src/serverPath.ts'], outfile: 'out/lib/serverPath.js' });
} else {
  await esbuild.build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode'],
    minify: production,
    sourcemap: production ? false : 'linked',
  });
}
