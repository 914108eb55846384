// Activates the extension (against the `vscode` stand-in) in a process of its own, as VS Code's
// extension host would, and prints what the user would have seen as JSON on stdout:
//   { errors: [{message, items}], output: [...], unhandled: [...] }
// Like the extension host, it only logs unhandled promise rejections (vscode-languageclient 9
// leaves one behind when a server dies before answering `initialize`); node's test runner would
// fail the test on them, so test/extension.test.ts runs this instead of activating in-process.
// Usage: node out/harness/activate.js EXTENSION_DIR WAIT_MS (the server: CUDARACE_SERVER_PATH).
import { activate, deactivate } from '../../src/extension';
import { recorded } from '../stubs/vscode';

const unhandled: string[] = [];
process.on('unhandledRejection', (reason) => unhandled.push(String(reason)));

async function main(): Promise<void> {
  const [extensionPath, waitArg] = process.argv.slice(2);
  const waitMs = Number(waitArg ?? '5000');
  await activate({ extensionPath, subscriptions: [] } as never);
  const deadline = Date.now() + waitMs;
  while (recorded.errors.length === 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // Anything that would follow the first message (a second popup, a restart).
  await new Promise((resolve) => setTimeout(resolve, 500));
  await deactivate();
  process.stdout.write(JSON.stringify({ errors: recorded.errors, output: recorded.output, unhandled }));
}

main().catch((err) => {
  process.stderr.write(`harness: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
