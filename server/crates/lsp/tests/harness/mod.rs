//! An in-process LSP client: the server runs on in-memory pipes (`tokio::io::duplex`), the client
//! frames JSON-RPC itself. Synchronization is by messages only: `cudarace/stats` with `wait`
//! tells when a check finished and how many `publishDiagnostics` were sent, and the client waits
//! for exactly that many. Every wait has a generous timeout so that a bug fails instead of hanging.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

const WAIT: Duration = Duration::from_secs(120);

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>;

pub struct Client {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    notifications: mpsc::UnboundedReceiver<Value>,
    next_id: i64,
    /// publishDiagnostics received so far, per uri, in order.
    pub published: HashMap<String, Vec<Value>>,
    /// Other notifications received (method, params).
    pub other: Vec<(String, Value)>,
    /// Requests the server sent to the client (method names).
    pub server_requests: Arc<Mutex<Vec<String>>>,
    /// The server task: it ends when the server stops serving (after `exit`).
    server: tokio::task::JoinHandle<()>,
}

pub fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{}", body.len(), body).into_bytes()
}

impl Client {
    /// Starts a server and connects to it (not yet initialized).
    pub fn start() -> Client {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_io);
        let server = tokio::spawn(cudarace_lsp::run(server_read, server_write));
        let (client_read, mut client_write) = tokio::io::split(client_io);

        let (out, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            while let Some(bytes) = out_rx.recv().await {
                if client_write.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        });

        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let (notify_tx, notifications) = mpsc::unbounded_channel();
        let server_requests = Arc::new(Mutex::new(Vec::new()));
        let reader_pending = pending.clone();
        let reader_out = out.clone();
        let reader_requests = server_requests.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(client_read);
            loop {
                let mut length = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        length = v.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0; length.expect("Content-Length header")];
                if reader.read_exact(&mut body).await.is_err() {
                    return;
                }
                let msg: Value = serde_json::from_slice(&body).expect("the server sends JSON");
                match (msg.get("id"), msg.get("method")) {
                    (Some(id), Some(method)) => {
                        // A request from the server (progress creation, …): accept it.
                        reader_requests
                            .lock()
                            .unwrap()
                            .push(method.as_str().unwrap_or("").to_string());
                        let reply = json!({"jsonrpc": "2.0", "id": id, "result": null}).to_string();
                        let _ = reader_out.send(frame(&reply));
                    }
                    (Some(id), None) => {
                        if let Some(tx) = id
                            .as_i64()
                            .and_then(|id| reader_pending.lock().unwrap().remove(&id))
                        {
                            let _ = tx.send(msg);
                        }
                    }
                    (None, Some(_)) => {
                        let _ = notify_tx.send(msg);
                    }
                    (None, None) => {}
                }
            }
        });
        Client {
            out,
            pending,
            notifications,
            next_id: 1,
            published: HashMap::new(),
            other: vec![],
            server_requests,
            server,
        }
    }

    /// Starts and initializes a server with the given `initializationOptions`.
    pub async fn initialized(options: Value) -> Client {
        let mut c = Client::start();
        let result = c
            .request(
                "initialize",
                json!({"processId": null, "rootUri": null, "capabilities": {}, "initializationOptions": options}),
            )
            .await;
        assert_eq!(
            result["capabilities"]["textDocumentSync"]["change"], 2,
            "incremental sync"
        );
        c.notify("initialized", json!({}));
        c
    }

    pub fn send_raw(&self, bytes: Vec<u8>) {
        self.out.send(bytes).expect("client writer alive");
    }

    pub fn notify(&self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        self.send_raw(frame(&body));
    }

    /// Sends a request and returns the whole response message.
    pub async fn request_raw(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let body =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.send_raw(frame(&body));
        tokio::time::timeout(WAIT, rx)
            .await
            .unwrap_or_else(|_| panic!("no answer to {method}"))
            .expect("server alive")
    }

    /// Sends a request and returns its result (panics on an error response).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let response = self.request_raw(method, params).await;
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    pub fn open(&self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "cuda-cpp", "version": 1, "text": text}}),
        );
    }

    /// Sends one incremental change (`range` as ((line, character), (line, character))).
    pub fn change(&self, uri: &str, version: i32, range: ((u32, u32), (u32, u32)), text: &str) {
        let ((l1, c1), (l2, c2)) = range;
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version},
                   "contentChanges": [{"range": {"start": {"line": l1, "character": c1},
                                                 "end": {"line": l2, "character": c2}}, "text": text}]}),
        );
    }

    /// Waits until the current version's check finished and returns the stats.
    pub async fn stats(&mut self, uri: &str) -> Value {
        self.request(
            "cudarace/stats",
            json!({"textDocument": {"uri": uri}, "wait": true}),
        )
        .await
    }

    /// Waits for the check of the current version, then for every publishDiagnostics it sent,
    /// and returns the last one's params.
    pub async fn diagnostics(&mut self, uri: &str) -> Value {
        let stats = self.stats(uri).await;
        let count = stats["publishCount"].as_u64().expect("publishCount") as usize;
        while self.published.get(uri).map_or(0, Vec::len) < count {
            let msg = tokio::time::timeout(WAIT, self.notifications.recv())
                .await
                .expect("publishDiagnostics in time")
                .expect("server alive");
            let method = msg["method"].as_str().unwrap_or("").to_string();
            if method == "textDocument/publishDiagnostics" {
                let u = msg["params"]["uri"].as_str().unwrap_or("").to_string();
                self.published
                    .entry(u)
                    .or_default()
                    .push(msg["params"].clone());
            } else {
                self.other.push((method, msg["params"].clone()));
            }
        }
        let last = self.published[uri][count - 1].clone();
        assert_eq!(
            last["version"], stats["version"],
            "the last publish is for the current version"
        );
        last
    }

    /// Waits for a publishDiagnostics for `uri` satisfying `pred` (including ones already
    /// received), and returns its params.
    pub async fn wait_publish(&mut self, uri: &str, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            if let Some(p) = self
                .published
                .get(uri)
                .and_then(|ps| ps.iter().find(|p| pred(p)))
            {
                return p.clone();
            }
            let msg = tokio::time::timeout(WAIT, self.notifications.recv())
                .await
                .expect("publishDiagnostics in time")
                .expect("server alive");
            let m = msg["method"].as_str().unwrap_or("").to_string();
            if m == "textDocument/publishDiagnostics" {
                let u = msg["params"]["uri"].as_str().unwrap_or("").to_string();
                self.published
                    .entry(u)
                    .or_default()
                    .push(msg["params"].clone());
            } else {
                self.other.push((m, msg["params"].clone()));
            }
        }
    }

    /// Waits for a notification other than publishDiagnostics satisfying `pred` (including ones
    /// already received), and returns its params.
    pub async fn wait_notification(
        &mut self,
        method: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        loop {
            if let Some((_, p)) = self.other.iter().find(|(m, p)| m == method && pred(p)) {
                return p.clone();
            }
            let msg = tokio::time::timeout(WAIT, self.notifications.recv())
                .await
                .unwrap_or_else(|_| panic!("no {method} notification in time"))
                .expect("server alive");
            let m = msg["method"].as_str().unwrap_or("").to_string();
            if m == "textDocument/publishDiagnostics" {
                let u = msg["params"]["uri"].as_str().unwrap_or("").to_string();
                self.published
                    .entry(u)
                    .or_default()
                    .push(msg["params"].clone());
            } else {
                self.other.push((m, msg["params"].clone()));
            }
        }
    }

    /// Waits up to `duration` for notifications, recording them; returns how many arrived.
    pub async fn collect_for(&mut self, duration: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + duration;
        let mut count = 0;
        while let Ok(Some(msg)) = tokio::time::timeout_at(deadline, self.notifications.recv()).await
        {
            count += 1;
            let method = msg["method"].as_str().unwrap_or("").to_string();
            if method == "textDocument/publishDiagnostics" {
                let u = msg["params"]["uri"].as_str().unwrap_or("").to_string();
                self.published
                    .entry(u)
                    .or_default()
                    .push(msg["params"].clone());
            } else {
                self.other.push((method, msg["params"].clone()));
            }
        }
        count
    }

    /// Sends `exit` and waits for the server to stop serving; panics if it does not.
    pub async fn exit(self) {
        self.notify("exit", Value::Null);
        // Stopping involves no analysis: a few seconds are plenty.
        tokio::time::timeout(Duration::from_secs(10), self.server)
            .await
            .expect("the server stops after exit")
            .expect("the server task does not panic");
    }

    pub async fn shutdown(mut self) {
        self.request("shutdown", Value::Null).await;
        self.notify("exit", Value::Null);
    }
}

