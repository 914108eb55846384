//! The `cudarace/stats` request: what the server did for one document.
//!
//! Params: `{"textDocument": {"uri": …}, "wait": true}`; with `wait`, the answer comes once the
//! check of the document's current version has finished (used by tests and benchmarks instead of
//! sleeping).

use crate::scheduler::CheckTotals;
use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::TextDocumentIdentifier;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsParams {
    pub text_document: TextDocumentIdentifier,
    #[serde(default)]
    pub wait: bool,
}

/// Totals over every check of a document since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunningTotals {
    pub checks: usize,
    pub cancelled_checks: usize,
    pub queries_solved: usize,
    pub queries_from_cache: usize,
    pub time_ms: f64,
    /// Queries solved to verify code actions (not part of the checks above).
    pub fix_queries_solved: usize,
}

impl RunningTotals {
    pub fn add(&mut self, check: &CheckTotals) {
        self.checks += 1;
        self.queries_solved += check.queries_solved;
        self.queries_from_cache += check.queries_from_cache;
        self.time_ms += check.time_ms;
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentStats {
    pub uri: String,
    /// The document's current version.
    pub version: i32,
    /// The version whose check finished last (`null` before the first).
    pub checked_version: Option<i32>,
    /// True when the current version's check has finished.
    pub complete: bool,
    /// The last finished check: kernels analysed (and how many came whole from the cache),
    /// queries solved, queries answered from the cache, time spent.
    pub last: CheckTotals,
    pub total: RunningTotals,
    /// How many `publishDiagnostics` the server sent for this document so far.
    pub publish_count: u64,
    /// Queries the server submitted to the solver since it started, for all documents and
    /// including checks that were superseded before they finished.
    pub server_queries_submitted: usize,
    /// Launch indexes of compilation databases built since the server started (see
    /// [`crate::project`]); edits never build one.
    pub server_index_builds: usize,
    /// Units of a launch index read again after a save, since the server started.
    pub server_index_unit_reads: usize,
    /// Reads of the launch sites beside a document no database covers (see
    /// [`crate::siblings`]), since the server started; edits never read them.
    pub server_sibling_reads: usize,
    /// Headers read from disk by checks since the server started (edits of a file do not read
    /// its headers again; see `cudarace_syntax::HeaderCache`).
    pub server_header_reads: usize,
    /// Headers parsed by checks since the server started.
    pub server_header_parses: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_up_and_serialize_in_camel_case() {
        let mut t = RunningTotals::default();
        let c = CheckTotals {
            kernels_analysed: 2,
            kernels_from_cache: 1,
            queries_solved: 3,
            queries_from_cache: 4,
            time_ms: 1.5,
        };
        t.add(&c);
        t.add(&c);
        assert_eq!(
            (t.checks, t.queries_solved, t.queries_from_cache),
            (2, 6, 8)
        );
        let v = serde_json::to_value(c).unwrap();
        assert_eq!(v["queriesSolved"], 3);
        assert_eq!(v["kernelsAnalysed"], 2);
        let p: StatsParams =
            serde_json::from_value(serde_json::json!({"textDocument": {"uri": "file:///a.cu"}}))
                .unwrap();
        assert!(!p.wait);
    }
}
