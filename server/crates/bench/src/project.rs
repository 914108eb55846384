//! Section (e): a project of [`UNITS`] translation units with a compilation database
//! ([`crate::gen_project`]): the time the CLI and the server take to build its launch index, and
//! the latency of edits in a header kernel with the project against the same file without one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::gen_project::{self, DEFINES, EDITED_HEADER, EDITED_KERNEL, EDITS};
use crate::lsp::{timestamped_lines, Client};
use crate::stats::Samples;

/// Translation units of the generated project (issue 16: "a project of 200 files").
pub const UNITS: usize = 200;

/// The longest the CLI may run on the project before it is killed.
const CLI_LIMIT: Duration = Duration::from_secs(300);
/// The longest any one wait on the server lasts (an answer, the index, a check).
const LSP_WAIT: Duration = Duration::from_secs(120);

pub struct CliRun {
    pub wall_ms: f64,
    /// Process start → the `launch index` log line (the index is built before any file is
    /// checked, so this bounds the index time from above: it includes start-up and reading the
    /// database).
    pub index_ms: Option<f64>,
    pub sites: Option<u64>,
    pub files: usize,
    pub kernels: usize,
    pub findings: usize,
    /// Kernels by verdict, e.g. `12 race-free, 1 racy`.
    pub verdicts: String,
    pub exit: Option<i32>,
}

pub struct LspRun {
    /// didOpen → the first check of the document is complete (without the index if it was not
    /// ready by then).
    pub open_ms: f64,
    /// didOpen → the server's `launch index of …: N sites` log line.
    pub index_ms: Option<f64>,
    /// The server's `building the launch index` log line → its `launch index of …` line (the
    /// build on its blocking thread).
    pub build_ms: Option<f64>,
    pub sites: Option<u64>,
    /// The launch `block_reduce` is checked under before the edits (from its hover).
    pub launch: String,
    /// didOpen → the check that follows the build (the document checked again with the index)
    /// is complete.
    pub indexed_check_ms: Option<f64>,
    /// One series of edits per entry of [`EDITS`] (empty when no edits were asked for).
    pub series: Vec<EditSeries>,
    /// Stats before and after the edits.
    pub before: Value,
    pub after: Value,
}

/// `edits` one-character edits of one digit, each waited for.
pub struct EditSeries {
    pub name: &'static str,
    pub check_ms: Samples,
    /// The server's own time for each of those checks (`last.timeMs` of `cudarace/stats`: front
    /// end and kernels, without the main loop's work before the check starts).
    pub server_ms: Samples,
    /// Solver queries the server solved for them (answers not in its cache).
    pub queries_solved: u64,
}

pub struct ProjectResults {
    pub units: usize,
    /// Lines of the units and of the headers.
    pub lines: usize,
    pub kernels_in_headers: usize,
    /// One run per repetition (an error stops the repetitions).
    pub cli: Result<Vec<CliRun>, String>,
    /// One server per repetition; only the last makes the edits.
    pub with_project: Result<Vec<LspRun>, String>,
    pub without_project: Result<LspRun, String>,
    /// The same, with the launch the index gives `block_reduce` as the `blockDim`/`gridDim`
    /// settings (separates the cost of the concrete launch from that of the project).
    pub without_project_launch: Result<LspRun, String>,
    pub total_s: f64,
}

/// Removes the temporary folder however the measurement ends.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Generates the project, then: `reps` CLI runs over it, `reps` servers that open the edited
/// header and wait for its index (the last one makes `edits` edits of each kind), and one server
/// that makes the same edits in a copy of the headers without the project (and one more with
/// the launch the index gives as settings).
pub fn measure(binary: &Path, edits: usize, reps: usize) -> Result<ProjectResults, String> {
    let started = Instant::now();
    let base = TempDir(
        std::env::temp_dir().join(format!("cudarace-bench-project-{}", std::process::id())),
    );
    let _ = std::fs::remove_dir_all(&base.0);
    let project = gen_project::write_project(&base.0.join("project"), UNITS)
        .map_err(|e| format!("writing the project: {e}"))?;
    // The same headers in a folder with no compilation database above or beside it.
    let solo = base.0.join("solo");
    std::fs::create_dir_all(solo.join("include")).map_err(|e| e.to_string())?;
    for (rel, text) in gen_project::HEADERS {
        std::fs::write(solo.join(rel), text).map_err(|e| e.to_string())?;
    }
    let kernels_in_headers = gen_project::HEADERS
        .iter()
        .map(|(_, t)| t.matches("__global__").count())
        .sum();

    let lines = project
        .units
        .iter()
        .filter_map(|u| std::fs::read_to_string(u).ok())
        .chain(gen_project::HEADERS.iter().map(|(_, t)| t.to_string()))
        .map(|t| t.lines().count())
        .sum();
    let cli = (0..reps).map(|_| run_cli(binary, &project)).collect();
    let with_project = (0..reps)
        .map(|r| {
            run_lsp(
                binary,
                &project.root,
                None,
                if r + 1 == reps { edits } else { 0 },
            )
        })
        .collect();
    let settings = json!({
        "defines": DEFINES,
        "includeDirs": [solo.join("include").display().to_string()],
    });
    let mut with_launch = settings.clone();
    with_launch["blockDim"] = json!([256]);
    with_launch["gridDim"] = json!([64]);
    let without_project = run_lsp(binary, &solo, Some(settings), edits);
    let without_project_launch = run_lsp(binary, &solo, Some(with_launch), edits);
    Ok(ProjectResults {
        units: project.units.len(),
        lines,
        kernels_in_headers,
        cli,
        with_project,
        without_project,
        without_project_launch,
        total_s: started.elapsed().as_secs_f64(),
    })
}

