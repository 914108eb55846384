//! SARIF 2.1.0 output (`--format sarif`), shaped for GitHub code scanning: one run, rules
//! `data-race`, `barrier-divergence` and `unverified-kernel`, artifact URIs relative to a base
//! folder (the working directory), character columns (`columnKind: unicodeCodePoints`).

use super::{file_name, report_name, witness_lines, Positions, Range1};
use crate::config::Level;
use crate::report::FileReport;
use crate::suppress::Suppression;
use cudarace_ir::{FindingKind, Span, Verdict};
use serde_json::{json, Value};
use std::path::{Component, Path};

/// Where users learn about the tool (SARIF `informationUri`).
pub const INFORMATION_URI: &str = "https://github.com/cudarace/cudarace";

const RULE_RACE: usize = 0;
const RULE_DIVERGENCE: usize = 1;
const RULE_UNVERIFIED: usize = 2;

fn rules() -> Value {
    json!([
        {
            "id": "data-race",
            "name": "DataRace",
            "shortDescription": {"text": "Data race between threads of a CUDA kernel"},
            "fullDescription": {"text": "Two threads access the same memory cell, at least one of them writes, and no barrier both threads take part in orders the accesses. Atomic operations do not race with each other."},
            "help": {"text": "Separate the accesses with __syncthreads() (threads of one block), make them atomic, or change the indexing so that different threads use different cells. The witness in the result gives two threads and the cell they both touch."},
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": ["cuda", "concurrency", "correctness"], "precision": "high", "problem.severity": "error"}
        },
        {
            "id": "barrier-divergence",
            "name": "BarrierDivergence",
            "shortDescription": {"text": "__syncthreads() not reached by all threads of a block"},
            "fullDescription": {"text": "A block-wide barrier sits under a condition, loop bound or early exit that differs between threads of one block, so some threads may wait at it forever or the behaviour is undefined."},
            "help": {"text": "Make the condition uniform across the block (depend only on blockIdx, blockDim, gridDim, kernel parameters and constants), or move the barrier out of the thread-dependent code."},
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": ["cuda", "concurrency", "correctness"], "precision": "high", "problem.severity": "error"}
        },
        {
            "id": "unverified-kernel",
            "name": "UnverifiedKernel",
            "shortDescription": {"text": "Kernel could not be verified"},
            "fullDescription": {"text": "cudarace could not decide whether this kernel is race-free and convergent (a solver timeout, an unsupported construct, …). It is not known to be safe."},
            "help": {"text": "The result message gives the reason. Narrowing the launch configuration (--block-dim, --grid-dim) or raising --timeout-ms often helps."},
            "defaultConfiguration": {"level": "note"},
            "properties": {"tags": ["cuda"], "precision": "high", "problem.severity": "recommendation"}
        }
    ])
}

/// A SARIF `uri` for a displayed path: relative paths stay relative (with `/` separators),
/// absolute paths below `base` are made relative to it, other absolute paths become `file://` URIs.
fn artifact_uri(path: &str, base: Option<&Path>) -> String {
    let p = Path::new(path);
    let (relative, absolute) = if p.is_absolute() {
        match base.and_then(|b| p.strip_prefix(b).ok()) {
            Some(rel) => (Some(rel.to_path_buf()), None),
            None => (None, Some(p)),
        }
    } else {
        (Some(p.to_path_buf()), None)
    };
    let joined = |path: &Path| -> String {
        let parts: Vec<String> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(percent_encode(&s.to_string_lossy())),
                Component::ParentDir => Some("..".to_string()),
                _ => None,
            })
            .collect();
        parts.join("/")
    };
    match (relative, absolute) {
        (Some(rel), _) => joined(&rel),
        (None, Some(abs)) => format!("file:///{}", joined(abs)),
        (None, None) => percent_encode(path),
    }
}

/// Percent-encodes everything outside RFC 3986's unreserved characters (one path segment).
fn percent_encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn region(r: Range1) -> Value {
    json!({"startLine": r.line, "startColumn": r.column, "endLine": r.end_line, "endColumn": r.end_column})
}

fn physical(report: &FileReport, pos: &Positions, span: Span, base: Option<&Path>) -> Value {
    json!({
        "artifactLocation": {"uri": artifact_uri(&file_name(report, span.file), base)},
        "region": region(pos.range(span)),
    })
}

