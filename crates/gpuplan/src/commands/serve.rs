//! `gpuplan serve`: the HTTP server over the same library.

use crate::cli::ServeCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::Catalog;
use gpuplan_server::{ServerConfig, State};
use std::time::Duration;

pub fn run(catalog: Catalog, cmd: ServeCmd) -> CliResult {
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
