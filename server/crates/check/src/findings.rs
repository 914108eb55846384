//! Answers → findings and the kernel's verdict: each racy pair's witness read back into the
//! two threads and the cell they meet on, its confidence and condition, each divergent
//! barrier's two threads, the questions left undecided, and the verdict (see the crate's
//! comment for the order of verdicts).

use super::*;

fn thread_text(t: &ThreadWitness, with_block: bool) -> String {
    let [x, y, z] = t.thread_idx;
    if with_block {
        let [bx, by, bz] = t.block_idx;
        format!("thread ({x},{y},{z}) of block ({bx},{by},{bz})")
    } else {
        format!("thread ({x},{y},{z})")
    }
}

fn verb(mode: AccessMode) -> &'static str {
    match mode {
        AccessMode::Read => "reads",
        AccessMode::Write => "writes",
        AccessMode::Atomic => "atomically updates",
    }
}

fn cell_text(array: &str, w: &Witness) -> String {
    let mut s = array.to_string();
    for c in &w.cell {
        s.push_str(&format!("[{c}]"));
    }
    s
}

fn confidence(reasons: &[String], may_sync: &Option<String>) -> (Confidence, String) {
    let mut why: Vec<String> = reasons.to_vec();
    if let Some(n) = may_sync {
        why.push(n.clone());
    }
    if why.is_empty() {
        (
            Confidence::Definite,
            "the witness depends on no unknown value".into(),
        )
    } else {
        (
            Confidence::Possible,
            format!("the witness depends on {}", why.join("; ")),
        )
    }
}

/// The witness's two threads are in different blocks.
fn cross_block(model: &BTreeMap<String, i64>) -> bool {
    let w = witness::extract(model, 0);
    w.thread_a.block_idx != w.thread_b.block_idx
}