/// SARIF's level for a configured level (`off`: not reported).
fn sarif_level(level: Level) -> Option<&'static str> {
    match level {
        Level::Error => Some("error"),
        Level::Warning => Some("warning"),
        Level::Info => Some("note"),
        Level::Off => None,
    }
}

/// Renders all reports as one SARIF log. `base` is the folder artifact URIs are made relative to
/// (the working directory in the CLI).
pub fn sarif(reports: &[FileReport], base: Option<&Path>) -> Value {
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for report in reports {
        let pos = Positions::new(report);
        if let Some(error) = &report.error {
            notifications.push(json!({
                "level": "error",
                "message": {"text": format!("{}: {}", report_name(report), error)},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(&report_name(report), base)}}}],
            }));
        }
        for (k, kernel) in report.kernels.iter().enumerate() {
            for (f, finding) in kernel.findings.iter().enumerate() {
                let Some(level) = sarif_level(report.level(finding)) else {
                    continue;
                };
                let (rule, is_race) = match finding.kind {
                    FindingKind::DataRace => (RULE_RACE, true),
                    FindingKind::BarrierDivergence => (RULE_DIVERGENCE, false),
                };
                let related: Vec<Value> = finding
                    .related
                    .iter()
                    .enumerate()
                    .map(|(i, rel)| {
                        json!({
                            "id": i + 1,
                            "physicalLocation": physical(report, &pos, rel.span, base),
                            "message": {"text": rel.message},
                        })
                    })
                    .collect();
                let mut text = finding.message.clone();
                text.push_str(&format!(
                    " ({}: {})",
                    finding.confidence.as_str(),
                    finding.confidence_reason
                ));
                let witness = witness_lines(&finding.witness, finding.array.as_deref(), is_race);
                text.push_str(&format!(" Witness: {}.", witness.join("; ")));
                // SARIF's own way to keep a judged finding visible but not counted.
                let suppressions: Vec<Value> = report
                    .suppression(k, f)
                    .map(|s| {
                        let kind = match s {
                            Suppression::Comment { .. } => "inSource",
                            Suppression::SameValueWrite => "external",
                        };
                        let mut v = json!({"kind": kind, "status": "accepted"});
                        if let Some(reason) = s.reason() {
                            v["justification"] = json!(reason);
                        }
                        v
                    })
                    .into_iter()
                    .collect();
                let mut result = json!({
                    "ruleId": finding.kind.code(),
                    "ruleIndex": rule,
                    "level": level,
                    "message": {"text": text},
                    "locations": [{
                        "physicalLocation": physical(report, &pos, finding.span, base),
                        "logicalLocations": [{"name": finding.kernel, "kind": "function"}],
                    }],
                    "relatedLocations": related,
                    "properties": {
                        "kernel": finding.kernel,
                        "array": finding.array,
                        "confidence": finding.confidence,
                        "confidenceReason": finding.confidence_reason,
                        "sameValueWrite": finding.same_value_write,
                        "witness": finding.witness,
                    },
                });
                if let Some(c) = &finding.condition {
                    result["properties"]["condition"] = Value::String(c.clone());
                }
                if let Some(p) = &finding.precondition {
                    result["properties"]["precondition"] = Value::String(p.clone());
                }
                if !suppressions.is_empty() {
                    result["suppressions"] = Value::Array(suppressions);
                }
                results.push(result);
            }
            // A note unless the configuration says otherwise (as before levels were configurable).
            let unverified = match report.config.severity.unverified {
                None => Some("note"),
                Some(level) => sarif_level(level),
            };
            if let (Some(level), true) = (
                unverified,
                matches!(kernel.verdict, Verdict::Unknown | Verdict::Unsupported),
            ) {
                let reason = kernel.reason.as_deref().unwrap_or("no reason given");
                let mut result = json!({
                    "ruleId": "unverified-kernel",
                    "ruleIndex": RULE_UNVERIFIED,
                    "level": level,
                    "message": {"text": format!("kernel `{}` is {}: {}", kernel.name, kernel.verdict.as_str(), reason)},
                    "locations": [{
                        "physicalLocation": physical(report, &pos, kernel.name_span, base),
                        "logicalLocations": [{"name": kernel.name, "kind": "function"}],
                    }],
                    "properties": {"kernel": kernel.name, "verdict": kernel.verdict.as_str()},
                });
                // Where the check stopped modelling the code.
                if !kernel.unmodelled.is_empty() {
                    let places: Vec<Value> = kernel
                        .unmodelled
                        .iter()
                        .enumerate()
                        .map(|(i, u)| {
                            json!({
                                "id": i,
                                "physicalLocation": physical(report, &pos, u.span, base),
                                "message": {"text": format!("unmodelled: {}", u.what)},
                            })
                        })
                        .collect();
                    result["relatedLocations"] = Value::Array(places);
                }
                results.push(result);
            }
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cudarace",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "informationUri": INFORMATION_URI,
                "rules": rules(),
            }},
            "columnKind": "unicodeCodePoints",
            "invocations": [{
                // "Successful" means the tool ran to completion; unreadable files are reported
                // as notifications, not as a failed run.
                "executionSuccessful": true,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testdata;

    #[test]
    fn sarif_of_hand_made_reports() {
        insta::assert_json_snapshot!(sarif(&testdata::all(), Some(Path::new("/work"))));
    }

    #[test]
    fn sarif_result_points_at_the_access() {
        let v = sarif(&[testdata::racy_file()], None);
        let result = &v["runs"][0]["results"][0];
        assert_eq!(result["ruleId"], "data-race");
        assert_eq!(result["level"], "error");
        let loc = &result["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "kernels/reduce.cu");
        assert_eq!(loc["region"]["startLine"], 6);
        assert_eq!(loc["region"]["startColumn"], 5);
        assert_eq!(
            result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"],
            5
        );
        // Possible findings are warnings.
        assert_eq!(v["runs"][0]["results"][1]["level"], "warning");
        // Every ruleIndex points at the rule with that id.
        let rules = &v["runs"][0]["tool"]["driver"]["rules"];
        for r in v["runs"][0]["results"].as_array().unwrap() {
            let i = r["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[i]["id"], r["ruleId"]);
        }
    }

    #[test]
    fn suppressed_results_carry_a_suppression_and_levels_follow_the_config() {
        let mut r = testdata::racy_file();
        r.suppressed = vec![vec![
            Some(Suppression::Comment {
                span: testdata::span_of(testdata::KERNEL_TEXT, "// é", 0),
                reason: Some("benign".into()),
            }),
            None,
        ]];
        r.config = std::sync::Arc::new(
            crate::Config::parse(
                Path::new("cudarace.toml"),
                "[severity]\nbarrier-divergence = \"off\"\nunverified = \"error\"\n",
            )
            .unwrap(),
        );
        let v = sarif(&[r, testdata::unknown_file()], None);
        let results = v["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results[0]["suppressions"][0]["kind"], "inSource");
        assert_eq!(results[0]["suppressions"][0]["justification"], "benign");
        // The divergence is off; the unknown kernel of the other file keeps the default note.
        assert!(results.iter().all(|r| r["ruleId"] != "barrier-divergence"));
        assert_eq!(results.last().unwrap()["level"], "note");
    }

    #[test]
    fn uris_are_relative_to_the_base() {
        let base = Path::new("/repo");
        assert_eq!(artifact_uri("/repo/src/a b.cu", Some(base)), "src/a%20b.cu");
        assert_eq!(artifact_uri("./src/k.cu", Some(base)), "src/k.cu");
        assert_eq!(
            artifact_uri("/elsewhere/k.cu", Some(base)),
            "file:///elsewhere/k.cu"
        );
        assert_eq!(artifact_uri("../k.cu", Some(base)), "../k.cu");
    }

    #[test]
    fn unverified_kernels_and_file_errors_are_visible() {
        let v = sarif(&testdata::all(), None);
        let results = v["runs"][0]["results"].as_array().unwrap();
        assert!(results.iter().any(|r| r["ruleId"] == "unverified-kernel"));
        let notes = &v["runs"][0]["invocations"][0]["toolExecutionNotifications"];
        assert_eq!(notes.as_array().unwrap().len(), 1);
    }
}
