//! Which file and kernel are being checked, for the last words of a crash: after
//! [`install_crash_reports`], a panic anywhere (also one caught later) and a fatal signal
//! (SIGABRT from Z3's C++ code or from a Rust abort, SIGSEGV, …) leave a line on stderr that
//! names the file and the kernel being checked.
//!
//! Every thread that checks files owns one slot of a fixed table while it lives, and writes its
//! label ("FILE, kernel `K`") there ([`checking_file`], [`checking_kernel`]). A slot is a
//! seqlock (its sequence number is odd while its owner writes), so that the signal handler reads
//! it with atomic loads only, no lock and no allocation, and skips a slot caught in the middle of
//! a write. The handler uses nothing but `write(2)`, `sigaction` and `raise`, which are
//! async-signal-safe. The failing thread is often a solver thread, which serves every file, so
//! the handler names every check in progress (one per file checked at the same time).

use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{fence, AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

const SLOTS: usize = 64;
const LABEL_BYTES: usize = 400;

struct Slot {
    /// Taken by a thread for its lifetime.
    owned: AtomicBool,
    /// Odd while the owner writes the label.
    seq: AtomicUsize,
    /// Whether the label is a check in progress (else it is the last one this thread did).
    active: AtomicBool,
    len: AtomicUsize,
    label: [AtomicU8; LABEL_BYTES],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            owned: AtomicBool::new(false),
            seq: AtomicUsize::new(0),
            active: AtomicBool::new(false),
            len: AtomicUsize::new(0),
            label: [const { AtomicU8::new(0) }; LABEL_BYTES],
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// The slot of the current thread, given back when the thread exits.
struct Owner(Option<usize>);

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            TABLE[i].active.store(false, Ordering::SeqCst);
            TABLE[i].owned.store(false, Ordering::SeqCst);
        }
    }
}

thread_local! {
    static OWNER: Owner = Owner(claim_slot());
    /// The current thread's label (the same text as its slot), for the panic hook.
    static LABEL: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The file of the current thread's [`checking_file`].
    static FILE: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn claim_slot() -> Option<usize> {
    TABLE.iter().position(|s| {
        s.owned
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    })
}

/// Writes the current thread's label (or marks it finished with `None`, keeping the text).
fn publish(label: Option<&str>) {
    let _ = LABEL.try_with(|l| *l.borrow_mut() = label.map(str::to_string));
    let _ = OWNER.try_with(|owner| {
        let Some(i) = owner.0 else { return };
        let slot = &TABLE[i];
        let seq = slot.seq.load(Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        match label {
            Some(text) => {
                let bytes = truncated(text.as_bytes());
                for (cell, b) in slot.label.iter().zip(bytes) {
                    cell.store(*b, Ordering::Relaxed);
                }
                slot.len.store(bytes.len(), Ordering::Relaxed);
                slot.active.store(true, Ordering::Relaxed);
            }
            None => slot.active.store(false, Ordering::Relaxed),
        }
        slot.seq.store(seq.wrapping_add(2), Ordering::Release);
    });
}

fn truncated(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(LABEL_BYTES)]
}

/// While alive, the current thread checks what its label says; dropping it restores the labels
/// it replaced (or marks the thread finished).
#[must_use]
pub struct Checking {
    previous: Option<String>,
    /// For a file's guard, the file it replaced.
    previous_file: Option<Option<String>>,
}

impl Drop for Checking {
    fn drop(&mut self) {
        if let Some(file) = self.previous_file.take() {
            let _ = FILE.try_with(|f| *f.borrow_mut() = file);
        }
        publish(self.previous.as_deref());
    }
}

fn current_label() -> Option<String> {
    LABEL.try_with(|l| l.borrow().clone()).ok().flatten()
}

/// The current thread checks `path` (`None`: text without a file) until the guard is dropped.
pub fn checking_file(path: Option<&Path>) -> Checking {
    let name = path.map_or_else(|| "<text>".to_string(), |p| p.display().to_string());
    let previous = current_label();
    let previous_file = FILE.try_with(|f| f.borrow_mut().replace(name.clone())).ok();
    publish(Some(&name));
    Checking {
        previous,
        previous_file,
    }
}

/// The current thread checks kernel `name` of the file of [`checking_file`] until the guard is
/// dropped.
pub fn checking_kernel(name: &str) -> Checking {
    let file = FILE
        .try_with(|f| f.borrow().clone())
        .ok()
        .flatten()
        .unwrap_or_else(|| "<unknown file>".to_string());
    let previous = current_label();
    publish(Some(&format!("{file}, kernel `{name}`")));
    Checking {
        previous,
        previous_file: None,
    }
}

/// Reads slot `i` into `out`: its length and whether it is active, or `None` when it is
/// unowned, empty or being written. Async-signal-safe (atomic loads only).
fn read_slot(i: usize, out: &mut [u8; LABEL_BYTES]) -> Option<(usize, bool)> {
    let slot = &TABLE[i];
    if !slot.owned.load(Ordering::Acquire) {
        return None;
    }
    let before = slot.seq.load(Ordering::Acquire);
    if before % 2 == 1 {
        return None;
    }
    let len = slot.len.load(Ordering::Relaxed).min(LABEL_BYTES);
    let active = slot.active.load(Ordering::Relaxed);
    for (o, cell) in out.iter_mut().zip(&slot.label).take(len) {
        *o = cell.load(Ordering::Relaxed);
    }
    fence(Ordering::Acquire);
    if slot.seq.load(Ordering::Relaxed) != before || len == 0 {
        return None;
    }
    Some((len, active))
}

/// Every check in progress (`active`) or, if none, the last check of every thread.
fn labels(active: bool) -> Vec<String> {
    let mut buf = [0u8; LABEL_BYTES];
    (0..SLOTS)
        .filter_map(|i| match read_slot(i, &mut buf) {
            Some((len, a)) if a == active => Some(String::from_utf8_lossy(&buf[..len]).into()),
            _ => None,
        })
        .collect()
}

/// Installs the panic hook and the fatal signal handlers (once; later calls do nothing).
pub fn install_crash_reports() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            let thread = std::thread::current();
            let thread = thread.name().unwrap_or("unnamed");
            let text = match current_label() {
                Some(label) => format!("while checking {label}"),
                None => {
                    let now = labels(true);
                    if now.is_empty() {
                        "while no kernel was being checked".to_string()
                    } else {
                        format!("on thread `{thread}` while checking {}", now.join("; "))
                    }
                }
            };
            eprintln!("cudarace: the panic above happened {text}");
        }));
        signals::install();
    });
}

