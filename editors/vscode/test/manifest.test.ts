// The manifest and the pure modules must agree: every option the mapper reads is a contributed
// setting, and the contributed defaults map to options without problems.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { SETTING_KEYS, toServerOptions } from '../src/settings';

// The bundle runs from out/test/.
const root = path.join(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const properties: Record<string, { default?: unknown; enum?: unknown[] }> =
  manifest.contributes.configuration.properties;

describe('package.json', () => {
  it('contributes a setting for every server option, plus server.path and trace.server', () => {
    for (const key of SETTING_KEYS) assert.ok(properties[`cudarace.${key}`], `cudarace.${key} missing`);
    assert.ok(properties['cudarace.server.path']);
    assert.deepEqual(properties['cudarace.trace.server'].enum, ['off', 'messages', 'verbose']);
  });

  it('has defaults that map cleanly', () => {
    const { problems } = toServerOptions((key) => properties[`cudarace.${key}`].default);
    assert.deepEqual(problems, []);
  });

  it('offers exactly the severities the mapper accepts', () => {
    for (const severity of properties['cudarace.possibleSeverity'].enum ?? []) {
      assert.deepEqual(toServerOptions((key) => (key === 'possibleSeverity' ? severity : undefined)).problems, []);
    }
  });

  it('activates on both CUDA language ids', () => {
    assert.ok(manifest.activationEvents.includes('onLanguage:cuda-cpp'));
    assert.ok(manifest.activationEvents.includes('onLanguage:cuda'));
  });

  it('activates (and starts the server) as soon as a workspace with CUDA files opens', () => {
    assert.ok(manifest.activationEvents.includes('workspaceContains:**/*.cu'));
    assert.ok(manifest.activationEvents.includes('workspaceContains:**/*.cuh'));
  });

  it('runs in Restricted Mode, without the workspace choosing the binary', () => {
    const untrusted = manifest.capabilities?.untrustedWorkspaces;
    assert.equal(untrusted?.supported, 'limited');
    assert.deepEqual(untrusted?.restrictedConfigurations, ['cudarace.server.path']);
    assert.ok(typeof untrusted?.description === 'string' && untrusted.description.length > 0);
  });
});

describe('pure modules', () => {
  it('do not import vscode (they must run outside VS Code)', () => {
    for (const file of ['settings.ts', 'serverPath.ts', 'serverProcess.ts']) {
      const text = fs.readFileSync(path.join(root, 'src', file), 'utf8');
      assert.doesNotMatch(text, /from\s+['"]vscode['"]|require\(\s*['"]vscode['"]\s*\)/, file);
    }
  });
});
