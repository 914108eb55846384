import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { didChangeConfigurationParams, parseDim, SettingKey, toServerOptions } from '../src/settings';

function reader(values: Partial<Record<SettingKey, unknown>>) {
  return (key: SettingKey) => values[key];
}

describe('parseDim', () => {
  it('pads arrays to three dimensions', () => {
    assert.deepEqual(parseDim([256]), [256, 1, 1]);
    assert.deepEqual(parseDim([16, 16]), [16, 16, 1]);
    assert.deepEqual(parseDim([8, 8, 4]), [8, 8, 4]);
  });

  it('accepts the string spellings people type', () => {
    assert.deepEqual(parseDim('256'), [256, 1, 1]);
    assert.deepEqual(parseDim('16,16'), [16, 16, 1]);
    assert.deepEqual(parseDim(' 16 , 16 '), [16, 16, 1]);
    assert.deepEqual(parseDim('16x16'), [16, 16, 1]);
    assert.deepEqual(parseDim('8 8 4'), [8, 8, 4]);
    assert.deepEqual(parseDim('[32,4]'), [32, 4, 1]);
    assert.deepEqual(parseDim(64), [64, 1, 1]);
  });

  it('rejects what is not 1-3 positive integers', () => {
    for (const bad of ['', 'abc', '16,', '0', '-4', '1.5', '1,2,3,4', [], [0], [1.5], ['a'], [1, 2, 3, 4], {}, true]) {
      assert.equal(typeof parseDim(bad), 'string', `expected ${JSON.stringify(bad)} to be rejected`);
    }
  });
});

describe('toServerOptions', () => {
  it('sends nothing for unset settings, so the server uses its defaults', () => {
    const { options, problems } = toServerOptions(
      reader({ blockDim: null, gridDim: '', possibleSeverity: undefined, workers: null }),
    );
    assert.deepEqual(options, {});
    assert.deepEqual(problems, []);
  });

  it('maps every setting to the camelCase keys the server reads', () => {
    const { options, problems } = toServerOptions(
      reader({
        blockDim: '16,16',
        gridDim: [64],
        possibleSeverity: 'hint',
        timeoutMs: 5000,
        workers: 2,
        gridChecks: false,
        logLevel: ' cudarace_lsp=debug ',
      }),
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(options, {
      blockDim: [16, 16, 1],
      gridDim: [64, 1, 1],
      possibleSeverity: 'hint',
      timeoutMs: 5000,
      workers: 2,
      gridChecks: false,
      logLevel: 'cudarace_lsp=debug',
    });
    // The server parses JSON: the exact wire form matters.
    assert.equal(
      JSON.stringify(options),
      '{"blockDim":[16,16,1],"gridDim":[64,1,1],"possibleSeverity":"hint","timeoutMs":5000,"workers":2,"gridChecks":false,"logLevel":"cudarace_lsp=debug"}',
    );
  });

  it('forwards the compilation database and the system-headers switch (issue 16)', () => {
    const { options, problems } = toServerOptions(
      reader({ compileCommands: ' build/compile_commands.json ', systemIncludes: true }),
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(options, { compileCommands: 'build/compile_commands.json', systemIncludes: true });
    assert.equal(
      JSON.stringify(options),
      '{"compileCommands":"build/compile_commands.json","systemIncludes":true}',
    );
    const bad = toServerOptions(reader({ compileCommands: 3, systemIncludes: 'yes' }));
    assert.deepEqual(bad.options, {});
    assert.equal(bad.problems.length, 2);
    assert.match(bad.problems[0], /^cudarace\.compileCommands /);
    assert.match(bad.problems[1], /^cudarace\.systemIncludes /);
  });

  it('normalizes severity spellings', () => {
    assert.equal(toServerOptions(reader({ possibleSeverity: 'Warning' })).options.possibleSeverity, 'warning');
    assert.equal(toServerOptions(reader({ possibleSeverity: 'info' })).options.possibleSeverity, 'information');
  });

  it('accepts numeric strings for counts', () => {
    assert.equal(toServerOptions(reader({ timeoutMs: '750' })).options.timeoutMs, 750);
  });

  it('drops and reports invalid values, keeping the valid ones', () => {
    const { options, problems } = toServerOptions(
      reader({
        blockDim: [64, 64],
        gridDim: [1, 70000],
        possibleSeverity: 'error',
        timeoutMs: 0,
        workers: 1.5,
        gridChecks: 'yes',
        logLevel: 3,
      }),
    );
    assert.deepEqual(options, {});
    assert.equal(problems.length, 7);
    assert.match(problems[0], /^cudarace\.blockDim .*4096 threads per block.*ignored\.$/);
    assert.match(problems[1], /^cudarace\.gridDim .*65535/);
    assert.match(problems[2], /^cudarace\.possibleSeverity .*"error"/);
    assert.match(problems[3], /^cudarace\.timeoutMs /);
    assert.match(problems[4], /^cudarace\.workers /);
    assert.match(problems[5], /^cudarace\.gridChecks /);
    assert.match(problems[6], /^cudarace\.logLevel /);

    const mixed = toServerOptions(reader({ blockDim: 'oops', gridDim: [4, 4] }));
    assert.deepEqual(mixed.options, { gridDim: [4, 4, 1] });
    assert.equal(mixed.problems.length, 1);
  });

  it('enforces the CUDA block limits', () => {
    assert.deepEqual(toServerOptions(reader({ blockDim: [1024] })).options.blockDim, [1024, 1, 1]);
    assert.equal(toServerOptions(reader({ blockDim: [1025] })).problems.length, 1);
    assert.equal(toServerOptions(reader({ blockDim: [1, 1, 65] })).problems.length, 1);
    assert.deepEqual(toServerOptions(reader({ gridDim: [2 ** 31 - 1] })).options.gridDim, [2 ** 31 - 1, 1, 1]);
    assert.equal(toServerOptions(reader({ gridDim: [2 ** 31] })).problems.length, 1);
  });

  it('sends the same object on didChangeConfiguration', () => {
    const { options } = toServerOptions(reader({ workers: 3 }));
    assert.deepEqual(didChangeConfigurationParams(options), { settings: { workers: 3 } });
  });
});
