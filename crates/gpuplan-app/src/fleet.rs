//! Fleets (`kind = "fleet"`): many services packed onto MIG slices, each
//! service simulated in its slices and re-sized when it misses (what
//! `gpuplan mig FLEET` and `POST /v1/mig` answer).

use crate::{AppError, AppResult, WorkloadInput};
use gpuplan_catalog::Catalog;
use gpuplan_core::{plan_fleet, Calibration, FleetReport};
use gpuplan_sim::{plan_verified_fleet, VerifyOptions};

/// Requests per service simulation unless told otherwise.
pub const DEFAULT_FLEET_VERIFY_REQUESTS: u64 = 5_000;

/// How a fleet is planned.
#[derive(Debug, Clone, Default)]
pub struct FleetSettings {
    /// Only this MIG-capable GPU (any alias); `None`: the cheapest that packs.
    pub gpu: Option<String>,
    /// Skip the simulations (analytical p99s only).
    pub no_verify: bool,
    /// Requests per service simulation (default 5,000).
    pub verify_requests: Option<u64>,
}

/// The packed fleet and how many services still miss an SLO in simulation.
/// `Ok` whether feasible or not: the report says.
pub fn fleet_plan(
    catalog: &Catalog,
    cal: &Calibration,
    input: &WorkloadInput,
    settings: &FleetSettings,
) -> AppResult<(FleetReport, usize)> {
    if let Some(kind) = input.kind().filter(|k| k != "fleet") {
        return Err(AppError::bad_field(
            "kind",
            format!(
                "{}: kind = \"{kind}\": a fleet plan takes kind = \"fleet\" workloads; plan this one with `gpuplan plan` (POST /v1/plan)",
                input.name
            ),
        ));
    }
    let requests = settings
        .verify_requests
        .unwrap_or(DEFAULT_FLEET_VERIFY_REQUESTS);
    crate::replica::check_count("verify_requests", requests, crate::VERIFY_REQUESTS)?;
    let fleet = input.fleet(catalog)?;
    let gpu = settings.gpu.as_deref();
    // A GPU that is not MIG-capable is bad input, caught before simulating.
    let first = plan_fleet(catalog, cal, &fleet, gpu)
        .map_err(|e| AppError::bad_field("gpu", format!("--gpu: {e}")))?;
    if settings.no_verify || !first.feasible {
        return Ok((first, 0));
    }
    let options = VerifyOptions {
        top: fleet.services.len(),
        requests,
        seed: 1,
    };
    plan_verified_fleet(catalog, cal, &fleet, gpu, options)
        .map_err(|e| AppError::internal(format!("fleet simulation: {e}")))
}
