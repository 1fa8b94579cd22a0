//! `gpuplan mig`: every service of a fleet plan simulated in its MIG slices
//! at its peak, so no service is promised its SLO on the analytical tails
//! alone. A service's instances are replicas of one slice (the scaled GPU
//! the plan sized them on) behind a least-outstanding router.

use crate::config::{Router, SimConfig};
use crate::cost::DeploymentCost;
use crate::engine::{EngineConfig, PromptSteps, VLLM_BLOCK_TOKENS};
use crate::error::SimError;
use crate::fleet::Dynamics;
use crate::sim::simulate;
use crate::traffic::{Stop, SyntheticTraffic, Traffic};
use crate::verify::{simulated_tails, VerifyOptions};
use gpuplan_catalog::Catalog;
use gpuplan_core::{
    device_deployment, mig_instance_gpu, plan_fleet, Calibration, Fleet, FleetReport,
    InferenceWorkload, MigGeometry, ServiceSlices, SimulatedTails,
};
use rayon::prelude::*;

/// Plans and simulations at most, before the plan is returned with the
/// services that still miss marked.
pub const FLEET_VERIFY_ROUNDS: usize = 4;

/// What a service's utilisation cap is multiplied by when its simulated
/// p99s miss an SLO: one step of headroom per round (0.8 → 0.64 → 0.51).
pub const RESIZE_UTILIZATION_FACTOR: f64 = 0.8;

/// [`plan_fleet`], then [`verify_fleet`]; services that miss an SLO in
/// simulation get a lower utilisation cap and the fleet is planned again, up
/// to [`FLEET_VERIFY_ROUNDS`] times, on the GPU type the first plan chose.
/// Returns the last plan (its `notes` name
/// the re-sized services) and how many services still miss.
pub fn plan_verified_fleet(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    gpu: Option<&str>,
    options: VerifyOptions,
) -> Result<(FleetReport, usize), SimError> {
    let mut fleet = fleet.clone();
    let mut notes = Vec::new();
    // Re-sizing rounds stay on the GPU type the first round chose.
    let mut gpu = gpu.map(str::to_string);
    let mut types = Vec::new();
    let mut round = 1;
    loop {
        let mut report =
            plan_fleet(catalog, cal, &fleet, gpu.as_deref()).map_err(|e| SimError::Invalid {
                field: "gpu".into(),
                value: gpu.clone().unwrap_or_default(),
                expected: e.to_string(),
            })?;
        if !report.feasible {
            report.notes = notes;
            return Ok((report, 0));
        }
        // Later rounds plan one GPU type: keep the first round's comparison,
        // with the chosen type's final figures.
        if round == 1 {
            types = report.gpu_types.clone();
        } else if let Some(t) = types
            .iter_mut()
            .find(|t| Some(&t.gpu) == report.gpu.as_ref())
        {
            t.total_gpus = Some(report.total_gpus);
            t.usd_per_hour = report.purchase.as_ref().map(|b| b.usd_per_hour);
        }
        let missed = verify_fleet(catalog, cal, &fleet, &mut report, options)?;
        if missed == 0 || round == FLEET_VERIFY_ROUNDS {
            report.notes = notes;
            report.gpu_types = types;
            return Ok((report, missed));
        }
        gpu.clone_from(&report.gpu);
        for s in report
            .services
            .iter()
            .filter(|s| s.simulated.as_ref().is_some_and(|t| !t.meets_slo))
        {
            if let Some(w) = fleet.services.iter_mut().find(|w| w.name == s.name) {
                // One step more headroom, never below the smallest cap a workload may set.
                let cap = (w.constraints.max_utilization * RESIZE_UTILIZATION_FACTOR).max(0.01);
                w.constraints.max_utilization = cap;
                notes.push(format!(
                    "{}: missed an SLO in simulation on {} × {}; re-sized at utilisation cap {cap:.2}",
                    s.name, s.fit.instances, s.profile
                ));
            }
        }
        round += 1;
    }
}

/// Simulates every service of `report` (`options.requests` requests each,
/// `options.top` unused) and records the result in its `simulated`; returns
/// how many services missed an SLO in simulation.
pub fn verify_fleet(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    report: &mut FleetReport,
    options: VerifyOptions,
) -> Result<usize, SimError> {
    let Some(gpu_name) = report.gpu.clone() else {
        return Ok(0);
    };
    let invalid = |why: String| SimError::Invalid {
        field: "gpu".into(),
        value: gpu_name.clone(),
        expected: why,
    };
    let gpu = catalog.gpu(&gpu_name).map_err(|e| invalid(e.to_string()))?;
    let geometry = MigGeometry::of(catalog, &gpu_name).map_err(|e| invalid(e.to_string()))?;
    let results: Vec<Result<SimulatedTails, SimError>> = report
        .services
        .par_iter()
        .map(|s| {
            let w = fleet
                .services
                .iter()
                .find(|w| w.name == s.name)
                .ok_or_else(|| invalid(format!("a fleet with service {:?}", s.name)))?;
            let profile = geometry
                .profile_index(&s.profile)
                .map(|i| &geometry.profiles[i])
                .ok_or_else(|| invalid(format!("a GPU with profile {}", s.profile)))?;
            let device = mig_instance_gpu(gpu, &geometry, profile);
            simulate_service(catalog, cal, w, s, &device, options)
        })
        .collect();
    let mut missed = 0;
    for (s, r) in report.services.iter_mut().zip(results) {
        let tails = r?;
        missed += usize::from(!tails.meets_slo);
        s.simulated = Some(tails);
    }
    Ok(missed)
}

/// One service's instances on their slice at the service's peak.
fn simulate_service(
    catalog: &Catalog,
    cal: &Calibration,
    w: &InferenceWorkload,
    s: &ServiceSlices,
    device: &gpuplan_catalog::GpuSpec,
    options: VerifyOptions,
) -> Result<SimulatedTails, SimError> {
    let deployment =
        device_deployment(catalog, cal, w, device, s.fit.precision).map_err(|why| {
            SimError::Invalid {
                field: "service".into(),
                value: s.name.clone(),
                expected: why,
            }
        })?;
    let stop = Stop::Requests(options.requests);
    let traffic = Traffic::Synthetic(SyntheticTraffic::from_workload(w, None, None, stop)?);
    let narrow = |field: &str, v: u64| {
        u32::try_from(v).map_err(|_| SimError::Invalid {
            field: field.into(),
            value: v.to_string(),
            expected: "at most 2^32 − 1".into(),
        })
    };
    let config = SimConfig {
        replicas: s.fit.instances,
        engine: EngineConfig {
            max_num_seqs: narrow("max_num_seqs", s.fit.batch_cap)?,
            max_batched_tokens: narrow("max_batched_tokens", w.max_batched_tokens)?,
            kv_cache_tokens: s.fit.kv_cache_tokens,
            block_tokens: VLLM_BLOCK_TOKENS,
            prompts: PromptSteps::BesideDecodes,
        },
        router: Router::LeastOutstanding,
        warmup_fraction: 0.1,
        slo: w.slo,
        usd_per_hour: None,
        seed: options.seed,
        dynamics: Dynamics::default(),
    };
    let r = simulate(&DeploymentCost::new(deployment), &config, &traffic)?;
    Ok(simulated_tails(w, &r, options.requests, options.seed))
}
