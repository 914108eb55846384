//! One file's record: how its `cudarace check` process ended and what its report said, as a
//! line of the run's JSONL file.

use super::*;

/// What happened to one file's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exit status 0 or 1 and a parsable report.
    Ok,
    /// Killed by a signal, another exit status, or output that is not a report.
    Crash,
    /// Still running at the file timeout (killed).
    FileTimeout,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Crash => "crash",
            Status::FileTimeout => "file-timeout",
        }
    }

    fn parse(s: &str) -> Status {
        match s {
            "ok" => Status::Ok,
            "file-timeout" => Status::FileTimeout,
            _ => Status::Crash,
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Exited(i32),
    Signal(i32),
    TimedOut,
    /// It could not be started or waited for.
    Failed(String),
}

/// Everything recorded about one file (one line of the JSONL file).
#[derive(Debug, Clone)]
pub struct FileRecord {
    /// Relative to the corpus folder, `/`-separated.
    pub file: String,
    pub wall_ms: f64,
    pub status: Status,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Why a crash is one ("killed by signal 6 (SIGABRT)", "exit status 101", "unparsable
    /// JSON: …").
    pub detail: Option<String>,
    pub stderr_tail: Option<String>,
    /// `files[].error` of the report (a file the checker could not analyse).
    pub file_errors: Vec<String>,
    pub syntax_errors: usize,
    pub notices: usize,
    /// The report's kernel objects, as they are.
    pub kernels: Vec<Value>,
    /// The report's finding objects without [`DROPPED_FINDING_FIELDS`].
    pub findings: Vec<Value>,
}

pub(super) fn signal_name(signal: i32) -> &'static str {
    match signal {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => "signal",
    }
}

pub(super) fn tail(s: &str, chars: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(chars)).collect()
}

/// The record of one file from how its process ended and what it printed (the pure part of the
/// runner).
pub fn record_from_output(
    file: &str,
    wall_ms: f64,
    outcome: &Outcome,
    stdout: &str,
    stderr: &str,
) -> FileRecord {
    let mut r = FileRecord {
        file: file.to_string(),
        wall_ms,
        status: Status::Crash,
        exit_code: None,
        signal: None,
        detail: None,
        stderr_tail: None,
        file_errors: Vec::new(),
        syntax_errors: 0,
        notices: 0,
        kernels: Vec::new(),
        findings: Vec::new(),
    };
    let stderr = stderr.trim_end();
    if !stderr.is_empty() {
        r.stderr_tail = Some(tail(stderr, STDERR_TAIL));
    }
    match outcome {
        Outcome::TimedOut => {
            r.status = Status::FileTimeout;
            return r;
        }
        Outcome::Failed(e) => {
            r.detail = Some(e.clone());
            return r;
        }
        Outcome::Signal(s) => {
            r.signal = Some(*s);
            r.detail = Some(format!("killed by signal {s} ({})", signal_name(*s)));
            return r;
        }
        Outcome::Exited(code) => {
            r.exit_code = Some(*code);
            if *code != 0 && *code != 1 {
                r.detail = Some(format!("exit status {code}"));
                return r;
            }
        }
    }
    let report: Value = match serde_json::from_str(stdout) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            r.detail = Some("unparsable JSON: not an object".into());
            return r;
        }
        Err(e) => {
            r.detail = Some(format!("unparsable JSON: {e}"));
            return r;
        }
    };
    r.status = Status::Ok;
    for f in report["files"].as_array().into_iter().flatten() {
        if let Some(e) = f.get("error") {
            r.file_errors
                .push(e.as_str().map_or_else(|| e.to_string(), str::to_string));
        }
        r.syntax_errors += f["syntax_errors"].as_array().map_or(0, Vec::len);
        r.notices += f["notices"].as_array().map_or(0, Vec::len);
    }
    r.kernels = report["kernels"].as_array().cloned().unwrap_or_default();
    r.findings = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| match f {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| !DROPPED_FINDING_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            other => other.clone(),
        })
        .collect();
    r
}

impl FileRecord {
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("file".into(), json!(self.file));
        m.insert(
            "wall_ms".into(),
            json!((self.wall_ms * 1000.0).round() / 1000.0),
        );
        m.insert("status".into(), json!(self.status.as_str()));
        if let Some(c) = self.exit_code {
            m.insert("exit_code".into(), json!(c));
        }
        if let Some(s) = self.signal {
            m.insert("signal".into(), json!(s));
        }
        if let Some(d) = &self.detail {
            m.insert("detail".into(), json!(d));
        }
        if let Some(t) = &self.stderr_tail {
            m.insert("stderr_tail".into(), json!(t));
        }
        m.insert("file_errors".into(), json!(self.file_errors));
        m.insert("syntax_errors".into(), json!(self.syntax_errors));
        m.insert("notices".into(), json!(self.notices));
        m.insert("kernels".into(), Value::Array(self.kernels.clone()));
        m.insert("findings".into(), Value::Array(self.findings.clone()));
        Value::Object(m)
    }

    pub fn from_json(v: &Value) -> Option<FileRecord> {
        let count = |key: &str| v[key].as_u64().unwrap_or(0) as usize;
        Some(FileRecord {
            file: v["file"].as_str()?.to_string(),
            wall_ms: v["wall_ms"].as_f64().unwrap_or(0.0),
            status: Status::parse(v["status"].as_str().unwrap_or("")),
            exit_code: v["exit_code"].as_i64().map(|c| c as i32),
            signal: v["signal"].as_i64().map(|s| s as i32),
            detail: v["detail"].as_str().map(str::to_string),
            stderr_tail: v["stderr_tail"].as_str().map(str::to_string),
            file_errors: v["file_errors"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string))
                .collect(),
            syntax_errors: count("syntax_errors"),
            notices: count("notices"),
            kernels: v["kernels"].as_array().cloned().unwrap_or_default(),
            findings: v["findings"].as_array().cloned().unwrap_or_default(),
        })
    }
}

pub(super) fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

pub(super) fn verdict(k: &Value) -> &str {
    match text(k, "verdict") {
        "" => "(none)",
        v => v,
    }
}

pub(super) fn confidence(f: &Value) -> &str {
    match text(f, "confidence") {
        "" => "(none)",
        c => c,
    }
}
