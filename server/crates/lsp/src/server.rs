//! The `LanguageServer` implementation and the main loop.
//!
//! Every handler forwards its message to one main-loop task that owns all state, so state
//! changes happen in message order on one task; requests get their answer back over a oneshot
//! channel. Checks run on blocking threads ([`crate::scheduler`]) and report back to the main
//! loop as messages; nothing on the main loop waits on a solver.

use crate::code_action::{
    allow_candidate, divergence_fix_candidates, fix_action, precondition_candidate,
    race_fix_candidates, same_warp, Edit, Verification, VerifyJob,
};
use crate::diagnostics::{
    kernel_diagnostics, notice_diagnostics, too_large_diagnostic, SpanResolver,
};
use crate::document::LineIndex16;
use crate::document::{is_cuda, ByteEdit, Document};
use crate::hover::{barrier_markdown, finding_markdown, kernel_markdown};
use crate::pipeline::CancelToken;
use crate::pipeline::{assess, Config, ConfigError, Options, CONFIG_FILE_NAME};
use crate::project::{ProjectEvent, Projects};
use crate::scheduler::{run_check, CheckEvent, CheckInput, CheckTotals, Engine};
use crate::settings::Settings;
use crate::stats::{DocumentStats, RunningTotals, StatsParams};
use cudarace_ir::{Barrier, BarrierKind, FindingKind, KernelReport, SourceFile, Span};
use futures::future::FutureExt;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

/// Checks slower than this show a `$/progress` indicator.
const PROGRESS_AFTER: Duration = Duration::from_millis(300);

/// A code action waiting for its verification.
pub(crate) struct PendingAction {
    action: CodeAction,
    verified: Verification,
    /// Verified fixes may be the preferred action; "allow" comments never are.
    preferable: bool,
}

pub(crate) enum Msg {
    Initialize(Box<InitializeParams>, oneshot::Sender<InitializeResult>),
    Initialized,
    DidOpen(DidOpenTextDocumentParams),
    DidChange(DidChangeTextDocumentParams),
    DidClose(DidCloseTextDocumentParams),
    DidSave(DidSaveTextDocumentParams),
    DidChangeConfiguration(Value),
    DidChangeWatchedFiles(DidChangeWatchedFilesParams),
    Hover(TextDocumentPositionParams, oneshot::Sender<Option<Hover>>),
    CodeAction(Box<CodeActionParams>, oneshot::Sender<Vec<PendingAction>>),
    /// The stats, the generation of the check running now (if any) and a watch of the last
    /// finished check's generation.
    Stats(Uri, oneshot::Sender<Option<StatsReply>>),
    Job {
        uri: Uri,
        generation: u64,
        event: JobEvent,
    },
    ProgressDue {
        uri: Uri,
        generation: u64,
    },
    FixSolved {
        uri: Uri,
        queries: usize,
    },
    /// A launch index (or one unit of it) was read in the background.
    Project(ProjectEvent),
}

pub(crate) type StatsReply = (DocumentStats, Option<u64>, watch::Receiver<u64>);

pub(crate) enum JobEvent {
    Check(CheckEvent),
    Done(Option<CheckTotals>),
}

/// The server object tower-lsp-server drives: a thin forwarder to the main loop.
pub struct Server {
    tx: mpsc::UnboundedSender<Msg>,
}

impl Server {
    pub(crate) fn new(client: Client) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let state = State::new(client, tx.clone());
        tokio::spawn(state.run(rx));
        Server { tx }
    }

    fn send(&self, msg: Msg) {
        if self.tx.send(msg).is_err() {
            tracing::error!("the main loop has stopped");
        }
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Msg) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.send(make(tx));
        rx.await.map_err(|_| Error::internal_error())
    }

    /// `cudarace/stats`.
    pub async fn stats(&self, params: StatsParams) -> Result<Value> {
        let uri = params.text_document.uri;
        let Some((stats, running, mut done)) = self.ask(|tx| Msg::Stats(uri.clone(), tx)).await?
        else {
            return Err(Error::invalid_params(format!(
                "document not open: {}",
                uri.as_str()
            )));
        };
        let Some(running) = running.filter(|_| params.wait) else {
            return serde_json::to_value(stats).map_err(|_| Error::internal_error());
        };
        // Wait for the running check, or a newer one that superseded it, to finish.
        while *done.borrow() < running {
            if done.changed().await.is_err() {
                return Err(Error::invalid_params("document closed"));
            }
        }
        let Some((stats, _, _)) = self.ask(|tx| Msg::Stats(uri.clone(), tx)).await? else {
            return Err(Error::invalid_params("document closed"));
        };
        serde_json::to_value(stats).map_err(|_| Error::internal_error())
    }
}

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        self.ask(|tx| Msg::Initialize(Box::new(params), tx)).await
    }

    async fn initialized(&self, _: InitializedParams) {
        self.send(Msg::Initialized);
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        self.send(Msg::DidOpen(params));
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.send(Msg::DidChange(params));
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.send(Msg::DidClose(params));
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        self.send(Msg::DidSave(params));
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.send(Msg::DidChangeConfiguration(params.settings));
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        self.send(Msg::DidChangeWatchedFiles(params));
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.ask(|tx| Msg::Hover(params.text_document_position_params, tx))
            .await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let pending = self.ask(|tx| Msg::CodeAction(Box::new(params), tx)).await?;
        let mut out = Vec::new();
        let mut preferred_given = false;
        // Verification runs in the background; a cancelled request just stops waiting here.
        for p in pending {
            if p.verified.await {
                let mut action = p.action;
                if p.preferable && !preferred_given {
                    action.is_preferred = Some(true);
                    preferred_given = true;
                }
                out.push(CodeActionOrCommand::CodeAction(action));
            }
        }
        Ok(Some(out))
    }
}