fn race_finding(
    kernel: &str,
    item: &Item,
    model: &BTreeMap<String, i64>,
    may_sync: &Option<String>,
) -> Option<Finding> {
    let Item::Race {
        array,
        a,
        b,
        reasons,
        structural,
        unknowns,
        cells,
        loops,
        same_value,
        assumed,
        preconditions,
        shape_params,
        warp_synchronous,
        may_sync: call_note,
        launch,
    } = item
    else {
        return None;
    };
    let chosen_at = cells
        .iter()
        .position(|(d, _)| witness::eval_bool(d, model) == Some(true))
        .or((!cells.is_empty()).then_some(0));
    let chosen = chosen_at.and_then(|i| cells.get(i));
    // The witness needs no unknown value when its way of meeting holds whatever they are (an
    // unknown only on a branch the witness does not take, e.g. an index table's "no thread
    // wrote this slot").
    let independent = chosen.is_some_and(|(d, _)| witness::holds_for_any(d, model, unknowns));
    let mut reasons: Vec<String> = if independent { vec![] } else { reasons.clone() };
    reasons.extend(structural.iter().cloned());
    // A launch-site binding the query left out (`hs = m * n` without `m`) may rule the
    // witness out: unless it fits a site, the race is only possible.
    match launch.as_ref().map(|l| l.witness_fits_a_site(model)) {
        Some(Some(false)) => reasons.push("values no launch site of the file passes".into()),
        Some(None) => reasons.push(
            "values not checked against the launch sites' arguments (a relation to a parameter the race does not name)"
                .into(),
        ),
        _ => {}
    }
    // Loop variables only from the way the pair meets (other disjuncts' variables are
    // unconstrained in the model and would show values outside their loops).
    let mut in_disjunct = std::collections::BTreeSet::new();
    if let Some((d, _)) = chosen {
        terms::collect_vars(d, &mut in_disjunct);
    }
    let shown: BTreeMap<String, i64> = model
        .iter()
        .filter(|(n, _)| chosen.is_none() || !n.contains("loop.") || in_disjunct.contains(*n))
        .map(|(n, v)| (n.clone(), *v))
        .collect();
    let mut w = witness::extract(&shown, 0);
    // A counter whose value at a thread's access is not its variable's (the first iteration,
    // the next one across the loop's last barrier): the value at the access.
    for (th, var, value) in chosen_at.and_then(|i| loops.get(i)).into_iter().flatten() {
        let (Term::Var(name), Some(v)) = (var, witness::eval_int(value, model)) else {
            continue;
        };
        // Only counters the witness shows (the way the pair meets names them).
        let Some(key) = witness::loop_key(name).filter(|k| {
            w.thread_a.loop_vars.contains_key(k) || w.thread_b.loop_vars.contains_key(k)
        }) else {
            continue;
        };
        let thread = if *th == 'A' {
            &mut w.thread_a
        } else {
            &mut w.thread_b
        };
        thread.loop_vars.insert(key, v);
    }
    w.cell = chosen
        .map(|(_, c)| {
            c.iter()
                .map(|t| witness::eval_int(t, model).unwrap_or(0))
                .collect()
        })
        .unwrap_or_default();
    let cross = w.thread_a.block_idx != w.thread_b.block_idx;
    let cell = cell_text(array, &w);
    let ta = thread_text(&w.thread_a, cross);
    let tb = thread_text(&w.thread_b, cross);
    let mut message = format!(
        "data race on `{array}`: {ta} {} {cell} while {tb} {} {cell}",
        verb(a.mode),
        verb(b.mode)
    );
    if cross {
        message.push_str("; the threads are in different blocks, which no __syncthreads() orders");
    } else {
        message.push_str(" in the same barrier interval");
    }
    if let Some(v) = same_value {
        message.push_str(&format!(
            " (both store the same value {v}; still a race in the CUDA memory model)"
        ));
    }
    if *warp_synchronous && !cross && same_warp(&w) {
        message.push_str(
            "; warp-synchronous code: racy since Volta's independent thread scheduling (order the warp with __syncwarp())",
        );
    }
    // A call may hold a `__syncthreads()`, which orders nothing between blocks.
    let may_sync = match (may_sync, call_note) {
        (Some(n), _) => Some(n.clone()),
        (None, Some(n)) if !cross => Some(n.clone()),
        _ => None,
    };
    let (mut confidence, mut confidence_reason) = confidence(&reasons, &may_sync);
    // The solver returns a witness that breaks an assumption only when none keeps them all.
    // An assumption the witness's values cannot evaluate (a sum past 64 bits: an offset of
    // 2^63 - 1) is not shown to hold, and counts as broken: such a witness is never definite.
    let broken: Vec<String> = assumed
        .iter()
        .filter(|(t, _)| witness::eval_bool(t, model) != Some(true))
        .map(|(_, b)| b.describe(model))
        .fold(Vec::new(), |mut out, d| {
            // Two assumptions may say the same (`padw >= 0` as a size and as a digit).
            if !out.contains(&d) {
                out.push(d);
            }
            out
        });
    let condition = (!broken.is_empty()).then(|| format!("only if {}", broken.join(" and ")));
    if let Some(c) = &condition {
        confidence_reason = match confidence {
            Confidence::Definite => format!("the race needs values a caller would not pass: {c}"),
            _ => format!("the race needs values a caller would not pass: {c}; {confidence_reason}"),
        };
        confidence = Confidence::Conditional;
        message.push_str(&format!(" ({c})"));
    }
    let precondition = model
        .get(cudarace_solver::PRECONDITION_KEY)
        .and_then(|i| preconditions.get(usize::try_from(*i).ok()?));
    // A kernel launched elsewhere (another file, Python) is launched in the shape its race-free
    // precondition names when that ties a parameter to the launch: the host sizes both from
    // the same values.
    let mut condition = condition;
    // Only for a shape parameter: `n == blockDim.x` for a mere bound `i < n` holds by
    // shrinking the data to one block, not by launching the kernel as it is written for.
    let on_shape = precondition.is_some_and(|p| shape_params.contains(&p.subject));
    if let (true, Confidence::Definite, Some(c)) = (
        on_shape,
        confidence,
        precondition.and_then(|p| p.unless_launch.as_ref()),
    ) {
        let c = format!("only if {c}");
        confidence = Confidence::Conditional;
        confidence_reason = format!(
            "the race needs a launch that does not fit the kernel's parameters, and the file never launches the kernel: {c}"
        );
        message.push_str(&format!(" ({c})"));
        condition = Some(c);
    }
    let precondition = precondition.map(|p| p.text.clone());
    if let Some(p) = &precondition {
        message.push_str(&format!("; race-free if {p}"));
    }
    Some(Finding {
        kind: FindingKind::DataRace,
        array: Some(array.clone()),
        confidence,
        confidence_reason,
        kernel: kernel.to_string(),
        span: a.span,
        message,
        related: vec![Related {
            span: b.span,
            message: format!("{tb} {} {cell} here", verb(b.mode)),
        }],
        witness: w,
        same_value_write: same_value.is_some(),
        barrier: None,
        condition,
        precondition,
    })
}

/// Both threads of a witness are in one warp (same block, same linear thread id / 32).
fn same_warp(w: &Witness) -> bool {
    let linear = |t: &ThreadWitness| {
        let [x, y, z] = t.thread_idx;
        x + y * w.block_dim[0] + z * w.block_dim[0] * w.block_dim[1]
    };
    w.thread_a.block_idx == w.thread_b.block_idx
        && linear(&w.thread_a) / 32 == linear(&w.thread_b) / 32
}