mod signals {
    use super::{read_slot, LABEL_BYTES, SLOTS};
    use std::sync::OnceLock;

    const FATAL: [(libc::c_int, &str); 5] = [
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGFPE, "SIGFPE"),
    ];

    /// The actions our handler replaced (Rust's own SIGSEGV/SIGBUS handler reports stack
    /// overflows), restored before the signal is delivered again.
    static PREVIOUS: OnceLock<Vec<(libc::c_int, libc::sigaction)>> = OnceLock::new();

    pub(super) fn install() {
        let mut previous = Vec::new();
        for (sig, _) in FATAL {
            // SAFETY: plain sigaction calls with zero-initialized structures; the handler only
            // makes async-signal-safe calls.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_fatal_signal as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &action, &mut old) == 0 {
                    previous.push((sig, old));
                }
            }
        }
        let _ = PREVIOUS.set(previous);
    }

    fn write_all(mut bytes: &[u8]) {
        while !bytes.is_empty() {
            // SAFETY: writes from a valid buffer; write(2) is async-signal-safe.
            let n = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
            if n <= 0 {
                return;
            }
            bytes = &bytes[n as usize..];
        }
    }

    extern "C" fn on_fatal_signal(
        sig: libc::c_int,
        _info: *mut libc::siginfo_t,
        _context: *mut libc::c_void,
    ) {
        let name = FATAL
            .iter()
            .find(|(s, _)| *s == sig)
            .map_or("a fatal signal", |(_, n)| n);
        let mut buf = [0u8; LABEL_BYTES];
        let mut any_active = false;
        for i in 0..SLOTS {
            if let Some((len, true)) = read_slot(i, &mut buf) {
                write_all(b"cudarace: ");
                write_all(name.as_bytes());
                write_all(b" while checking ");
                write_all(&buf[..len]);
                write_all(b"\n");
                any_active = true;
            }
        }
        if !any_active {
            write_all(b"cudarace: ");
            write_all(name.as_bytes());
            write_all(b" while no kernel was being checked");
            let mut first = true;
            for i in 0..SLOTS {
                if let Some((len, false)) = read_slot(i, &mut buf) {
                    write_all(if first { b" (last: " } else { b"; " });
                    write_all(&buf[..len]);
                    first = false;
                }
            }
            write_all(if first { b"\n" } else { b")\n" });
        }
        // Back to the previous action, which the signal meets again: a fault re-faults when
        // this handler returns, `abort` raises again, and `raise` covers a signal sent by
        // another process (it stays pending until the handler returns).
        if let Some(previous) = PREVIOUS.get() {
            for (s, old) in previous {
                if *s == sig {
                    // SAFETY: restores an action obtained from sigaction; async-signal-safe.
                    unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
                }
            }
        }
        // SAFETY: raise is async-signal-safe.
        unsafe { libc::raise(sig) };
    }
}

/// For the tests of these messages only: `CUDARACE_DEBUG_CRASH=panic:NAME` panics and
/// `abort:NAME` aborts the process when kernel NAME is checked.
pub(crate) fn debug_crash(kernel: &str) {
    let Some(spec) = std::env::var_os("CUDARACE_DEBUG_CRASH") else {
        return;
    };
    let spec = spec.to_string_lossy();
    match spec.split_once(':') {
        Some(("panic", name)) if name == kernel => panic!("CUDARACE_DEBUG_CRASH in `{kernel}`"),
        Some(("abort", name)) if name == kernel => std::process::abort(),
        _ => {}
    }
}
