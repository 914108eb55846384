// A stand-in for the `vscode` module, just enough to load the bundled extension (and
// vscode-languageclient, which subclasses a few VS Code classes at load time) under node and to
// record what activate() does. Used only by test/extension.test.ts (see scripts/build.mjs).

export const recorded = {
  errors: [] as Array<{ message: string; items: string[] }>,
  warnings: [] as string[],
  infos: [] as string[],
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

/** An enum whose every member exists (the client maps a few dozen of them at load time). */
function anyEnum(): Record<string, unknown> {
  return new Proxy({} as Record<string, unknown>, {
    get: (_target, key) => (typeof key === 'string' ? { value: key, append: (more: string) => `${key}.${more}` } : undefined),
  });
}
export const CodeActionKind = anyEnum();
export const CodeActionTriggerKind = anyEnum();
export const CompletionItemKind = anyEnum();
export const CompletionItemTag = anyEnum();
export const CompletionTriggerKind = anyEnum();
export const DiagnosticSeverity = anyEnum();
export const DiagnosticTag = anyEnum();
export const DocumentHighlightKind = anyEnum();
export const FileType = anyEnum();
export const FoldingRangeKind = anyEnum();
export const NotebookCellKind = anyEnum();
export const ProgressLocation = anyEnum();
export const SignatureHelpTriggerKind = anyEnum();
export const SymbolKind = anyEnum();
export const SymbolTag = anyEnum();
export const TextDocumentSaveReason = anyEnum();
export const version = '1.100.0';
export const env = { language: 'en', appName: 'stub', machineId: 'stub', uiKind: 1 };
export const Uri = {
  file: (fsPath: string) => ({ scheme: 'file', fsPath, path: fsPath, toString: () => `file://${fsPath}` }),
  parse: (value: string) => ({ scheme: value.split(':')[0], fsPath: value, path: value, toString: () => value }),
};
export const languages = {
  createDiagnosticCollection: () => ({ set() {}, delete() {}, clear() {}, forEach() {}, get() {}, has: () => false, dispose() {} }),
};

/** `onDid…`/`onWill…` events of a namespace: subscribing does nothing. */
function withEvents<T extends object>(base: T): T {
  return new Proxy(base, {
    get: (target, key, receiver) => {
      if (typeof key === 'string' && !(key in target) && /^on[A-Z]/.test(key)) return () => new Disposable();
      return Reflect.get(target, key, receiver);
    },
  });
}

export const window = withEvents({
  activeTextEditor: undefined,
  visibleTextEditors: [],
  tabGroups: withEvents({ all: [] }),
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
  showInformationMessage: async (message: string) => {
    recorded.infos.push(message);
    return undefined;
  },
});

export const workspace = withEvents({
  workspaceFolders: undefined,
  textDocuments: [],
  notebookDocuments: [],
  getConfiguration: (section: string) => ({
    get: (key: string, fallback?: unknown) => recorded.settings[`${section}.${key}`] ?? fallback,
  }),
});

export const commands = {
  registerCommand: (command: string, _fn: unknown) => {
    recorded.commands.push(command);
    return new Disposable();
  },
  executeCommand: async (command: string, ...args: unknown[]) => {
    recorded.executed.push({ command, args });
  },
};
