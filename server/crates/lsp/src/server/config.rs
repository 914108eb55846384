//! Initialization, client settings and `cudarace.toml`: which configuration a document gets,
//! and the diagnostics on a configuration file that cannot be used.

use super::*;

impl State {
    /// The configuration of a document: the `cudarace.toml` in its folder or the nearest one
    /// above, else the workspace root's. A file that cannot be used is reported on itself and
    /// the defaults apply.
    pub(super) fn config_for(&mut self, path: Option<&Path>) -> Arc<Config> {
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

    pub(super) async fn publish_config_diagnostics(&mut self) {
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
    pub(super) async fn did_change_watched_files(&mut self, params: DidChangeWatchedFilesParams) {
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
        self.siblings.clear();
        let uris: Vec<Uri> = self.docs.keys().cloned().collect();
        for uri in uris {
            self.start_job(&uri).await;
        }
    }

    pub(super) fn initialize(&mut self, params: InitializeParams) -> InitializeResult {
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
    pub(super) fn register_config_watcher(&self) {
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
    pub(super) fn apply_settings(&mut self, value: &Value) -> bool {
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
                    self.siblings.clear();
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

    pub(super) async fn did_change_configuration(&mut self, value: Value) {
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
}

/// A configuration error as a diagnostic on the configuration file.
pub(super) fn config_error_diagnostic(e: &ConfigError) -> Diagnostic {
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
