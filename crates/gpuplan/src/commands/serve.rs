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

/// The environment variable of mimalloc's purge delay (ms).
const PURGE_DELAY_ENV: &str = "MIMALLOC_PURGE_DELAY";

/// mimalloc hands freed pages back to the OS only on a thread's next
/// allocation after its purge delay (10 ms), so planning threads that go
/// idle keep the pages of their last plans, and a server's RSS follows its
/// largest recent plans (2,000 plans: idle 99 MiB after 1,000, 175 MiB after
/// 2,000; peak 309 MiB). With the delay at 0 pages go back when freed (idle
/// 38 and 44 MiB; peak 215 MiB; no slower). mimalloc reads the option from
/// the environment once, at start, so `serve` re-executes itself with it set
/// (the same process: same id, same signals). A value the user set is kept.
#[cfg(unix)]
fn purge_freed_memory_at_once() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os(PURGE_DELAY_ENV).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    // `exec` returns only when it fails; then serve with the default delay.
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(PURGE_DELAY_ENV, "0")
        .exec();
    eprintln!("note: could not restart with {PURGE_DELAY_ENV}=0 ({err}); freed memory returns to the OS lazily");
}

/// Elsewhere the allocator's default stands.
#[cfg(not(unix))]
fn purge_freed_memory_at_once() {}
