// A stand-in for the `vscode` module, just enough to load the bundled extension (and
// vscode-languageclient, which subclasses a few VS Code classes at load time) under node and to
// record what activate() does. Used only by test/extension.test.ts (see scripts/build.mjs).

export const recorded = {
  errors: [] as Array<{ message: string; items: string[] }>,
  warnings: [] as string[],
  commands: [] as string[],
  executed: [] as Array<{ command: string; args: unknown[] }>,
  output: [] as string[],
  settings: {} as Record<string, unknown>,
  errorChoice: undefined as string | undefined,
};

class Base {}
export class CodeAction extends Base {}
export class Diagnostic extends Base {}
export class CancellationError extends Error {}
export class CallHierarchyItem extends Base {}
export class CodeLens extends Base {}
export class CompletionItem extends Base {}
export class DocumentLink extends Base {}
export class InlayHint extends Base {}
export class SymbolInformation extends Base {}
export class TypeHierarchyItem extends Base {}
export class Disposable {
  constructor(private readonly fn: () => void = () => {}) {}
  static from(...items: Array<{ dispose(): unknown }>) {
    return new Disposable(() => items.forEach((d) => d.dispose()));
  }
  dispose() {
    this.fn();
  }
}
export class EventEmitter<T> {
  private listeners: Array<(e: T) => void> = [];
  event = (listener: (e: T) => void) => {
    this.listeners.push(listener);
    return new Disposable();
  };
  fire(e: T) {
    this.listeners.forEach((l) => l(e));
  }
  dispose() {}
}

export const window = {
  createOutputChannel: (_name: string) => ({
    appendLine: (line: string) => recorded.output.push(line),
    append: (text: string) => recorded.output.push(text),
    show: () => {},
    dispose: () => {},
  }),
  showErrorMessage: async (message: string, ...items: string[]) => {
    recorded.errors.push({ message, items });
    return recorded.errorChoice;
  },
  showWarningMessage: async (message: string) => {
    recorded.warnings.push(message);
    return undefined;
  },
};

export const workspace = {
  workspaceFolders: undefined,
  getConfiguration: (section: string) => ({
    get: (key: string) => recorded.settings[`${section}.${key}`],
  }),
  onDidChangeConfiguration: (_listener: unknown) => new Disposable(),
};

export const commands = {
  registerCommand: (command: string, _fn: unknown) => {
    recorded.commands.push(command);
    return new Disposable();
  },
  executeCommand: async (command: string, ...args: unknown[]) => {
    recorded.executed.push({ command, args });
  },
};