/// What the editor shows for one kernel: its latest report, with spans in the current text.
struct Shown {
    key: String,
    report: KernelReport,
    /// The document version the report was computed for (older while the kernel is re-checked).
    version: i32,
}

struct RunningJob {
    generation: u64,
    version: i32,
    cancel: CancelToken,
    progress_end: Option<oneshot::Sender<()>>,
}

struct DocState {
    doc: Document,
    path: Option<PathBuf>,
    shown: Vec<Shown>,
    files: Arc<Vec<SourceFile>>,
    job: Option<RunningJob>,
    last: CheckTotals,
    total: RunningTotals,
    checked_version: Option<i32>,
    /// The generation of the last finished check.
    done: watch::Sender<u64>,
    publish_count: u64,
    last_published: Option<(i32, Vec<Diagnostic>)>,
    /// Verifications of fix candidates for the current version.
    fixes: HashMap<(Vec<Edit>, Span), Verification>,
    fix_cancel: CancelToken,
    /// The configuration the running (or last) check used: its severities and suppression
    /// settings apply to what is published.
    config: Arc<Config>,
    /// The compilation database (its path) whose launch index the last check used.
    project: Option<PathBuf>,
    /// The barriers of each kernel (by key) of the last lowered version, and that version.
    barriers: Vec<(String, Vec<Barrier>)>,
    barriers_version: Option<i32>,
}

struct State {
    client: Client,
    tx: mpsc::UnboundedSender<Msg>,
    engine: Arc<Engine>,
    settings: Settings,
    docs: HashMap<Uri, DocState>,
    progress_supported: bool,
    next_generation: u64,
    settings_error: Option<String>,
    /// The workspace root (from `workspaceFolders` or `rootUri`): documents without a path of
    /// their own use its `cudarace.toml`.
    root: Option<PathBuf>,
    /// Whether the client lets us register a file watcher for `cudarace.toml`.
    watch_supported: bool,
    /// Compilation databases read so far (read again when one changes on disk).
    databases: cudarace_analysis::db_cache::DbCache,
    /// The launch index of each database in use (see [`crate::project`]).
    projects: Projects,
    /// Headers read and parsed so far, shared by every check (edits do not read them again).
    headers: Arc<cudarace_syntax::HeaderCache>,
    /// Configuration files read so far (cleared when one changes on disk).
    configs: HashMap<PathBuf, std::result::Result<Arc<Config>, ConfigError>>,
    /// Configuration files whose errors are to be published (diagnostics on the file itself;
    /// an empty list clears them).
    config_diagnostics: HashMap<PathBuf, Vec<Diagnostic>>,
}

impl State {
    fn new(client: Client, tx: mpsc::UnboundedSender<Msg>) -> Self {
        let settings = Settings::default();
        State {
            client,
            tx,
            engine: Arc::new(Engine::new(settings.worker_count())),
            settings,
            docs: HashMap::new(),
            progress_supported: false,
            next_generation: 0,
            settings_error: None,
            root: None,
            watch_supported: false,
            databases: Default::default(),
            projects: Projects::default(),
            headers: cudarace_syntax::HeaderCache::new(),
            configs: HashMap::new(),
            config_diagnostics: HashMap::new(),
        }
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        while let Some(msg) = rx.recv().await {
            self.handle(msg).await;
            self.publish_config_diagnostics().await;
        }
    }

    /// The configuration of a document: the `cudarace.toml` in its folder or the nearest one
    /// above, else the workspace root's. A file that cannot be used is reported on itself and
    /// the defaults apply.
    fn config_for(&mut self, path: Option<&Path>) -> Arc<Config> {
        let found = path.and_then(Config::discover).or_else(|| {
            let at_root = self.root.as_ref()?.join(CONFIG_FILE_NAME);
            at_root.is_file().then_some(at_root)
        });
        let Some(file) = found else {
            return Arc::new(Config::default());
        };
        if !self.configs.contains_key(&file) {
            let loaded = Config::load(&file).map(Arc::new);
            let diagnostics = match &loaded {
                Ok(_) => vec![],
                Err(e) => {
                    tracing::warn!("{e}");
                    vec![config_error_diagnostic(e)]
                }
            };
            self.config_diagnostics.insert(file.clone(), diagnostics);
            self.configs.insert(file.clone(), loaded);
        }
        match &self.configs[&file] {
            Ok(config) => config.clone(),
            Err(_) => Arc::new(Config::default()),
        }
    }

