//! The JSON output (`--format json`), version [`JSON_VERSION`].
//!
//! Shape (fields may be added in later releases of the same version; none are renamed or removed):
//! ```text
//! {"version": 1,
//!  "tool": {"name", "version"},
//!  "kernels": [{"file", "name", "line", "column", "verdict", "reason"?, "assumed_launch",
//!               "time_ms", "queries", "findings",
//!               "unmodelled"? [{"file", "line", "column", "what"}] (where the check stopped
//!               modelling the code: the first place of each kind that made an array unknown)}],
//!  "findings": [{"kind", "array"?, "confidence" ("definite"|"possible"|"conditional"), "confidence_reason", "file", "kernel",
//!                "line", "column", "end_line", "end_column", "message", "same_value_write", "same_value",
//!                "barrier"? ("block"|"warp"|"grid", divergence only),
//!                "condition"? (confidence "conditional" only: "only if ldc < 1"),
//!                "precondition"? (races: a relation under which the race is gone: "m >= gridDim.x"),
//!                "severity" ("error"|"warning"|"info"|"off"), "suppressed",
//!                "suppression"? {"by": "comment"|"config", "file"?, "line"?, "reason"?},
//!                "related": [{"file", "line", "column", "end_line", "end_column", "message"}],
//!                "witness": {"thread_a": {"threadIdx", "blockIdx", "loop_vars"}, "thread_b": …,
//!                            "cell", "params", "blockDim", "gridDim"}}],
//!  "files": [{"file", "error"?, "syntax_errors": [{"line", "column", "end_line", "end_column", "message"}],
//!             "notices": [{"code", "severity", "file", "line", "column", "end_line", "end_column", "message"}],
//!             "config"?}],
//!  "summary": {"files", "file_errors", "kernels", "race_free", "racy", "divergent", "unknown",
//!              "unsupported", "findings" (not suppressed), "suppressed", "notices", "syntax_errors"}}
//! ```
//! Lines and columns are 1-based; columns count characters; ends are exclusive.

use super::{file_name, report_name, Positions};
use crate::report::{FileReport, Summary};
use crate::suppress::Suppression;
use serde_json::{json, Map, Value};

pub const JSON_VERSION: u32 = 1;