fn ms_since(t: Instant, since: Instant) -> f64 {
    t.saturating_duration_since(since).as_secs_f64() * 1000.0
}

/// The number after `key` in a log line (`sites=12` or `: 12 sites`).
fn number_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `cudarace check --compile-commands … --format json` on the whole project, logging at `info`.
fn run_cli(binary: &Path, project: &gen_project::Project) -> Result<CliRun, String> {
    let spawned = Instant::now();
    let mut child = Command::new(binary)
        .args(["check", "--compile-commands"])
        .arg(&project.database)
        .args(["--format", "json"])
        .env("CUDARACE_LOG", "info")
        .current_dir(&project.root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stdout), &mut s);
        s
    });
    let log = timestamped_lines(child.stderr.take().ok_or("no stderr")?);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if spawned.elapsed() > CLI_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("killed after {} s", CLI_LIMIT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let wall_ms = spawned.elapsed().as_secs_f64() * 1000.0;
    let out = out.join().unwrap_or_default();
    let (mut index_ms, mut sites) = (None, None);
    for (t, line) in log.try_iter() {
        if index_ms.is_none() && line.contains("launch index") {
            index_ms = Some(ms_since(t, spawned));
            sites = number_after(&line, "sites=");
        }
    }
    let report: Value = serde_json::from_str(&out)
        .map_err(|e| format!("the report is not JSON ({e}); {status}"))?;
    let count = |key: &str| report[key].as_array().map_or(0, Vec::len);
    let mut verdicts = std::collections::BTreeMap::new();
    for k in report["kernels"].as_array().into_iter().flatten() {
        *verdicts
            .entry(k["verdict"].as_str().unwrap_or("?").to_string())
            .or_insert(0usize) += 1;
    }
    let verdicts = verdicts
        .iter()
        .map(|(v, n)| format!("{n} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(CliRun {
        wall_ms,
        index_ms,
        sites,
        files: count("files"),
        kernels: count("kernels"),
        findings: count("findings"),
        verdicts,
        exit: status.code(),
    })
}

/// What the server logs about the index: when it started building (`building the launch index
/// of …`) and when it was done (`launch index of …: N sites`) with the sites, if before
/// `deadline`.
fn wait_index_lines(
    log: &Receiver<(Instant, String)>,
    deadline: Instant,
) -> Option<(Option<Instant>, Instant, u64)> {
    let mut building = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (t, line) = log.recv_timeout(left).ok()?;
        if line.contains("building the launch index of") {
            building = Some(t);
        } else if line.contains("launch index of") && line.trim_end().ends_with(" sites") {
            let sites = line
                .rsplit_once(": ")
                .and_then(|(_, rest)| number_after(rest, ""));
            return Some((building, t, sites.unwrap_or(0)));
        }
    }
}

/// The `Assumed launch: …` line of the hover on `name` (a kernel of `text`).
fn assumed_launch(c: &mut Client, uri: &str, text: &str, name: &str) -> Result<String, String> {
    let (line, col) = text
        .lines()
        .enumerate()
        .find_map(|(n, l)| l.find(&format!("void {name}(")).map(|c| (n, c + 5 + 2)))
        .ok_or(format!("no kernel {name}"))?;
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": col}}),
    )?;
    let value = hover["contents"]["value"].as_str().unwrap_or_default();
    Ok(value
        .lines()
        .find_map(|l| l.trim().strip_prefix("Assumed launch:"))
        .map_or("(none shown)".into(), |l| l.trim().to_string()))
}

