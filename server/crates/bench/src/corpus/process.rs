//! Running: one `cudarace check` process per file, killed at the file timeout, and the JSONL
//! file the records go to.

use super::*;

/// Every `.cu`/`.cuh` file below `dir`, relative to it, sorted (symbolic links to folders are
/// not followed).
pub fn find_files(dir: &Path) -> std::io::Result<Vec<String>> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                walk(&entry.path(), &rel, out)?;
            } else if (name.ends_with(".cu") || name.ends_with(".cuh")) && entry.path().is_file() {
                out.push(rel);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out)?;
    out.sort();
    Ok(out)
}

pub(super) fn outcome_of(status: ExitStatus) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => Outcome::Exited(c),
        (None, Some(s)) => Outcome::Signal(s),
        (None, None) => Outcome::Failed(format!("ended with {status}")),
    }
}

/// Kills a child started in its own process group, with everything it started.
pub(super) fn kill_group(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `bin check --format json FILE` in `dir` (in its own process group), killed after
/// `timeout`.
pub(super) fn run_file(bin: &Path, dir: &Path, file: &str, timeout: Duration) -> FileRecord {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let child = Command::new(bin)
        .process_group(0)
        .args(["check", "--format", "json"])
        .arg(file)
        .current_dir(dir)
        // glibc writes its fatal errors (heap corruption found by malloc, then SIGABRT) to the
        // terminal, not to stderr, unless this is set: the crash list would show no message.
        .env("LIBC_FATAL_STDERR_", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let outcome = Outcome::Failed(format!("could not start {}: {e}", bin.display()));
            return record_from_output(file, 0.0, &outcome, "", "");
        }
    };
    // Read on threads (a full pipe would stall the child); a reader that a left-over
    // grandchild keeps waiting is given up on after a while.
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
        });
        rx
    };
    let stdout = reader(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = reader(child.stderr.take().map(|p| Box::new(p) as _));
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) => break outcome_of(status),
            Ok(None) if started.elapsed() >= timeout => {
                kill_group(&mut child);
                break Outcome::TimedOut;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill_group(&mut child);
                break Outcome::Failed(format!("wait: {e}"));
            }
        }
    };
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let grace = Duration::from_secs(5);
    let out = stdout.recv_timeout(grace).unwrap_or_default();
    let err = stderr.recv_timeout(grace).unwrap_or_default();
    record_from_output(file, wall_ms, &outcome, &out, &err)
}

pub(super) fn write_jsonl(path: &Path, records: &[FileRecord]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    for r in records {
        writeln!(w, "{}", r.to_json())?;
    }
    w.flush()
}

pub fn read_jsonl(path: &Path) -> Result<Vec<FileRecord>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut records = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line)
            .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        if let Some(r) = FileRecord::from_json(&v) {
            records.push(r);
        }
    }
    records.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(records)
}
