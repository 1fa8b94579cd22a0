//! `plan --verify`: simulate the top plans at their peak and re-rank those
//! whose simulated p99s miss the SLO, so no plan is promised on the
//! analytical tails alone.

use crate::config::{Router, SimConfig, SimResult};
use crate::cost::DeploymentCost;
use crate::engine::{EngineConfig, PromptSteps};
use crate::error::SimError;
use crate::fleet::Dynamics;
use crate::sim::simulate;
use crate::traffic::{Stop, SyntheticTraffic, Traffic};
use gpuplan_catalog::Catalog;
use gpuplan_core::{plan_replica, Bucket, Calibration, InferenceWorkload, Plan, SimulatedTails};
use rayon::prelude::*;

/// How to verify.
#[derive(Debug, Clone, Copy)]
pub struct VerifyOptions {
    /// Plans to simulate, from the top.
    pub top: usize,
    /// Requests per simulation.
    pub requests: u64,
    /// Seed (the same for every plan, so they face the same traffic).
    pub seed: u64,
}

/// The workload's token histograms, when it gave them (the validated
/// workload keeps only mean and p99).
#[derive(Debug, Clone, Copy, Default)]
pub struct Histograms<'a> {
    /// `traffic.input_tokens.histogram`.
    pub input: Option<&'a [Bucket]>,
    /// `traffic.output_tokens.histogram`.
    pub output: Option<&'a [Bucket]>,
}

/// Simulates `plan` at the workload's peak.
pub fn simulate_plan(
    catalog: &Catalog,
    w: &InferenceWorkload,
    cal: &Calibration,
    plan: &Plan,
    histograms: Histograms<'_>,
    stop: Stop,
    seed: u64,
) -> Result<SimResult, SimError> {
    let replica = plan_replica(catalog, w, cal, plan).map_err(|e| SimError::Invalid {
        field: "plan".into(),
        value: plan.gpu.clone(),
        expected: e.to_string(),
    })?;
    let traffic = Traffic::Synthetic(SyntheticTraffic::from_workload(
        w,
        histograms.input,
        histograms.output,
        stop,
    )?);
    let narrow = |field: &str, v: u64| {
        u32::try_from(v).map_err(|_| SimError::Invalid {
            field: field.into(),
            value: v.to_string(),
            expected: "at most 2^32 − 1".into(),
        })
    };
    let config = SimConfig {
        replicas: plan.replicas,
        engine: EngineConfig {
            max_num_seqs: narrow("max_num_seqs", plan.max_num_seqs)?,
            max_batched_tokens: narrow("max_batched_tokens", plan.max_batched_tokens)?,
            kv_cache_tokens: replica.memory.kv_cache_tokens,
            block_tokens: narrow("kv_block_tokens", plan.engine.profile().kv_block_tokens)?,
            prompts: PromptSteps::of(plan.engine),
        },
        router: Router::LeastOutstanding,
        warmup_fraction: 0.1,
        slo: w.slo,
        usd_per_hour: Some(plan.usd_per_hour),
        seed,
        dynamics: Dynamics::default(),
    };
    simulate(&DeploymentCost::new(replica.deployment), &config, &traffic)
}

/// What a simulation says about a plan against the workload's SLOs.
pub fn simulated_tails(
    w: &InferenceWorkload,
    r: &SimResult,
    requests: u64,
    seed: u64,
) -> SimulatedTails {
    let slo = w.slo;
    // The replicas kept up: almost every arrival completed within the drain.
    let kept_up = (r.in_flight + r.rejected + r.timed_out) as f64 <= 0.01 * r.arrivals as f64;
    let meets_slo = kept_up
        && slo.ttft_ms_p99.is_none_or(|l| r.ttft_ms.p99 <= l)
        && slo.tpot_ms_p99.is_none_or(|l| r.tpot_ms.p99 <= l)
        && slo.e2e_ms_p99.is_none_or(|l| r.e2e_ms.p99 <= l);
    SimulatedTails {
        requests,
        seed,
        ttft_ms_p99: r.ttft_ms.p99,
        tpot_ms_p99: r.tpot_ms.p99,
        itl_ms_p99: r.itl_ms.p99,
        e2e_ms_p99: r.e2e_ms.p99,
        goodput: r.goodput,
        meets_slo,
    }
}

/// Plans simulated at most, as a multiple of the plans wanted verified.
pub const VERIFY_SEARCH_FACTOR: usize = 4;

/// Simulates plans from the top (in parallel, `options.top` at a time)
/// until `options.top` of them meet every SLO in simulation or
/// `VERIFY_SEARCH_FACTOR × options.top` have been tried, then re-ranks:
/// plans that met the SLO first, in their order, then those that missed
/// (their `simulated.meets_slo` says so), then the unsimulated rest. Ranks
/// are renumbered 1..n. Returns how many simulated plans missed.
pub fn verify_plans(
    catalog: &Catalog,
    w: &InferenceWorkload,
    cal: &Calibration,
    histograms: Histograms<'_>,
    plans: &mut [Plan],
    options: VerifyOptions,
) -> Result<usize, SimError> {
    let limit = (options.top * VERIFY_SEARCH_FACTOR).min(plans.len());
    let mut simulated = 0;
    let mut passed = 0;
    while simulated < limit && passed < options.top {
        let batch = (simulated + options.top).min(limit);
        let results: Vec<Result<SimulatedTails, SimError>> = plans[simulated..batch]
            .par_iter()
            .map(|p| {
                let stop = Stop::Requests(options.requests);
                let r = simulate_plan(catalog, w, cal, p, histograms, stop, options.seed)?;
                Ok(simulated_tails(w, &r, options.requests, options.seed))
            })
            .collect();
        for (p, r) in plans[simulated..batch].iter_mut().zip(results) {
            let tails = r?;
            passed += usize::from(tails.meets_slo);
            p.simulated = Some(tails);
        }
        simulated = batch;
    }
    let missed = simulated - passed;
    // Stable: meeting plans keep their cost order ahead of missing ones.
    plans[..simulated].sort_by_key(|p| p.simulated.as_ref().is_some_and(|s| !s.meets_slo));
    for (i, p) in plans.iter_mut().enumerate() {
        p.rank = i + 1;
    }
    Ok(missed)
}
