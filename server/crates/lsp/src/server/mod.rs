//! The `LanguageServer` implementation and the main loop.
//!
//! Every handler forwards its message to one main-loop task that owns all state, so state
//! changes happen in message order on one task; requests get their answer back over a oneshot
//! channel. Checks run on blocking threads ([`crate::scheduler`]) and report back to the main
//! loop as messages; nothing on the main loop waits on a solver.
//!
//! The main loop's work is split by idea: [`config`] (initialization, settings and
//! `cudarace.toml`), [`checks`] (documents, check jobs, publishing) and [`requests`] (hover,
//! code actions).

mod checks;
mod config;
mod requests;

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
use crate::siblings::SiblingIndexes;
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
    siblings: SiblingIndexes,
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
            siblings: SiblingIndexes::default(),
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
                    self.siblings.saved(&path, &spawn);
                }
            }
            Msg::Project(ProjectEvent::SiblingsRead {
                path,
                generation,
                index,
            }) => {
                let spawn = self.project_spawner();
                if self.siblings.finished(&path, generation, index, &spawn) {
                    let uris: Vec<Uri> = self
                        .docs
                        .iter()
                        .filter(|(_, d)| d.project.is_none() && d.path.as_deref() == Some(&*path))
                        .map(|(u, _)| u.clone())
                        .collect();
                    for uri in uris {
                        self.start_job(&uri).await;
                    }
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
                        stats_of(
                            &uri,
                            d,
                            &self.engine,
                            &self.projects,
                            &self.siblings,
                            &self.headers,
                        ),
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
    siblings: &SiblingIndexes,
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
        server_sibling_reads: siblings.reads(),
        server_header_reads: headers.reads(),
        server_header_parses: headers.parses(),
    }
}
