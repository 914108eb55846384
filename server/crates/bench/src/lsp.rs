//! Drives `cudarace lsp` over stdio with JSON-RPC, as an editor would, and measures latency and
//! the server's memory.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::gen;
use crate::mem::status_kb;
use crate::stats::Samples;

pub struct LspResults {
    pub lines: usize,
    pub kernels: usize,
    pub open_ms: f64,
    pub open_first_publish_ms: Option<f64>,
    pub series: Vec<EditSeries>,
    pub rss_before_open_kb: Option<u64>,
    pub rss_after_open_kb: Option<u64>,
    pub rss_after_edits_kb: Option<u64>,
    pub peak_rss_kb: Option<u64>,
    pub last_stats: Value,
}

/// One kind of one-character edit, repeated.
pub struct EditSeries {
    pub name: &'static str,
    /// Edit → the server's check of that version is complete.
    pub check_ms: Samples,
    /// Edit → first `publishDiagnostics` for that version.
    pub publish_ms: Samples,
    /// Solver queries the server solved for these edits (answers not in its cache).
    pub queries_solved: u64,
    /// The most any one edit solved.
    pub max_queries_solved: u64,
}

pub(crate) struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
    /// `publishDiagnostics` seen: (uri, version, when).
    publishes: Vec<(String, Option<i64>, Instant)>,
    /// How long a request waits for its answer.
    wait: Duration,
    /// The server's stderr lines with the time each arrived (when started with a log level).
    pub(crate) log: Option<Receiver<(Instant, String)>>,
}

const WAIT: Duration = Duration::from_secs(600);

impl Client {
    fn start(binary: &Path) -> Result<Client, String> {
        Client::start_with(binary, None, WAIT)
    }

    /// Starts `binary lsp`; with `log_level`, the server logs at that level (`CUDARACE_LOG`) and
    /// its stderr lines arrive on [`Client::log`], timestamped when read. Requests give up after
    /// `wait`.
    pub(crate) fn start_with(
        binary: &Path,
        log_level: Option<&str>,
        wait: Duration,
    ) -> Result<Client, String> {
        let mut command = Command::new(binary);
        command
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(level) = log_level {
            command.env("CUDARACE_LOG", level).stderr(Stdio::piped());
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let log = child.stderr.take().map(timestamped_lines);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(msg) = read_message(&mut reader) {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        Ok(Client {
            child,
            stdin,
            incoming: rx,
            next_id: 1,
            publishes: Vec::new(),
            wait,
            log,
        })
    }

    fn send(&mut self, msg: &Value) -> Result<(), String> {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{}", body.len(), body)
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("write to server: {e}"))
    }

    pub(crate) fn notify(&mut self, method: &str, params: Value) -> Result<(), String> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Replaces the character at (`line`, `col`) of `uri` with `ch`, as version `version`.
    pub(crate) fn replace_char(
        &mut self,
        uri: &str,
        version: i64,
        (line, col): (usize, usize),
        ch: char,
    ) -> Result<(), String> {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version},
                   "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                                 "end": {"line": line, "character": col + 1}},
                                       "text": ch.to_string()}]}),
        )
    }

    pub(crate) fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + self.wait;
        loop {
            let msg = self.next_message(deadline)?;
            if msg.get("id").and_then(Value::as_i64) == Some(id) && msg.get("method").is_none() {
                if let Some(err) = msg.get("error") {
                    return Err(format!("{method} failed: {err}"));
                }
                return Ok(msg.get("result").cloned().unwrap_or(Value::Null));
            }
        }
    }

    /// The next message from the server; server-to-client requests are answered on the way and
    /// diagnostics are recorded.
    fn next_message(&mut self, deadline: Instant) -> Result<Value, String> {
        let timeout = deadline.saturating_duration_since(Instant::now());
        let msg = match self.incoming.recv_timeout(timeout) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => return Err("the server did not answer".into()),
            Err(RecvTimeoutError::Disconnected) => return Err("the server exited".into()),
        };
        if let (Some(method), Some(id)) = (msg.get("method").and_then(Value::as_str), msg.get("id"))
        {
            let result = match method {
                "workspace/configuration" => {
                    let n = msg["params"]["items"].as_array().map_or(0, Vec::len);
                    Value::Array(vec![Value::Null; n])
                }
                _ => Value::Null,
            };
            let reply = json!({"jsonrpc": "2.0", "id": id.clone(), "result": result});
            self.send(&reply)?;
        } else if msg.get("method").and_then(Value::as_str)
            == Some("textDocument/publishDiagnostics")
        {
            let p = &msg["params"];
            self.publishes.push((
                p["uri"].as_str().unwrap_or_default().to_string(),
                p["version"].as_i64(),
                Instant::now(),
            ));
        }
        Ok(msg)
    }

    /// Waits for the check of the document's current version (`cudarace/stats` with `wait`).
    pub(crate) fn wait_checked(&mut self, uri: &str) -> Result<Value, String> {
        self.request(
            "cudarace/stats",
            json!({"textDocument": {"uri": uri}, "wait": true}),
        )
    }

    fn first_publish_after(&self, uri: &str, version: i64, since: Instant) -> Option<f64> {
        self.publishes
            .iter()
            .find(|(u, v, t)| u == uri && *v == Some(version) && *t >= since)
            .map(|(_, _, t)| t.duration_since(since).as_secs_f64() * 1000.0)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads `stream` line by line on a thread; each line arrives with the time it was read.
pub(crate) fn timestamped_lines(
    stream: impl std::io::Read + Send + 'static,
) -> Receiver<(Instant, String)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    rx
}

fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0u8; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// Opens the generated file with `kernels` kernels, waits for its check, then makes `edits`
/// one-character edits of each kind (a float literal, an index digit and a comment digit, see
/// [`gen::EditorFile`]; each kind cycles over the kernels), waiting for each version's check
/// before the next edit.
pub fn measure(binary: &Path, kernels: usize, edits: usize) -> Result<LspResults, String> {
    measure_file(
        binary,
        &gen::editor_file(kernels),
        kernels,
        "editor_bench.cu",
        edits,
    )
}

/// [`measure`] on a real file: edits at the positions [`gen::real_file_edits`] finds (a float
/// literal and an index digit per kernel, characters of comments).
pub fn measure_real(binary: &Path, path: &Path, edits: usize) -> Result<LspResults, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = gen::real_file_edits(&text);
    let kernels = text.matches("__global__").count();
    let name = path
        .file_name()
        .map_or("real.cu".into(), |n| n.to_string_lossy().into_owned());
    measure_file(binary, &file, kernels, &name, edits)
}

fn measure_file(
    binary: &Path,
    file: &gen::EditorFile,
    kernels: usize,
    name: &str,
    edits: usize,
) -> Result<LspResults, String> {
    let text = file.text.clone();
    let lines = text.lines().count();
    let dir = std::env::temp_dir().join(format!("cudarace-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join(name);
    std::fs::write(&path, &text).map_err(|e| e.to_string())?;
    let uri = format!("file://{}", path.display());
    let root = format!("file://{}", dir.display());

    let mut c = Client::start(binary)?;
    let pid = c.child.id().to_string();
    c.request(
        "initialize",
        json!({"processId": std::process::id(), "rootUri": root, "capabilities": {},
               "workspaceFolders": [{"uri": root, "name": "bench"}]}),
    )?;
    c.notify("initialized", json!({}))?;
    let rss_before_open_kb = status_kb(&pid, "VmRSS");

    let opened = Instant::now();
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": text}}),
    )?;
    c.wait_checked(&uri)?;
    let open_ms = opened.elapsed().as_secs_f64() * 1000.0;
    let open_first_publish_ms = c.first_publish_after(&uri, 1, opened);
    let rss_after_open_kb = status_kb(&pid, "VmRSS");

    let mut last_stats = Value::Null;
    let mut version = 1;
    let mut series = Vec::new();
    let kinds: [(&'static str, &Vec<(usize, usize)>); 3] = [
        ("float literal in a kernel", &file.literal_digits),
        ("index digit in a kernel", &file.index_digits),
        ("comment", &file.comment_digits),
    ];
    for (name, digits) in kinds {
        let mut s = EditSeries {
            name,
            check_ms: Samples::default(),
            publish_ms: Samples::default(),
            queries_solved: 0,
            max_queries_solved: 0,
        };
        for i in 0..edits.min(digits.len() * 9) {
            let (line, col) = digits[i % digits.len()];
            // Cycle the digit through 1..9 so that every edit changes the text.
            let digit = char::from(b'1' + (i / digits.len() % 9) as u8);
            version += 1;
            let sent = Instant::now();
            c.replace_char(&uri, version, (line, col), digit)?;
            last_stats = c.wait_checked(&uri)?;
            s.check_ms.push(sent.elapsed().as_secs_f64() * 1000.0);
            if let Some(p) = c.first_publish_after(&uri, version, sent) {
                s.publish_ms.push(p);
            }
            let solved = last_stats["last"]["queriesSolved"].as_u64().unwrap_or(0);
            s.queries_solved += solved;
            s.max_queries_solved = s.max_queries_solved.max(solved);
        }
        series.push(s);
    }
    let rss_after_edits_kb = status_kb(&pid, "VmRSS");
    let peak_rss_kb = status_kb(&pid, "VmHWM");
    let _ = c.request("shutdown", Value::Null);
    let _ = c.notify("exit", Value::Null);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(LspResults {
        lines,
        kernels,
        open_ms,
        open_first_publish_ms,
        series,
        rss_before_open_kb,
        rss_after_open_kb,
        rss_after_edits_kb,
        peak_rss_kb,
        last_stats,
    })
}