    async fn publish_config_diagnostics(&mut self) {
        for (file, diagnostics) in std::mem::take(&mut self.config_diagnostics) {
            if let Some(uri) = Uri::from_file_path(&file) {
                if let Some(first) = diagnostics.first() {
                    self.client
                        .show_message(MessageType::WARNING, first.message.clone())
                        .await;
                }
                self.client
                    .publish_diagnostics(uri, diagnostics, None)
                    .await;
            }
        }
    }

    /// A `cudarace.toml` changed on disk: read configurations again and re-check every open
    /// document.
    async fn did_change_watched_files(&mut self, params: DidChangeWatchedFilesParams) {
        let touches_config = params
            .changes
            .iter()
            .any(|c| c.uri.path().as_str().ends_with(CONFIG_FILE_NAME));
        if !touches_config {
            return;
        }
        // Files that had errors get their diagnostics cleared or renewed when read again.
        for (file, result) in self.configs.drain() {
            if result.is_err() {
                self.config_diagnostics.insert(file, vec![]);
            }
        }
        self.projects.clear();
        let uris: Vec<Uri> = self.docs.keys().cloned().collect();
        for uri in uris {
            self.start_job(&uri).await;
        }
    }

    async fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Initialize(params, reply) => {
                let _ = reply.send(self.initialize(*params));
            }
            Msg::Initialized => {
                if let Some(err) = self.settings_error.take() {
                    self.client.show_message(MessageType::WARNING, err).await;
                }
                if self.watch_supported {
                    self.register_config_watcher();
                }
            }
            Msg::DidOpen(p) => self.did_open(p).await,
            Msg::DidChange(p) => self.did_change(p).await,
            Msg::DidClose(p) => {
                if let Some(mut d) = self.docs.remove(&p.text_document.uri) {
                    cancel_job(&mut d);
                    d.fix_cancel.cancel();
                    self.client
                        .publish_diagnostics(p.text_document.uri, vec![], None)
                        .await;
                }
            }
            Msg::DidSave(p) => {
                if let Some(path) = p.text_document.uri.to_file_path() {
                    let spawn = self.project_spawner();
                    self.projects.saved(&path, &spawn);
                }
            }
            Msg::Project(event) => {
                let spawn = self.project_spawner();
                if let Some(db) = self.projects.finished(event, &spawn) {
                    let uris: Vec<Uri> = self
                        .docs
                        .iter()
                        .filter(|(_, d)| d.project.as_ref() == Some(&db))
                        .map(|(u, _)| u.clone())
                        .collect();
                    for uri in uris {
                        self.start_job(&uri).await;
                    }
                }
            }
            Msg::DidChangeConfiguration(value) => self.did_change_configuration(value).await,
            Msg::DidChangeWatchedFiles(p) => self.did_change_watched_files(p).await,
            Msg::Hover(p, reply) => {
                let _ = reply.send(self.hover(&p));
            }
            Msg::CodeAction(p, reply) => {
                let _ = reply.send(self.code_action(&p));
            }
            Msg::Stats(uri, reply) => {
                let _ = reply.send(self.docs.get(&uri).map(|d| {
                    (
                        stats_of(&uri, d, &self.engine, &self.projects, &self.headers),
                        d.job.as_ref().map(|j| j.generation),
                        d.done.subscribe(),
                    )
                }));
            }
            Msg::Job {
                uri,
                generation,
                event,
            } => self.job_event(uri, generation, event).await,
            Msg::ProgressDue { uri, generation } => self.progress_due(uri, generation),
            Msg::FixSolved { uri, queries } => {
                if let Some(d) = self.docs.get_mut(&uri) {
                    d.total.fix_queries_solved += queries;
                }
            }
        }
    }

    fn initialize(&mut self, params: InitializeParams) -> InitializeResult {
        if let Some(options) = &params.initialization_options {
            self.apply_settings(options);
        }
        self.progress_supported = params
            .capabilities
            .window
            .as_ref()
            .and_then(|w| w.work_done_progress)
            .unwrap_or(false);
        self.watch_supported = params
            .capabilities
            .workspace
            .as_ref()
            .and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|w| w.dynamic_registration)
            .unwrap_or(false);
        #[allow(deprecated)] // `rootUri` is what older clients send.
        let root_uri = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .map(|f| f.uri.clone())
            .or(params.root_uri.clone());
        self.root = root_uri.and_then(|u| u.to_file_path().map(|p| p.into_owned()));
        InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(PositionEncodingKind::UTF16),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        // Saved `.cu` files update the launch index (see `crate::project`).
                        save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                        ..Default::default()
                    },
                )),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                code_action_provider: Some(CodeActionProviderCapability::Options(
                    CodeActionOptions {
                        code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
                        ..Default::default()
                    },
                )),
                ..Default::default()
            },
            server_info: Some(ServerInfo {
                name: "cudarace".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            ..Default::default()
        }
    }

    /// Asks the client to tell us about changes to `cudarace.toml` files (in the background:
    /// the main loop does not wait for the client's answer).
    fn register_config_watcher(&self) {
        let options = DidChangeWatchedFilesRegistrationOptions {
            watchers: vec![FileSystemWatcher {
                glob_pattern: GlobPattern::String(format!("**/{CONFIG_FILE_NAME}")),
                kind: None,
            }],
        };
        let Ok(register_options) = serde_json::to_value(options) else {
            return;
        };
        let client = self.client.clone();
        tokio::spawn(async move {
            let registration = Registration {
                id: "cudarace-config-watcher".into(),
                method: "workspace/didChangeWatchedFiles".into(),
                register_options: Some(register_options),
            };
            if let Err(e) = client.register_capability(vec![registration]).await {
                tracing::warn!("could not watch {CONFIG_FILE_NAME} files: {e}");
            }
        });
    }

    /// Returns whether the settings changed.
    fn apply_settings(&mut self, value: &Value) -> bool {
        match Settings::from_json(value) {
            Ok(settings) => {
                if let Some(level) = &settings.log_level {
                    crate::set_log_level(level);
                }
                self.engine.set_workers(settings.worker_count());
                let changed = settings != self.settings;
                if changed {
                    // Units are read with the settings' flags: build the indexes again.
                    self.projects.clear();
                }
                self.settings = settings;
                changed
            }
            Err(err) => {
                tracing::warn!("{err}");
                self.settings_error = Some(err);
                false
            }
        }
    }

    async fn did_change_configuration(&mut self, value: Value) {
        // Clients that expect a pull (`workspace/configuration`) send `null`: nothing changed.
        if value.is_null() || value.get("cudarace").is_some_and(Value::is_null) {
            return;
        }
        if !self.apply_settings(&value) {
            if let Some(err) = self.settings_error.take() {
                self.client.show_message(MessageType::WARNING, err).await;
            }
            return;
        }
        let uris: Vec<Uri> = self.docs.keys().cloned().collect();
        for uri in uris {
            self.publish(&uri, false).await;
            self.start_job(&uri).await;
        }
    }

    async fn did_open(&mut self, p: DidOpenTextDocumentParams) {
        let item = p.text_document;
        if !is_cuda(&item.language_id, item.uri.path().as_str()) {
            return;
        }
        let path = item.uri.to_file_path().map(|p| p.into_owned());
        let (done, _) = watch::channel(0);
        let state = DocState {
            doc: Document::new(item.language_id, item.version, item.text),
            path,
            shown: vec![],
            files: Arc::new(vec![]),
            job: None,
            last: CheckTotals::default(),
            total: RunningTotals::default(),
            checked_version: None,
            done,
            publish_count: 0,
            last_published: None,
            fixes: HashMap::new(),
            fix_cancel: CancelToken::new(),
            config: Arc::new(Config::default()),
            project: None,
            barriers: vec![],
            barriers_version: None,
        };
        if let Some(mut old) = self.docs.insert(item.uri.clone(), state) {
            cancel_job(&mut old);
        }
        self.start_job(&item.uri).await;
    }

    async fn did_change(&mut self, p: DidChangeTextDocumentParams) {
        let uri = p.text_document.uri;
        let Some(d) = self.docs.get_mut(&uri) else {
            tracing::warn!("change for a document that is not open: {}", uri.as_str());
            return;
        };
        let edits = d
            .doc
            .apply_changes(p.text_document.version, p.content_changes);
        // Shown results follow the text until their kernels are re-checked.
        for shown in &mut d.shown {
            for edit in &edits {
                map_report(&mut shown.report, edit);
            }
        }
        d.fix_cancel.cancel();
        d.fix_cancel = CancelToken::new();
        d.fixes.clear();
        self.start_job(&uri).await;
    }

    /// The options of a document at `path` checked with `config`: the settings', the flags of
    /// its compilation database, and that database's launch index when it is built (the first
    /// call starts building it in the background; see [`crate::project`]). Also returns the
    /// database's path.
    fn options_for(
        &mut self,
        path: Option<&Path>,
        config: &Arc<Config>,
    ) -> (Options, Option<PathBuf>) {
        let mut options = self.settings.options_for(path, config, &mut self.databases);
        options.frontend.headers = Some(self.headers.clone());
        let explicit = self.settings.compile_commands.clone();
        let Some(db) = path.and_then(|p| self.databases.database(explicit.as_deref(), config, p))
        else {
            return (options, None);
        };
        let spawn = self.project_spawner();
        let settings = &self.settings;
        let headers = &self.headers;
        let with_flags = |flags: &cudarace_analysis::compile_db::Flags| {
            let mut options = settings.options_with_flags(config, Some(flags));
            options.frontend.headers = Some(headers.clone());
            options
        };
        let index = self.projects.index_for(&db, &with_flags, &spawn);
        // A header no entry compiles: the flags of the first unit that includes it.
        if let (Some(index), Some(path)) = (&index, path) {
            if let Some(flags) = cudarace_analysis::launch_index::includer_flags(&db, index, path) {
                options = with_flags(flags);
            }
        }
        options.launch_index = index;
        (options, Some(db.path.clone()))
    }

    /// Runs a read of [`crate::project`] on a blocking thread; its result comes back to the main
    /// loop as [`Msg::Project`].
    fn project_spawner(&self) -> impl Fn(Box<dyn FnOnce() -> ProjectEvent + Send>) {
        let tx = self.tx.clone();
        move |job| {
            let tx = tx.clone();
            tokio::task::spawn_blocking(move || {
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)) {
                    Ok(event) => {
                        let _ = tx.send(Msg::Project(event));
                    }
                    Err(_) => tracing::error!("reading launch sites panicked"),
                }
            });
        }
    }

    async fn start_job(&mut self, uri: &Uri) {
        let Some((path, size)) = self
            .docs
            .get(uri)
            .map(|d| (d.path.clone(), d.doc.text().len() as u64))
        else {
            return;
        };
        let config = self.config_for(path.as_deref());
        let (options, project) = self.options_for(path.as_deref(), &config);
        // The command line's limit (`Budget::max_file_bytes`), so that both refuse the same files.
        let limit = options.budget.max_file_bytes;
        if size > limit {
            self.refuse_too_large(uri, size, limit).await;
            return;
        }
        let Some(d) = self.docs.get_mut(uri) else {
            return;
        };
        d.config = config;
        d.project = project;
        cancel_job(d);
        self.next_generation += 1;
        let generation = self.next_generation;
        let cancel = CancelToken::new();
        let input = CheckInput {
            path: d.path.clone(),
            text: d.doc.snapshot(),
            tree: d.doc.tree().clone(),
            options,
        };
        d.job = Some(RunningJob {
            generation,
            version: d.doc.version,
            cancel: cancel.clone(),
            progress_end: None,
        });
        let engine = self.engine.clone();
        let tx = self.tx.clone();
        let job_uri = uri.clone();
        tracing::debug!("checking {} version {}", uri.as_str(), d.doc.version);
        tokio::task::spawn_blocking(move || {
            let send = |event| {
                let _ = tx.send(Msg::Job {
                    uri: job_uri.clone(),
                    generation,
                    event,
                });
            };
            let result = run_check(&engine, &input, None, &cancel, &mut |e| {
                send(JobEvent::Check(e))
            });
            send(JobEvent::Done(result));
        });
        let tx = self.tx.clone();
        let uri = uri.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PROGRESS_AFTER).await;
            let _ = tx.send(Msg::ProgressDue { uri, generation });
        });
    }

    /// A document over the size limit is not analysed: its running check stops, its old
    /// findings go, and one diagnostic says why. The next edit that brings it under the limit
    /// starts a check again.
    async fn refuse_too_large(&mut self, uri: &Uri, size: u64, limit: u64) {
        let Some(d) = self.docs.get_mut(uri) else {
            return;
        };
        cancel_job(d);
        d.fix_cancel.cancel();
        d.fix_cancel = CancelToken::new();
        d.fixes.clear();
        d.shown.clear();
        d.files = Arc::new(vec![]);
        d.barriers.clear();
        d.barriers_version = None;
        // `cudarace/stats` requests waiting for the cancelled check stop waiting.
        self.next_generation += 1;
        d.done.send_replace(self.next_generation);
        let diagnostics = vec![too_large_diagnostic(size, limit)];
        let version = d.doc.version;
        d.last_published = Some((version, diagnostics.clone()));
        d.publish_count += 1;
        tracing::info!(
            "not checking {} v{version}: {size} bytes, limit {limit}",
            uri.as_str()
        );
        self.client
            .publish_diagnostics(uri.clone(), diagnostics, Some(version))
            .await;
    }

    async fn job_event(&mut self, uri: Uri, generation: u64, event: JobEvent) {
        let Some(d) = self.docs.get_mut(&uri) else {
            return;
        };
        let Some(version) = d
            .job
            .as_ref()
            .filter(|j| j.generation == generation)
            .map(|j| j.version)
        else {
            return; // a superseded job
        };
        match event {
            JobEvent::Check(CheckEvent::Lowered { kernels, files }) => {
                let mut old: HashMap<String, Shown> =
                    d.shown.drain(..).map(|s| (s.key.clone(), s)).collect();
                d.barriers = kernels
                    .iter()
                    .map(|k| (k.key.clone(), k.barriers.clone()))
                    .collect();
                d.barriers_version = Some(version);
                d.shown = kernels
                    .into_iter()
                    .filter_map(|k| match k.cached {
                        Some(report) => Some(Shown {
                            key: k.key,
                            report,
                            version,
                        }),
                        // Not finished yet: keep the previous result (no flicker to empty).
                        None => old.remove(&k.key),
                    })
                    .collect();
                d.files = files;
                self.publish(&uri, false).await;
            }
            JobEvent::Check(CheckEvent::Kernel { key, report }) => {
                match d.shown.iter_mut().find(|s| s.key == key) {
                    Some(s) => {
                        s.report = report;
                        s.version = version;
                    }
                    None => d.shown.push(Shown {
                        key,
                        report,
                        version,
                    }),
                }
                d.shown.sort_by_key(|s| s.report.span.start);
                self.publish(&uri, false).await;
            }
            JobEvent::Done(result) => {
                let Some(job) = d.job.take() else { return };
                if let Some(end) = job.progress_end {
                    let _ = end.send(());
                }
                if let Some(totals) = result {
                    d.last = totals;
                    d.total.add(&totals);
                    d.checked_version = Some(job.version);
                    tracing::info!(
                            "checked {} v{}: {} kernels ({} cached), {} queries solved, {} from cache, {:.1} ms",
                            uri.as_str(),
                            job.version,
                            totals.kernels_analysed,
                            totals.kernels_from_cache,
                            totals.queries_solved,
                            totals.queries_from_cache,
                            totals.time_ms
                        );
                    self.publish(&uri, true).await;
                    if let Some(d) = self.docs.get(&uri) {
                        let _ = d.done.send(job.generation);
                    }
                }
            }
        }
    }

    fn progress_due(&mut self, uri: Uri, generation: u64) {
        if !self.progress_supported {
            return;
        }
        let Some(job) = self.docs.get_mut(&uri).and_then(|d| d.job.as_mut()) else {
            return;
        };
        if job.generation != generation {
            return;
        }
        let (end_tx, end_rx) = oneshot::channel();
        job.progress_end = Some(end_tx);
        let client = self.client.clone();
        let token = ProgressToken::String(format!("cudarace/check/{generation}"));
        let name = uri
            .path()
            .as_str()
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string();
        tokio::spawn(async move {
            if client
                .create_work_done_progress(token.clone())
                .await
                .is_err()
            {
                return;
            }
            let progress = client
                .progress(token, "cudarace")
                .with_message(format!("checking {name}"))
                .begin()
                .await;
            let _ = end_rx.await;
            progress.finish().await;
        });
    }

    /// Publishes the shown results. Intermediate publishes (a check still running) are skipped
    /// when they would repeat the last one; the `last` one of a version is skipped only if that
    /// version already got exactly these diagnostics.
    async fn publish(&mut self, uri: &Uri, last: bool) {
        let Some(d) = self.docs.get_mut(uri) else {
            return;
        };
        let resolver = SpanResolver {
            uri,
            doc: &d.doc,
            files: &d.files,
        };
        // Suppressions are read from the current text (the shown reports follow it), with the
        // analysis' own function, as the command line does.
        let mut files: Vec<SourceFile> = d.files.as_ref().clone();
        let current = SourceFile {
            path: d.path.clone(),
            text: d.doc.snapshot(),
        };
        match files.first_mut() {
            Some(first) => *first = current,
            None => files.push(current),
        }
        let reports: Vec<KernelReport> = d.shown.iter().map(|s| s.report.clone()).collect();
        let complete = d.job.is_none() && d.checked_version == Some(d.doc.version);
        let assessment = assess(&files, &reports, &d.config, complete);
        let mut diagnostics: Vec<Diagnostic> =
            notice_diagnostics(&assessment.notices, &d.doc, &d.config);
        for (i, report) in reports.iter().enumerate() {
            let suppressed = assessment.suppressed.get(i).map_or(&[][..], Vec::as_slice);
            diagnostics.extend(kernel_diagnostics(
                report,
                suppressed,
                &resolver,
                &self.settings,
                &d.config,
            ));
        }
        let version = d.doc.version;
        let repeat = match &d.last_published {
            Some((v, previous)) => *previous == diagnostics && (!last || *v == version),
            // Nothing shown yet: an empty intermediate result changes nothing either.
            None => !last && diagnostics.is_empty(),
        };
        if repeat {
            return;
        }
        d.last_published = Some((version, diagnostics.clone()));
        d.publish_count += 1;
        self.client
            .publish_diagnostics(uri.clone(), diagnostics, Some(version))
            .await;
    }

    fn hover(&self, p: &TextDocumentPositionParams) -> Option<Hover> {
        let d = self.docs.get(&p.text_document.uri)?;
        let offset = d.doc.offset(p.position) as u32;
        let hit = |s: Span| s.file.0 == 0 && s.start <= offset && offset <= s.end;
        let markdown = |value: String, span: Span| Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value,
            }),
            range: Some(d.doc.range(span)),
        };
        for s in &d.shown {
            for f in &s.report.findings {
                if hit(f.span) {
                    return Some(markdown(finding_markdown(&s.report, f), f.span));
                }
            }
            for f in &s.report.findings {
                if let Some(r) = f.related.iter().find(|r| hit(r.span)) {
                    return Some(markdown(finding_markdown(&s.report, f), r.span));
                }
            }
            if hit(s.report.name_span) {
                return Some(markdown(kernel_markdown(&s.report), s.report.name_span));
            }
        }
        self.barrier_hover(d, offset)
    }

    /// Hover on a barrier without a finding (findings and kernel names are hovered first):
    /// what each kernel it belongs to established about it. Only for barriers of the current
    /// text; a kernel whose check of the current text is not finished claims nothing.
    fn barrier_hover(&self, d: &DocState, offset: u32) -> Option<Hover> {
        if d.barriers_version != Some(d.doc.version) {
            return None;
        }
        let mut at = None;
        let mut parts = Vec::new();
        for (key, barriers) in &d.barriers {
            let hit =
                |b: &&Barrier| b.span.file.0 == 0 && b.span.start <= offset && offset <= b.span.end;
            let Some(barrier) = barriers.iter().find(hit) else {
                continue;
            };
            let report = d
                .shown
                .iter()
                .find(|s| &s.key == key && s.version == d.doc.version)
                .map(|s| &s.report);
            let kernel = report.map_or(key.as_str(), |r| r.name.as_str());
            let source = barrier_source(d.doc.text(), barrier);
            parts.push(barrier_markdown(&source, barrier, kernel, report));
            at.get_or_insert(barrier.span);
        }
        let span = at?;
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: parts.join("\n---\n\n"),
            }),
            range: Some(d.doc.range(span)),
        })
    }

    fn code_action(&mut self, p: &CodeActionParams) -> Vec<PendingAction> {
        let uri = &p.text_document.uri;
        let Some(d) = self.docs.get_mut(uri) else {
            return vec![];
        };
        let start = d.doc.offset(p.range.start) as u32;
        let end = d.doc.offset(p.range.end) as u32;
        let touches = |s: Span| s.file.0 == 0 && s.start <= end && start <= s.end;
        // The same options as the document's check, so that verification reuses its results.
        let (path, config) = (d.path.clone(), d.config.clone());
        let (options, _) = self.options_for(path.as_deref(), &config);
        let Some(d) = self.docs.get_mut(uri) else {
            return vec![];
        };
        let mut out = Vec::new();
        let mut allows = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for shown in &d.shown {
            for finding in &shown.report.findings {
                // "Allow this … here": a suppression comment above the line the cursor is on.
                let mut places = std::iter::once(finding.span).chain(
                    (finding.kind == FindingKind::DataRace)
                        .then(|| finding.related.first().map(|r| r.span))
                        .flatten(),
                );
                if let Some(at) = places.find(|s| touches(*s)) {
                    if let Some(candidate) = allow_candidate(d.doc.text(), at, finding) {
                        if seen.insert(candidate.edits.clone()) {
                            let code = NumberOrString::String(finding.kind.code().to_string());
                            let range = d.doc.range(at);
                            let diagnostics: Vec<Diagnostic> = p
                                .context
                                .diagnostics
                                .iter()
                                .filter(|diag| {
                                    diag.code.as_ref() == Some(&code) && diag.range == range
                                })
                                .cloned()
                                .collect();
                            allows.push(PendingAction {
                                action: fix_action(uri, &d.doc, &candidate, diagnostics),
                                verified: futures::future::ready(true).boxed().shared(),
                                preferable: false,
                            });
                        }
                    }
                }
                let candidates = match (finding.kind, finding.related.first()) {
                    (FindingKind::DataRace, Some(other))
                        if touches(finding.span) || touches(other.span) =>
                    {
                        let mut c = race_fix_candidates(
                            d.doc.text(),
                            d.doc.tree(),
                            finding.span,
                            other.span,
                            same_warp(&finding.witness),
                        );
                        if let Some(p) = &finding.precondition {
                            c.extend(precondition_candidate(
                                d.doc.text(),
                                d.doc.tree(),
                                finding.span,
                                p,
                            ));
                        }
                        c
                    }
                    (FindingKind::BarrierDivergence, _) if touches(finding.span) => {
                        divergence_fix_candidates(d.doc.text(), d.doc.tree(), finding.span)
                    }
                    _ => continue,
                };
                let mut verification = |edits: &Vec<Edit>| {
                    d.fixes
                        .entry((edits.clone(), finding.span))
                        .or_insert_with(|| {
                            let job = VerifyJob {
                                uri: uri.clone(),
                                engine: self.engine.clone(),
                                tx: self.tx.clone(),
                                path: d.path.clone(),
                                options: options.clone(),
                                key: shown.key.clone(),
                                old: shown.report.clone(),
                                finding: finding.clone(),
                                edits: edits.clone(),
                                cancel: d.fix_cancel.clone(),
                            };
                            job.spawn(d.doc.text())
                        })
                        .clone()
                };
                for candidate in candidates {
                    if !seen.insert(candidate.edits.clone()) {
                        continue;
                    }
                    let mut verified = verification(&candidate.edits);
                    if candidate
                        .edits
                        .iter()
                        .any(|(_, _, t)| t.contains("__syncwarp"))
                    {
                        // The analysis proves that `__syncwarp()` orders the pair, but a warp
                        // barrier must also not sit in a thread-dependent branch: require that a
                        // block barrier at the same place adds no divergence either.
                        let twin: Vec<Edit> = candidate
                            .edits
                            .iter()
                            .map(|(a, b, t)| (*a, *b, t.replace("__syncwarp", "__syncthreads")))
                            .collect();
                        let (warp, block) = (verified, verification(&twin));
                        verified = async move { warp.await && block.await }.boxed().shared();
                    }
                    let code = NumberOrString::String(finding.kind.code().to_string());
                    let places: Vec<Range> = std::iter::once(finding.span)
                        .chain(finding.related.first().map(|r| r.span))
                        .map(|s| d.doc.range(s))
                        .collect();
                    let diagnostics: Vec<Diagnostic> = p
                        .context
                        .diagnostics
                        .iter()
                        .filter(|diag| {
                            diag.code.as_ref() == Some(&code) && places.contains(&diag.range)
                        })
                        .cloned()
                        .collect();
                    out.push(PendingAction {
                        action: fix_action(uri, &d.doc, &candidate, diagnostics),
                        verified,
                        preferable: true,
                    });
                }
            }
        }
        out.extend(allows);
        out
    }
}