/// The LSP position (UTF-16) of the n-th occurrence (0-based) of `needle` in `text`.
pub fn position_of(text: &str, needle: &str, nth: usize) -> (u32, u32) {
    let offset = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("{needle} in text"))
        .0;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[..offset].matches('\n').count() as u32;
    (line, text[line_start..offset].encode_utf16().count() as u32)
}

/// The LSP range of the n-th occurrence of `needle`, as JSON.
pub fn range_of(text: &str, needle: &str, nth: usize) -> Value {
    let (l, c) = position_of(text, needle, nth);
    let end = c + needle.encode_utf16().count() as u32;
    json!({"start": {"line": l, "character": c}, "end": {"line": l, "character": end}})
}

/// Applies LSP text edits (non-overlapping) to a text.
pub fn apply_edits(text: &str, edits: &[Value]) -> String {
    let offset = |pos: &Value| {
        let line = pos["line"].as_u64().unwrap() as usize;
        let ch = pos["character"].as_u64().unwrap() as usize;
        let line_start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        let mut units = 0;
        for (i, c) in text[line_start..].char_indices() {
            if units >= ch {
                return line_start + i;
            }
            units += c.len_utf16();
        }
        text.len()
    };
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                offset(&e["range"]["start"]),
                offset(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (a, b, t) in spans {
        out.replace_range(a..b, &t);
    }
    out
}