fn divergence_finding(kernel: &str, item: &Item, model: &BTreeMap<String, i64>) -> Option<Finding> {
    let Item::Divergence {
        span,
        also,
        kind,
        barrier,
        cause,
        reasons,
        question,
        unknowns,
        assumed,
    } = item
    else {
        return None;
    };
    let mut w = witness::extract(model, 0);
    w.cell.clear();
    // A grid sync is also asked about threads of different blocks: name the blocks then.
    let cross_block = w.thread_a.block_idx != w.thread_b.block_idx;
    let ta = thread_text(&w.thread_a, cross_block);
    let tb = thread_text(&w.thread_b, cross_block);
    let scope = match kind {
        SyncKind::Block => BarrierScope::Block,
        SyncKind::Warp => BarrierScope::Warp,
        SyncKind::Grid => BarrierScope::Grid,
    };
    let group = if scope == BarrierScope::Warp {
        "warp"
    } else {
        "block"
    };
    let this = match also.len() {
        0 => format!("this {barrier}"),
        1 => format!("this {barrier} (and the one after it on the same path)"),
        n => format!("this {barrier} (and the {n} after it on the same path)"),
    };
    let mut message = if cross_block {
        format!("barrier divergence: {ta} reaches {this} but {tb} does not")
    } else {
        format!("barrier divergence: {ta} reaches {this} but {tb} of the same {group} does not")
    };
    let related = match cause {
        Some((s, m)) => Related {
            span: *s,
            message: m.clone(),
        },
        None => Related {
            span: *span,
            message: if cross_block {
                "the path to this barrier depends on the block".into()
            } else {
                "the path to this barrier depends on the thread".into()
            },
        },
    };
    let mut related = vec![related];
    if !also.is_empty() {
        related.extend(also.iter().map(|s| Related {
            span: *s,
            message: format!("the same threads reach this {barrier} (the same path)"),
        }));
    }
    let reasons: &[String] = if witness::holds_for_any(question, model, unknowns) {
        &[]
    } else {
        reasons
    };
    let (mut confidence, mut confidence_reason) = confidence(reasons, &None);
    // The solver returns a witness that breaks an assumption only when none keeps them all
    // (one it cannot evaluate counts as broken, as for races).
    let broken: Vec<String> = assumed
        .iter()
        .filter(|(t, _)| witness::eval_bool(t, model) != Some(true))
        .map(|(_, b)| b.describe(model))
        .collect();
    let condition = (!broken.is_empty()).then(|| format!("only if {}", broken.join(" and ")));
    if let Some(c) = &condition {
        confidence_reason = match confidence {
            Confidence::Definite => {
                format!("the divergence needs a launch the kernel is not written for: {c}")
            }
            _ => format!(
                "the divergence needs a launch the kernel is not written for: {c}; {confidence_reason}"
            ),
        };
        confidence = Confidence::Conditional;
        message.push_str(&format!(" ({c})"));
    }
    Some(Finding {
        kind: FindingKind::BarrierDivergence,
        array: None,
        confidence,
        confidence_reason,
        kernel: kernel.to_string(),
        span: *span,
        message,
        related,
        witness: w,
        same_value_write: false,
        barrier: Some(scope),
        condition,
        precondition: None,
    })
}

/// [`describe_item`] for `n` items of the same kind and array ("3 pairs of accesses to `a`").
fn describe_items(item: &Item, n: usize) -> String {
    match (item, n) {
        (Item::Race { array, .. }, 1) => format!("a pair of accesses to `{array}`"),
        (Item::Race { array, .. }, n) => format!("{n} pairs of accesses to `{array}`"),
        (Item::Divergence { barrier, .. }, 1) => format!("the divergence of a {barrier}"),
        (Item::Divergence { barrier, .. }, n) => {
            format!("the divergence of {n} calls to {barrier}")
        }
    }
}

