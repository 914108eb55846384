//! Documents and their checks: opening and editing, starting and cancelling a check job,
//! taking its events as they come, progress, and publishing diagnostics.

use super::*;

impl State {
    pub(super) async fn did_open(&mut self, p: DidOpenTextDocumentParams) {
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

    pub(super) async fn did_change(&mut self, p: DidChangeTextDocumentParams) {
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
    /// call starts building it in the background; see [`crate::project`]); without a database,
    /// the launch sites of the files beside it once read ([`crate::siblings`]). Also returns
    /// the database's path.
    pub(super) fn options_for(
        &mut self,
        path: Option<&Path>,
        config: &Arc<Config>,
    ) -> (Options, Option<PathBuf>) {
        let mut options = self.settings.options_for(path, config, &mut self.databases);
        options.frontend.headers = Some(self.headers.clone());
        let explicit = self.settings.compile_commands.clone();
        let Some(db) = path.and_then(|p| self.databases.database(explicit.as_deref(), config, p))
        else {
            // No database: the launch sites of the `.cu` files beside it, as on the command line.
            if let Some(path) = path {
                let spawn = self.project_spawner();
                options.launch_index = self.siblings.index_for(path, &options, &spawn);
            }
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
    pub(super) fn project_spawner(&self) -> impl Fn(Box<dyn FnOnce() -> ProjectEvent + Send>) {
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

    pub(super) async fn start_job(&mut self, uri: &Uri) {
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
    pub(super) async fn refuse_too_large(&mut self, uri: &Uri, size: u64, limit: u64) {
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

    pub(super) async fn job_event(&mut self, uri: Uri, generation: u64, event: JobEvent) {
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

    pub(super) fn progress_due(&mut self, uri: Uri, generation: u64) {
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
    pub(super) async fn publish(&mut self, uri: &Uri, last: bool) {
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
}
