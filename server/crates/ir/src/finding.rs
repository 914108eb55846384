//! What the checker reports: a verdict per kernel and findings with witnesses.
//! Positions are [`Span`]s; renderers (CLI, LSP) turn them into lines and columns.

use crate::span::Span;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    DataRace,
    BarrierDivergence,
}

impl FindingKind {
    /// The code used in every output (`data-race`, `barrier-divergence`).
    pub fn code(self) -> &'static str {
        match self {
            FindingKind::DataRace => "data-race",
            FindingKind::BarrierDivergence => "barrier-divergence",
        }
    }
}

/// Which threads a barrier synchronizes (divergence findings say which barrier diverges).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BarrierScope {
    /// `__syncthreads()` and its variants.
    Block,
    /// `__syncwarp()` with the full mask.
    Warp,
    /// `grid.sync()` of a cooperative launch.
    Grid,
}

impl BarrierScope {
    pub fn as_str(self) -> &'static str {
        match self {
            BarrierScope::Block => "block",
            BarrierScope::Warp => "warp",
            BarrierScope::Grid => "grid",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    /// The witness depends on no unknown value: a true alarm.
    Definite,
    /// The witness depends on an unknown value (data, an opaque call, …); the reason says which.
    Possible,
    /// Every witness breaks a plausibility assumption (a size or stride below 1, a negative
    /// index, a second block for a kernel that is not launched with one, …); the finding's
    /// `condition` says which (`only if ldc < 1`).
    Conditional,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Definite => "definite",
            Confidence::Possible => "possible",
            Confidence::Conditional => "conditional",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    RaceFree,
    Racy,
    Divergent,
    Unknown,
    Unsupported,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::RaceFree => "race-free",
            Verdict::Racy => "racy",
            Verdict::Divergent => "divergent",
            Verdict::Unknown => "unknown",
            Verdict::Unsupported => "unsupported",
        }
    }
}

/// One thread of a witness.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadWitness {
    #[serde(rename = "threadIdx")]
    pub thread_idx: [i64; 3],
    #[serde(rename = "blockIdx")]
    pub block_idx: [i64; 3],
    /// Loop variable (source name) → value in this thread's iteration.
    pub loop_vars: BTreeMap<String, i64>,
}

/// A concrete execution the solver chose that exhibits the finding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witness {
    pub thread_a: ThreadWitness,
    pub thread_b: ThreadWitness,
    /// The cell both threads access, one index per array dimension (empty for divergence and
    /// for shared scalars).
    pub cell: Vec<i64>,
    /// Kernel parameters (scalar and template) the solver chose.
    pub params: BTreeMap<String, i64>,
    #[serde(rename = "blockDim")]
    pub block_dim: [i64; 3],
    #[serde(rename = "gridDim")]
    pub grid_dim: [i64; 3],
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Related {
    pub span: Span,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// The array (races only).
    pub array: Option<String>,
    pub confidence: Confidence,
    /// Why definite or possible (e.g. "the index depends on data read from `perm`").
    pub confidence_reason: String,
    pub kernel: String,
    /// The racy access (thread A's) or the divergent barrier.
    pub span: Span,
    pub message: String,
    /// The other access of the pair; for divergence, the condition that makes it divergent.
    pub related: Vec<Related>,
    pub witness: Witness,
    /// Races only: both accesses are writes of the same constant value.
    pub same_value_write: bool,
    /// Divergence only: the scope of the barrier that diverges.
    #[serde(default)]
    pub barrier: Option<BarrierScope>,
    /// Conditional findings: what the witness needs that a reader would not assume
    /// (`only if ldc < 1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// The simplest relation between parameters and launch sizes under which the race is gone
    /// (`m >= gridDim.x`): a precondition the kernel may state with `__requires(…)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<String>,
}

/// The result of checking one kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelReport {
    pub name: String,
    pub span: Span,
    pub name_span: Span,
    pub verdict: Verdict,
    /// Why `unknown` / `unsupported` (and notes for other verdicts, e.g. arrays left unknown).
    pub reason: Option<String>,
    pub findings: Vec<Finding>,
    /// The launch configuration the verdict assumed, human-readable
    /// (e.g. "blockDim=(1..1024, 1, 1) gridDim=(symbolic, 1, 1)").
    pub assumed_launch: String,
    pub time_ms: f64,
    /// Solver queries issued (including ones answered from a cache).
    pub queries: usize,
    /// Where the check stopped modelling the code: the unmodelled effects that made an array's
    /// verdict unknown (a call without a body, a load through an unknown pointer), the first
    /// place of each kind in the order the check met them, at most [`MAX_UNMODELLED_PLACES`].
    /// So that the user sees which line to look at (the reason says only what it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmodelled: Vec<Unmodelled>,
}

/// How many places [`KernelReport::unmodelled`] lists.
pub const MAX_UNMODELLED_PLACES: usize = 8;

/// A place where the check stopped modelling the code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmodelled {
    pub span: Span,
    /// What is there (`call to `load` whose body is not available`).
    pub what: String,
}