/// The undecided items of a kernel, one line per kind of item, array and reason, in the order
/// of their first item: a kernel of 600 pairs that ran out of time says so once, with the count,
/// not 600 times (the reason is shown in hovers and diagnostics).
fn undecided_notes(undecided: &[(&Item, Option<&str>)]) -> Vec<String> {
    let mut groups: Vec<(&Item, Option<&str>, usize)> = Vec::new();
    for &(item, reason) in undecided {
        let same = |(other, r, _): &&mut (&Item, Option<&str>, usize)| {
            *r == reason
                && match (item, other) {
                    (Item::Race { array: a, .. }, Item::Race { array: b, .. }) => a == b,
                    (Item::Divergence { barrier: a, .. }, Item::Divergence { barrier: b, .. }) => {
                        a == b
                    }
                    _ => false,
                }
        };
        match groups.iter_mut().find(same) {
            Some(g) => g.2 += 1,
            None => groups.push((item, reason, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(item, reason, n)| match reason {
            None => format!("no answer for {}", describe_items(item, n)),
            Some(r) => format!(
                "the solver could not decide {} ({r})",
                describe_items(item, n)
            ),
        })
        .collect()
}

/// Turn the answers (one per query, in order) into the kernel's report.
pub fn finish_kernel(plan: &KernelPlan, answers: Vec<Answer>, time_ms: f64) -> KernelReport {
    let meta = &plan.meta;
    let mut report = KernelReport {
        name: plan.kernel.clone(),
        span: meta.span,
        name_span: meta.name_span,
        verdict: Verdict::RaceFree,
        reason: None,
        findings: Vec::new(),
        assumed_launch: meta.assumed_launch.clone(),
        time_ms,
        queries: plan.queries.len(),
        unmodelled: meta.unmodelled.clone(),
    };
    if let Some(why) = &meta.unsupported {
        report.verdict = Verdict::Unsupported;
        report.reason = Some(why.clone());
        return report;
    }
    // Items without a verdict and the solver's reason (`None`: no answer at all).
    let mut undecided: Vec<(&Item, Option<&str>)> = Vec::new();
    // Races found, and among them those an unmodelled call between the accesses could prevent.
    let (mut races_found, mut preventable) = (0usize, 0usize);
    // Pairs left out after enough races on their array (see `race_cap`), per array.
    let capped = plan.capped(&answers);
    let mut left_out: Vec<(&str, usize)> = Vec::new();
    for (i, item) in meta.items.iter().enumerate() {
        if capped.get(i).copied().unwrap_or(false) {
            if let Item::Race { array, .. } = item {
                match left_out.iter_mut().find(|(a, _)| a == array) {
                    Some((_, n)) => *n += 1,
                    None => left_out.push((array, 1)),
                }
            }
            continue;
        }
        match answers.get(i) {
            Some(Answer::Sat(model)) => {
                if let Item::Race { may_sync, .. } = item {
                    races_found += 1;
                    preventable += usize::from(may_sync.is_some() && !cross_block(model));
                }
                let f = match item {
                    Item::Race { .. } => {
                        race_finding(&plan.kernel, item, model, &meta.may_sync_note)
                    }
                    Item::Divergence { .. } => divergence_finding(&plan.kernel, item, model),
                };
                report.findings.extend(f);
            }
            Some(Answer::Unsat) => {}
            Some(Answer::Unknown(r)) => undecided.push((item, Some(r.as_str()))),
            None => undecided.push((item, None)),
        }
    }
    let unknowns = undecided_notes(&undecided);
    let races = report
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::DataRace);
    let divergent = report
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::BarrierDivergence);
    let mut notes: Vec<String> = meta.launch_warning.iter().cloned().collect();
    notes.extend(meta.unknown_notes.iter().cloned());
    notes.extend(meta.library_notes.iter().cloned());
    notes.extend(meta.launch_notes.iter().cloned());
    if let Some(n) = &meta.may_sync_note {
        notes.push(n.clone());
    }
    notes.extend(unknowns.iter().cloned());
    let not_checked: Vec<String> = left_out
        .iter()
        .map(|(array, n)| {
            format!(
                "{} races on `{array}` were found first: its other {n} pair{} of accesses {} not checked",
                race_cap::MAX_RACES_PER_ARRAY,
                if *n == 1 { "" } else { "s" },
                if *n == 1 { "was" } else { "were" },
            )
        })
        .collect();
    notes.extend(not_checked.iter().cloned());
    let only_preventable = races_found > 0 && preventable == races_found;
    if races && only_preventable {
        notes.push(
            "every race found needs the unmodelled calls between its accesses to contain no barrier"
                .into(),
        );
    }
    report.verdict = if races && !only_preventable {
        Verdict::Racy
    } else if divergent {
        Verdict::Divergent
    } else if !unknowns.is_empty()
        || !not_checked.is_empty()
        || !meta.unknown_notes.is_empty()
        || meta.may_sync_note.is_some()
        || only_preventable
    {
        Verdict::Unknown
    } else {
        Verdict::RaceFree
    };
    if !notes.is_empty() {
        report.reason = Some(notes.join("; "));
    }
    report
}
