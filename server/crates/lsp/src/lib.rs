//! The cudarace language server (`cudarace lsp`): squiggles on racy accesses and divergent
//! barriers as you type, witnesses on hover, a verified barrier-insertion quickfix.
//!
//! A thin layer over the analysis core: documents and LSP conversions, scheduling of background
//! checks, and caches; every verdict comes from `cudarace-syntax`, `cudarace-check` and
//! `cudarace-solver` (see [`pipeline`]).

pub mod cache;
pub mod code_action;
pub mod diagnostics;
pub mod document;
pub mod hover;
pub mod inflight;
pub mod pipeline;
pub mod project;
pub mod scheduler;
pub mod server;
pub mod settings;
pub mod siblings;
pub mod stats;
pub mod transport;

pub use server::Server;

use std::sync::OnceLock;
use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::{ClientSocket, LspService};
use tracing_subscriber::{reload, EnvFilter, Registry};

/// The custom request returning per-document statistics (see [`stats`]).
pub const STATS_METHOD: &str = "cudarace/stats";

/// The service and its client socket, for serving over any transport (tests use in-memory pipes).
/// Must be called inside a tokio runtime (the server's main loop is spawned on it).
pub fn service() -> (LspService<Server>, ClientSocket) {
    LspService::build(Server::new)
        .custom_method(STATS_METHOD, Server::stats)
        .finish()
}

/// Serves LSP over the given streams until the client sends `exit` or closes the input.
/// Must be called inside a tokio runtime.
pub async fn run<I, O>(input: I, output: O)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite,
{
    // Malformed frames are filtered out before tower-lsp-server sees them (see `transport`).
    let (filtered_write, filtered_read) = tokio::io::duplex(1 << 16);
    tokio::spawn(transport::forward_valid_frames(input, filtered_write));
    let (service, socket) = service();
    tower_lsp_server::Server::new(filtered_read, output, socket)
        .serve(service)
        .await;
}

/// `cudarace lsp`: serves LSP over stdin/stdout on a new tokio runtime; logs go to stderr
/// (level from `CUDARACE_LOG`, else `RUST_LOG`, else `info`; the `logLevel` setting changes it).
pub fn run_stdio() -> std::io::Result<()> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(tokio::io::stdin(), tokio::io::stdout()));
    Ok(())
}

static LOG_RELOAD: OnceLock<reload::Handle<EnvFilter, Registry>> = OnceLock::new();

fn init_logging() {
    use tracing_subscriber::prelude::*;
    let filter = std::env::var("CUDARACE_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let (filter, handle) = reload::Layer::new(filter);
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    if tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .try_init()
        .is_ok()
    {
        let _ = LOG_RELOAD.set(handle);
    }
}

/// Changes the log filter (from the `logLevel` setting); ignored if logging was set up elsewhere.
pub(crate) fn set_log_level(level: &str) {
    match (LOG_RELOAD.get(), EnvFilter::try_new(level)) {
        (Some(handle), Ok(filter)) => {
            let _ = handle.reload(filter);
        }
        (_, Err(err)) => tracing::warn!("invalid logLevel {level:?}: {err}"),
        (None, _) => {}
    }
}