pub fn json(reports: &[FileReport]) -> Value {
    let mut kernels = Vec::new();
    let mut findings = Vec::new();
    let mut files = Vec::new();
    for report in reports {
        let pos = Positions::new(report);
        let mut file = Map::new();
        file.insert("file".into(), json!(report_name(report)));
        if let Some(error) = &report.error {
            file.insert("error".into(), json!(error));
        }
        let syntax_errors: Vec<Value> = report
            .syntax_errors
            .iter()
            .map(|e| {
                let r = pos.range(e.span);
                json!({
                    "file": file_name(report, e.span.file),
                    "line": r.line, "column": r.column,
                    "end_line": r.end_line, "end_column": r.end_column,
                    "message": e.message,
                })
            })
            .collect();
        file.insert("syntax_errors".into(), Value::Array(syntax_errors));
        files.push(Value::Object(file));

        let notices: Vec<Value> = report
            .notices
            .iter()
            .map(|n| {
                let r = pos.range(n.span);
                json!({
                    "code": n.code,
                    "severity": report.notice_level().as_str(),
                    "file": file_name(report, n.span.file),
                    "line": r.line, "column": r.column,
                    "end_line": r.end_line, "end_column": r.end_column,
                    "message": n.message,
                })
            })
            .collect();
        if let Some(Value::Object(file)) = files.last_mut() {
            file.insert("notices".into(), Value::Array(notices));
            if let Some(config) = &report.config.path {
                file.insert("config".into(), json!(config.display().to_string()));
            }
        }

        for (k, kernel) in report.kernels.iter().enumerate() {
            let r = pos.range(kernel.name_span);
            let mut kj = Map::new();
            kj.insert(
                "file".into(),
                json!(file_name(report, kernel.name_span.file)),
            );
            kj.insert("name".into(), json!(kernel.name));
            kj.insert("line".into(), json!(r.line));
            kj.insert("column".into(), json!(r.column));
            kj.insert("verdict".into(), json!(kernel.verdict.as_str()));
            if let Some(reason) = &kernel.reason {
                kj.insert("reason".into(), json!(reason));
            }
            kj.insert("assumed_launch".into(), json!(kernel.assumed_launch));
            // Microsecond precision is plenty and keeps the output readable.
            kj.insert(
                "time_ms".into(),
                json!((kernel.time_ms * 1000.0).round() / 1000.0),
            );
            kj.insert("queries".into(), json!(kernel.queries));
            kj.insert("findings".into(), json!(kernel.findings.len()));
            if !kernel.unmodelled.is_empty() {
                let places: Vec<Value> = kernel
                    .unmodelled
                    .iter()
                    .map(|u| {
                        let ur = pos.range(u.span);
                        json!({
                            "file": file_name(report, u.span.file),
                            "line": ur.line, "column": ur.column,
                            "what": u.what,
                        })
                    })
                    .collect();
                kj.insert("unmodelled".into(), Value::Array(places));
            }
            kernels.push(Value::Object(kj));

            for (fi, finding) in kernel.findings.iter().enumerate() {
                let r = pos.range(finding.span);
                let related: Vec<Value> = finding
                    .related
                    .iter()
                    .map(|rel| {
                        let rr = pos.range(rel.span);
                        json!({
                            "file": file_name(report, rel.span.file),
                            "line": rr.line, "column": rr.column,
                            "end_line": rr.end_line, "end_column": rr.end_column,
                            "message": rel.message,
                        })
                    })
                    .collect();
                let mut f = Map::new();
                f.insert("kind".into(), json!(finding.kind.code()));
                if let Some(array) = &finding.array {
                    f.insert("array".into(), json!(array));
                }
                f.insert("confidence".into(), json!(finding.confidence));
                f.insert("confidence_reason".into(), json!(finding.confidence_reason));
                f.insert("file".into(), json!(file_name(report, finding.span.file)));
                f.insert("kernel".into(), json!(finding.kernel));
                f.insert("line".into(), json!(r.line));
                f.insert("column".into(), json!(r.column));
                f.insert("end_line".into(), json!(r.end_line));
                f.insert("end_column".into(), json!(r.end_column));
                f.insert("message".into(), json!(finding.message));
                f.insert("same_value_write".into(), json!(finding.same_value_write));
                // The name the precision issue asks for; both stay (fields are never renamed).
                f.insert("same_value".into(), json!(finding.same_value_write));
                if let Some(scope) = finding.barrier {
                    f.insert("barrier".into(), json!(scope.as_str()));
                }
                if let Some(c) = &finding.condition {
                    f.insert("condition".into(), json!(c));
                }
                if let Some(p) = &finding.precondition {
                    f.insert("precondition".into(), json!(p));
                }
                f.insert("severity".into(), json!(report.level(finding).as_str()));
                let suppression = report.suppression(k, fi);
                f.insert("suppressed".into(), json!(suppression.is_some()));
                if let Some(s) = suppression {
                    let mut v = Map::new();
                    match s {
                        Suppression::Comment { span, .. } => {
                            let sr = pos.range(*span);
                            v.insert("by".into(), json!("comment"));
                            v.insert("file".into(), json!(file_name(report, span.file)));
                            v.insert("line".into(), json!(sr.line));
                        }
                        Suppression::SameValueWrite => {
                            v.insert("by".into(), json!("config"));
                        }
                    }
                    if let Some(reason) = s.reason() {
                        v.insert("reason".into(), json!(reason));
                    }
                    f.insert("suppression".into(), Value::Object(v));
                }
                f.insert("related".into(), Value::Array(related));
                f.insert("witness".into(), json!(finding.witness));
                findings.push(Value::Object(f));
            }
        }
    }
    let s = Summary::of(reports);
    json!({
        "version": JSON_VERSION,
        "tool": {"name": "cudarace", "version": env!("CARGO_PKG_VERSION")},
        "kernels": kernels,
        "findings": findings,
        "files": files,
        "summary": {
            "files": s.files, "file_errors": s.file_errors, "kernels": s.kernels,
            "race_free": s.race_free, "racy": s.racy, "divergent": s.divergent,
            "unknown": s.unknown, "unsupported": s.unsupported, "findings": s.findings,
            "suppressed": s.suppressed, "notices": s.notices,
            "syntax_errors": s.syntax_errors,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testdata;

    #[test]
    fn json_of_hand_made_reports() {
        insta::assert_json_snapshot!(json(&testdata::all()));
    }

    #[test]
    fn json_lines_and_columns_are_one_based() {
        let v = json(&[testdata::racy_file()]);
        let race = &v["findings"][0];
        assert_eq!(race["kind"], "data-race");
        // `    s[tid + 1] = 0.0f;` is line 6 of the text; `s` is its fifth character.
        assert_eq!(race["line"], 6);
        assert_eq!(race["column"], 5);
        assert_eq!(race["end_column"], 15);
        assert_eq!(race["related"][0]["line"], 5);
        assert_eq!(v["kernels"][0]["line"], 2);
        assert_eq!(v["kernels"][0]["verdict"], "racy");
        assert!(v["kernels"][1].get("reason").is_none());
        assert_eq!(v["findings"][1].get("array"), None);
    }
}