/// The barrier as written (`__syncthreads()`, `grid.sync()`, …), or its usual name when the
/// text at its span is not a short one-line call.
fn barrier_source(text: &str, barrier: &Barrier) -> String {
    let written = text
        .get(barrier.span.start as usize..barrier.span.end as usize)
        .map(str::trim)
        .filter(|w| !w.is_empty() && w.len() <= 60 && !w.contains('\n') && !w.contains('`'));
    match (written, &barrier.kind) {
        (Some(w), _) => w.to_string(),
        (None, BarrierKind::Block) => "__syncthreads()".into(),
        (None, BarrierKind::Warp { .. }) => "__syncwarp()".into(),
        (None, BarrierKind::Grid) => "grid.sync()".into(),
    }
}

fn map_report(report: &mut KernelReport, edit: &ByteEdit) {
    crate::cache::map_report_spans(report, |s| edit.map_span(s));
}

fn cancel_job(d: &mut DocState) {
    if let Some(job) = d.job.take() {
        job.cancel.cancel();
        if let Some(end) = job.progress_end {
            let _ = end.send(());
        }
        d.total.cancelled_checks += 1;
    }
}

fn stats_of(
    uri: &Uri,
    d: &DocState,
    engine: &Engine,
    projects: &Projects,
    headers: &cudarace_syntax::HeaderCache,
) -> DocumentStats {
    DocumentStats {
        uri: uri.as_str().to_string(),
        version: d.doc.version,
        checked_version: d.checked_version,
        complete: d.checked_version == Some(d.doc.version) && d.job.is_none(),
        last: d.last,
        total: d.total,
        publish_count: d.publish_count,
        server_queries_submitted: engine.inflight.submitted(),
        server_index_builds: projects.builds(),
        server_index_unit_reads: projects.unit_reads(),
        server_header_reads: headers.reads(),
        server_header_parses: headers.parses(),
    }
}

/// A configuration error as a diagnostic on the configuration file.
fn config_error_diagnostic(e: &ConfigError) -> Diagnostic {
    let range = match &e.span {
        Some(span) => LineIndex16::new(&e.text).range(&e.text, span.start, span.end),
        None => Range::default(),
    };
    // A library file named by the configuration reports its own name.
    let file = e
        .path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| CONFIG_FILE_NAME.to_string());
    let mut message = format!("invalid {file}: {}", e.message);
    if let Some(help) = &e.help {
        message.push_str(&format!(" ({help})"));
    }
    Diagnostic {
        range,
        severity: Some(DiagnosticSeverity::ERROR),
        code: Some(NumberOrString::String("config".into())),
        source: Some(crate::diagnostics::SOURCE.to_string()),
        message,
        ..Default::default()
    }
}
