//! Requests about what is shown: hover (findings, kernels, barriers) and code actions
//! (fixes verified in the background, preconditions, allow comments).

use super::*;

impl State {
    pub(super) fn hover(&self, p: &TextDocumentPositionParams) -> Option<Hover> {
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
                let line_of = |u: Span| (u.file.0 == 0).then(|| d.doc.range(u).start.line + 1);
                return Some(markdown(
                    kernel_markdown(&s.report, &line_of),
                    s.report.name_span,
                ));
            }
        }
        self.barrier_hover(d, offset)
    }

    /// Hover on a barrier without a finding (findings and kernel names are hovered first):
    /// what each kernel it belongs to established about it. Only for barriers of the current
    /// text; a kernel whose check of the current text is not finished claims nothing.
    pub(super) fn barrier_hover(&self, d: &DocState, offset: u32) -> Option<Hover> {
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

    pub(super) fn code_action(&mut self, p: &CodeActionParams) -> Vec<PendingAction> {
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
pub(super) fn barrier_source(text: &str, barrier: &Barrier) -> String {
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