/// Opens [`EDITED_HEADER`] of the project at `root` (a workspace folder) and edits a digit of
/// its first kernel `edits` times. `settings`: the initialization options (for the run without a
/// project: the flags the database would give).
fn run_lsp(
    binary: &Path,
    root: &Path,
    settings: Option<Value>,
    edits: usize,
) -> Result<LspRun, String> {
    let mut c = Client::start_with(binary, Some("info"), LSP_WAIT)?;
    let log = c.log.take().ok_or("no server log")?;
    let root_uri = format!("file://{}", root.display());
    let path = root.join(EDITED_HEADER);
    let uri = format!("file://{}", path.display());
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let mut digits = Vec::new();
    for (name, mark, offset) in EDITS {
        let at = text
            .lines()
            .enumerate()
            .find_map(|(n, l)| l.find(mark).map(|c| (n, c + offset)))
            .ok_or(format!("no digit to edit for {name}"))?;
        digits.push((name, at));
    }
    let mut init = json!({"processId": std::process::id(), "rootUri": root_uri,
                          "capabilities": {},
                          "workspaceFolders": [{"uri": root_uri, "name": "project"}]});
    if let Some(s) = settings {
        init["initializationOptions"] = s;
    }
    c.request("initialize", init)?;
    c.notify("initialized", json!({}))?;

    let opened = Instant::now();
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": text}}),
    )?;
    let first = c.wait_checked(&uri)?;
    let open_ms = opened.elapsed().as_secs_f64() * 1000.0;
    let (mut index_ms, mut build_ms, mut sites, mut indexed_check_ms) = (None, None, None, None);
    if first["serverIndexBuilds"].as_u64().unwrap_or(0) > 0 {
        // The build finishes with a log line, then the document is checked again: a second
        // check of version 1 (or the first one cancelled by it).
        let deadline = opened + LSP_WAIT;
        let (building, t, n) = wait_index_lines(&log, deadline)
            .ok_or("the server did not report its launch index (log line) in time")?;
        index_ms = Some(ms_since(t, opened));
        build_ms = building.map(|b| ms_since(t, b));
        sites = Some(n);
        loop {
            let s = c.wait_checked(&uri)?;
            let total = &s["total"];
            let checks = total["checks"].as_u64().unwrap_or(0)
                + total["cancelledChecks"].as_u64().unwrap_or(0);
            if checks >= 2 && s["complete"].as_bool() == Some(true) {
                indexed_check_ms = Some(opened.elapsed().as_secs_f64() * 1000.0);
                break;
            }
            if Instant::now() > deadline {
                return Err("the document was not checked again after the index was built".into());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let before = c.wait_checked(&uri)?;
    let launch = assumed_launch(&mut c, &uri, &text, EDITED_KERNEL)?;

    let mut series = Vec::new();
    let mut after = before.clone();
    let mut version = 1;
    for (name, (line, col)) in digits {
        let mut s = EditSeries {
            name,
            check_ms: Samples::default(),
            server_ms: Samples::default(),
            queries_solved: 0,
        };
        let original = text.lines().nth(line).and_then(|l| l[col..].chars().next());
        if !original.is_some_and(|c| c.is_ascii_digit()) {
            return Err(format!("the {name} edit is not at a digit"));
        }
        let cycle: Vec<char> = ('1'..='9').filter(|d| Some(*d) != original).collect();
        for i in 0..edits {
            // 1..9 but the original digit, in turn: every edit changes the text.
            let digit = cycle[i % cycle.len()];
            version += 1;
            let sent = Instant::now();
            c.replace_char(&uri, version, (line, col), digit)?;
            after = c.wait_checked(&uri)?;
            s.check_ms.push(sent.elapsed().as_secs_f64() * 1000.0);
            s.queries_solved += after["last"]["queriesSolved"].as_u64().unwrap_or(0);
            if let Some(t) = after["last"]["timeMs"].as_f64() {
                s.server_ms.push(t);
            }
        }
        series.push(s);
    }
    let _ = c.request("shutdown", Value::Null);
    let _ = c.notify("exit", Value::Null);
    Ok(LspRun {
        open_ms,
        index_ms,
        build_ms,
        sites,
        indexed_check_ms,
        launch,
        series,
        before,
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::number_after;

    #[test]
    fn numbers_of_the_log_lines() {
        let cli = "2026-11-24T04:42:23Z  INFO cudarace: launch index database=/p/build/compile_commands.json sites=612";
        assert_eq!(number_after(cli, "sites="), Some(612));
        let lsp = "2026-11-24T04:42:23Z  INFO cudarace_lsp::project: launch index of /p/build/compile_commands.json: 612 sites";
        let (_, rest) = lsp.rsplit_once(": ").unwrap();
        assert_eq!(number_after(rest, ""), Some(612));
    }
}
