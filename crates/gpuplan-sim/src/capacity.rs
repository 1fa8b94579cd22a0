//! Capacity at an SLO by simulation: the highest arrival rate at which one
//! replica's simulated p99s meet every SLO of the workload — what MLPerf's
//! Server scenario measures, and what the planner's analytical tail model
//! ([`gpuplan_core::replica_capacity`]) predicts.

use crate::config::{Router, SimConfig};
use crate::cost::DeploymentCost;
use crate::engine::{EngineConfig, PromptSteps};
use crate::error::SimError;
use crate::fleet::Dynamics;
use crate::sim::simulate;
use crate::traffic::{Stop, SyntheticTraffic, Traffic};
use crate::verify::simulated_tails;
use gpuplan_catalog::{Catalog, GpuSpec, Precision};
use gpuplan_core::{replica, Calibration, Engine, InferenceWorkload, Layout};
use serde::Serialize;

/// Bisection steps on the rate: the capacity to 2⁻¹⁰ ≈ 0.1% of the bracket.
pub const CAPACITY_BISECTIONS: u32 = 10;

/// One replica's simulated capacity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SimulatedCapacity {
    /// Highest arrival rate whose simulated p99s meet every SLO, requests/s.
    pub capacity_rps: f64,
    /// Simulated p99 TTFT at that rate, ms.
    pub ttft_ms_p99: f64,
    /// Simulated p99 TPOT at that rate, ms.
    pub tpot_ms_p99: f64,
}

/// What to simulate: one replica of `w.model` on `layout` GPUs of `gpu` at
/// `precision`, its engine capped at `max_num_seqs` sequences.
#[derive(Debug, Clone, Copy)]
pub struct CapacityQuery<'a> {
    pub catalog: &'a Catalog,
    pub workload: &'a InferenceWorkload,
    pub cal: &'a Calibration,
    pub gpu: &'a GpuSpec,
    pub precision: Precision,
    pub layout: Layout,
    /// The serving engine (its step time and KV page size).
    pub engine: Engine,
    pub max_num_seqs: u64,
    /// Upper end of the search, requests/s (the replica's throughput bound).
    pub max_rps: f64,
    /// Requests per simulation.
    pub requests: u64,
    pub seed: u64,
}

/// The highest rate in (0, `max_rps`] at which the simulated replica meets
/// every SLO (bisection, [`CAPACITY_BISECTIONS`] simulations after the
/// bracket check); 0 when even a nearly idle replica misses.
pub fn simulated_capacity(q: &CapacityQuery<'_>) -> Result<SimulatedCapacity, SimError> {
    let invalid = |e: gpuplan_core::CoreError| SimError::Invalid {
        field: "replica".into(),
        value: q.gpu.name.clone(),
        expected: e.to_string(),
    };
    let replica = replica(
        q.catalog,
        q.workload,
        q.cal,
        q.gpu,
        q.precision,
        q.layout,
        q.engine,
    )
    .map_err(invalid)?;
    let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let config = SimConfig {
        replicas: 1,
        engine: EngineConfig {
            max_num_seqs: narrow(q.max_num_seqs),
            max_batched_tokens: narrow(q.workload.max_batched_tokens),
            kv_cache_tokens: replica.memory.kv_cache_tokens,
            block_tokens: narrow(q.engine.profile().kv_block_tokens),
            prompts: PromptSteps::of(q.engine),
        },
        router: Router::LeastOutstanding,
        warmup_fraction: 0.1,
        slo: q.workload.slo,
        usd_per_hour: None,
        seed: q.seed,
        dynamics: Dynamics::default(),
    };
    let cost = DeploymentCost::new(replica.deployment);
    let base = SyntheticTraffic::from_workload(q.workload, None, None, Stop::Requests(q.requests))?;
    let run = |rps: f64| -> Result<(bool, f64, f64), SimError> {
        let traffic = Traffic::Synthetic(SyntheticTraffic {
            requests_per_s: rps,
            ..base.clone()
        });
        let r = simulate(&cost, &config, &traffic)?;
        let t = simulated_tails(q.workload, &r, q.requests, q.seed);
        Ok((t.meets_slo, t.ttft_ms_p99, t.tpot_ms_p99))
    };
    let (mut lo, mut hi) = (0.0, q.max_rps);
    let mut at_lo = (f64::NAN, f64::NAN);
    let top = run(hi)?;
    if top.0 {
        return Ok(SimulatedCapacity {
            capacity_rps: hi,
            ttft_ms_p99: top.1,
            tpot_ms_p99: top.2,
        });
    }
    for _ in 0..CAPACITY_BISECTIONS {
        let mid = 0.5 * (lo + hi);
        let (ok, ttft, tpot) = run(mid)?;
        if ok {
            lo = mid;
            at_lo = (ttft, tpot);
        } else {
            hi = mid;
        }
    }
    Ok(SimulatedCapacity {
        capacity_rps: lo,
        ttft_ms_p99: at_lo.0,
        tpot_ms_p99: at_lo.1,
    })
}
