//! The `LanguageServer` implementation and the main loop.
//!
//! Every handler forwards its message to one main-loop task that owns all state, so state
//! changes happen in message order on one task; requests get their answer back over a oneshot
//! channel. Checks run on blocking threads ([`crate::scheduler`]) and report back to the main
//! loop as messages; nothing on the main loop waits on a solver.

use crate::code_action::{
    divergence_fix_candidates, fix_action, race_fix_candidates, same_warp, Edit, Verification,
    VerifyJob,
};
use crate::diagnostics::{kernel_diagnostics, SpanResolver};
use crate::document::{is_cuda, ByteEdit, Document};
use crate::hover::{finding_markdown, kernel_markdown};
use crate::pipeline::CancelToken;
use crate::scheduler::{run_check, CheckEvent, CheckInput, CheckTotals, Engine};
use crate::settings::Settings;
use crate::stats::{DocumentStats, RunningTotals, StatsParams};
use cudarace_ir::{FindingKind, KernelReport, SourceFile, Span};
use futures::future::FutureExt;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
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
}

pub(crate) enum Msg {
    Initialize(Box<InitializeParams>, oneshot::Sender<InitializeResult>),
    Initialized,
    DidOpen(DidOpenTextDocumentParams),
    DidChange(DidChangeTextDocumentParams),
    DidClose(DidCloseTextDocumentParams),
    DidChangeConfiguration(Value),
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

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.send(Msg::DidChangeConfiguration(params.settings));
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.ask(|tx| Msg::Hover(params.text_document_position_params, tx))
            .await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let pending = self.ask(|tx| Msg::CodeAction(Box::new(params), tx)).await?;
        let mut out = Vec::new();
        // Verification runs in the background; a cancelled request just stops waiting here.
        for p in pending {
            if p.verified.await {
                out.push(CodeActionOrCommand::CodeAction(p.action));
            }
        }
        if let Some(CodeActionOrCommand::CodeAction(first)) = out.first_mut() {
            first.is_preferred = Some(true);
        }
        Ok(Some(out))
    }
}

/// What the editor shows for one kernel: its latest report, with spans in the current text.
struct Shown {
    key: String,
    report: KernelReport,
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
        }
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        while let Some(msg) = rx.recv().await {
            self.handle(msg).await;
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
            }
            Msg::DidOpen(p) => self.did_open(p),
            Msg::DidChange(p) => self.did_change(p),
            Msg::DidClose(p) => {
                if let Some(mut d) = self.docs.remove(&p.text_document.uri) {
                    cancel_job(&mut d);
                    d.fix_cancel.cancel();
                    self.client
                        .publish_diagnostics(p.text_document.uri, vec![], None)
                        .await;
                }
            }
            Msg::DidChangeConfiguration(value) => self.did_change_configuration(value).await,
            Msg::Hover(p, reply) => {
                let _ = reply.send(self.hover(&p));
            }
            Msg::CodeAction(p, reply) => {
                let _ = reply.send(self.code_action(&p));
            }
            Msg::Stats(uri, reply) => {
                let _ = reply.send(self.docs.get(&uri).map(|d| {
                    (
                        stats_of(&uri, d, &self.engine),
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
        InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(PositionEncodingKind::UTF16),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
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

    /// Returns whether the settings changed.
    fn apply_settings(&mut self, value: &Value) -> bool {
        match Settings::from_json(value) {
            Ok(settings) => {
                if let Some(level) = &settings.log_level {
                    crate::set_log_level(level);
                }
                self.engine.set_workers(settings.worker_count());
                let changed = settings != self.settings;
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
            self.start_job(&uri);
        }
    }

    fn did_open(&mut self, p: DidOpenTextDocumentParams) {
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
        };
        if let Some(mut old) = self.docs.insert(item.uri.clone(), state) {
            cancel_job(&mut old);
        }
        self.start_job(&item.uri);
    }

    fn did_change(&mut self, p: DidChangeTextDocumentParams) {
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
        self.start_job(&uri);
    }

    fn start_job(&mut self, uri: &Uri) {
        let Some(d) = self.docs.get_mut(uri) else {
            return;
        };
        cancel_job(d);
        self.next_generation += 1;
        let generation = self.next_generation;
        let cancel = CancelToken::new();
        let input = CheckInput {
            path: d.path.clone(),
            text: d.doc.snapshot(),
            tree: d.doc.tree().clone(),
            options: self.settings.options(),
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

    async fn job_event(&mut self, uri: Uri, generation: u64, event: JobEvent) {
        let Some(d) = self.docs.get_mut(&uri) else {
            return;
        };
        if d.job.as_ref().map(|j| j.generation) != Some(generation) {
            return; // a superseded job
        }
        match event {
            JobEvent::Check(CheckEvent::Lowered { kernels, files }) => {
                let mut old: HashMap<String, Shown> =
                    d.shown.drain(..).map(|s| (s.key.clone(), s)).collect();
                d.shown = kernels
                    .into_iter()
                    .filter_map(|k| match k.cached {
                        Some(report) => Some(Shown { key: k.key, report }),
                        // Not finished yet: keep the previous result (no flicker to empty).
                        None => old.remove(&k.key),
                    })
                    .collect();
                d.files = files;
                self.publish(&uri, false).await;
            }
            JobEvent::Check(CheckEvent::Kernel { key, report }) => {
                match d.shown.iter_mut().find(|s| s.key == key) {
                    Some(s) => s.report = report,
                    None => d.shown.push(Shown { key, report }),
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
        let diagnostics: Vec<Diagnostic> = d
            .shown
            .iter()
            .flat_map(|s| kernel_diagnostics(&s.report, &resolver, &self.settings))
            .collect();
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
        None
    }

    fn code_action(&mut self, p: &CodeActionParams) -> Vec<PendingAction> {
        let uri = &p.text_document.uri;
        let Some(d) = self.docs.get_mut(uri) else {
            return vec![];
        };
        let start = d.doc.offset(p.range.start) as u32;
        let end = d.doc.offset(p.range.end) as u32;
        let touches = |s: Span| s.file.0 == 0 && s.start <= end && start <= s.end;
        let options = self.settings.options();
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for shown in &d.shown {
            for finding in &shown.report.findings {
                let candidates = match (finding.kind, finding.related.first()) {
                    (FindingKind::DataRace, Some(other))
                        if touches(finding.span) || touches(other.span) =>
                    {
                        race_fix_candidates(
                            d.doc.text(),
                            d.doc.tree(),
                            finding.span,
                            other.span,
                            same_warp(&finding.witness),
                        )
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
                    });
                }
            }
        }
        out
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

fn stats_of(uri: &Uri, d: &DocState, engine: &Engine) -> DocumentStats {
    DocumentStats {
        uri: uri.as_str().to_string(),
        version: d.doc.version,
        checked_version: d.checked_version,
        complete: d.checked_version == Some(d.doc.version) && d.job.is_none(),
        last: d.last,
        total: d.total,
        publish_count: d.publish_count,
        server_queries_submitted: engine.inflight.submitted(),
    }
}
