//! `gpuplan serve`: the HTTP server over the same library.

use crate::cli::ServeCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::Catalog;
use gpuplan_server::{ServerConfig, State};
use std::time::Duration;

pub fn run(catalog: Catalog, cmd: ServeCmd) -> CliResult {
    purge_freed_memory_at_once();
    let calibration = load::calibration(cmd.calibration.as_deref())?;
    let defaults = ServerConfig::default();
    let config = ServerConfig {
        addr: cmd.addr,
        body_limit_bytes: cmd.body_limit,
        request_timeout: Duration::from_secs(cmd.timeout),
        max_concurrent: cmd.max_concurrent.unwrap_or(defaults.max_concurrent),
        heap_live_bytes: Some(crate::heap_live_bytes),
        ..defaults
    };
    let state = State::with_calibration(
        catalog,
        calibration,
        gpuplan_core::training::TrainingFactors::bundled(),
        config,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Internal(format!("cannot start the async runtime: {e}")))?;
    runtime
        .block_on(gpuplan_server::serve(state))
        .map_err(|e| CliError::bad(format!("--addr {}: {e}", cmd.addr)))
}

/// mimalloc's options `serve` sets (name, value), each unless the user set it.
///
/// - `MIMALLOC_PURGE_DELAY=0`: mimalloc hands freed pages back to the OS only
///   on a thread's next allocation after its purge delay (10 ms), so planning
///   threads that go idle keep the pages of their last plans, and a server's
///   RSS followed its largest recent plans (2,000 plans: idle 99 MiB after
///   1,000, 175 MiB after 2,000; peak 309 MiB). With the delay at 0 pages go
///   back when freed (idle 38 and 44 MiB; peak 215 MiB; no slower).
/// - `MIMALLOC_ALLOW_THP=0`: with transparent huge pages mimalloc's arenas sit
///   in 2 MiB pages that go back to the OS only whole, so the idle RSS moved
///   by ±10% with which plans ran last (live heap 2.4 MiB, RSS 46–58 MiB).
///   Without: 14 MiB at start, 20 MiB after 33 plans (against 17 and 30 MiB).
///
/// mimalloc reads options from the environment once, at start, so `serve`
/// re-executes itself with them set (the same process: same id, same signals).
const ALLOCATOR_OPTIONS: [(&str, &str); 2] =
    [("MIMALLOC_PURGE_DELAY", "0"), ("MIMALLOC_ALLOW_THP", "0")];

/// Restarts `serve` with [`ALLOCATOR_OPTIONS`] in its environment, unless
/// every one is already set (by the user or by an earlier restart).
#[cfg(unix)]
fn purge_freed_memory_at_once() {
    use std::os::unix::process::CommandExt;
    let missing: Vec<_> = ALLOCATOR_OPTIONS
        .iter()
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .collect();
    if missing.is_empty() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut command = std::process::Command::new(exe);
    command.args(std::env::args_os().skip(1));
    for (name, value) in &missing {
        command.env(name, value);
    }
    // `exec` returns only when it fails; then serve with the defaults.
    let err = command.exec();
    eprintln!("note: could not restart with mimalloc's options {missing:?} ({err}); freed memory returns to the OS lazily");
}

/// Elsewhere the allocator's default stands.
#[cfg(not(unix))]
fn purge_freed_memory_at_once() {}
