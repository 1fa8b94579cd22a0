//! What a simulation is given (replicas, engine settings, routing, SLOs,
//! dynamics) and what it measures.

use crate::engine::EngineConfig;
use crate::error::SimError;
use crate::fleet::{Dynamics, TimePoint};
use crate::stats::Percentiles;
use gpuplan_core::Slo;
use serde::Serialize;

/// How arrivals are spread over replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Router {
    /// To the replica with the fewest requests waiting or running (ties: the lowest index).
    #[default]
    LeastOutstanding,
    /// To each replica in turn.
    RoundRobin,
    /// To the replica with the smallest share of its KV cache in use (ties:
    /// fewest outstanding, then the lowest index).
    LeastKv,
}

/// Everything a simulation needs besides the cost model and the traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Replicas behind the router.
    pub replicas: u32,
    /// Each replica's engine settings.
    pub engine: EngineConfig,
    /// How arrivals are spread.
    pub router: Router,
    /// Share of the arrivals (by count, or by time with [`crate::Stop::Duration`])
    /// left out of the statistics while the replicas fill up, in [0, 1).
    pub warmup_fraction: f64,
    /// The targets goodput counts against.
    pub slo: Slo,
    /// Price of the whole deployment, USD per hour, for `cost_usd`.
    pub usd_per_hour: Option<f64>,
    /// Seed of the synthetic traffic and of replica losses (ChaCha8).
    pub seed: u64,
    /// Autoscaling, replica losses, timeouts and time-series sampling
    /// (the default: a fixed fleet that never fails).
    pub dynamics: Dynamics,
}

/// What a simulation measured. Latencies cover the requests that arrived
/// after the warm-up and completed; rates cover the measurement window, from
/// the first measured arrival to the last arrival.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimResult {
    /// Requests that arrived.
    pub arrivals: u64,
    /// Requests that completed.
    pub requests_completed: u64,
    /// Requests still waiting or running when the simulation stopped.
    pub in_flight: u64,
    /// Requests longer than the KV cache can ever hold (the engine refuses them).
    pub rejected: u64,
    /// Requests that waited for a replica to come up past the timeout and gave up.
    pub timed_out: u64,
    /// Restarts of requests whose replica was lost (one request can restart several times).
    pub retried: u64,
    /// Replicas lost (spot preemptions or failures).
    pub replica_losses: u64,
    /// Arrivals after the warm-up, the population of the statistics and goodput.
    pub measured_requests: u64,
    /// Preemptions by recompute (one request can be preempted several times).
    pub preemptions: u64,
    /// Engine steps simulated, all replicas together.
    pub engine_steps: u64,
    /// Time to first token: arrival to the end of the step that sampled it, ms.
    pub ttft_ms: Percentiles,
    /// Time per output token of each request: (e2e − TTFT) / (output − 1), ms.
    pub tpot_ms: Percentiles,
    /// Inter-token gap: each step's duration, once per decoding stream in it, ms
    /// (a preempted stream's wait is not a step gap; it shows in its TPOT).
    pub itl_ms: Percentiles,
    /// End-to-end latency, ms.
    pub e2e_ms: Percentiles,
    /// Arrival to first admission into the running batch, ms.
    pub queue_ms: Percentiles,
    /// Share of measured requests that completed within every SLO of the workload.
    pub goodput: f64,
    /// Completions per second in the measurement window.
    pub throughput_requests_per_s: f64,
    /// Output tokens sampled per second in the measurement window.
    pub output_tokens_per_s: f64,
    /// Share of replica time spent running steps, in the window.
    pub busy_fraction: f64,
    /// Mean running sequences over `max_num_seqs`, in the window.
    pub slot_utilization: f64,
    /// Simulated time until the last completion (or the drain limit), s.
    pub simulated_s: f64,
    /// Replicas at the start (the plan's fleet).
    pub replicas: u32,
    /// Time-averaged replicas billed (up, booting or draining).
    pub mean_replicas: f64,
    /// Most replicas billed at once.
    pub peak_replicas: u32,
    /// Billed replica time, hours.
    pub replica_hours: f64,
    /// The price per replica × billed replica time, when a price was given, USD.
    pub cost_usd: Option<f64>,
    /// The seed.
    pub seed: u64,
    /// Samples of the fleet and its load over time (`Dynamics::sample_every_s`);
    /// not in the JSON result (the CLI writes them to `--timeseries`).
    #[serde(skip)]
    pub timeseries: Vec<TimePoint>,
}

/// Checks a configuration's ranges before a run.
pub(crate) fn check(config: &SimConfig) -> Result<(), SimError> {
    let e = &config.engine;
    if config.replicas == 0 {
        return Err(SimError::invalid("replicas", 0, "at least 1"));
    }
    if e.max_num_seqs == 0 {
        return Err(SimError::invalid("max_num_seqs", 0, "at least 1"));
    }
    if e.max_batched_tokens < e.max_num_seqs {
        // vLLM refuses this too: every running sequence needs a token of the budget.
        return Err(SimError::invalid(
            "max_batched_tokens",
            e.max_batched_tokens,
            format!("at least max_num_seqs ({})", e.max_num_seqs),
        ));
    }
    if e.block_tokens == 0 || e.kv_cache_tokens < u64::from(e.block_tokens) {
        return Err(SimError::invalid(
            "kv_cache_tokens",
            e.kv_cache_tokens,
            format!("at least one block of {} tokens", e.block_tokens),
        ));
    }
    if !(0.0..1.0).contains(&config.warmup_fraction) {
        return Err(SimError::invalid(
            "warmup",
            config.warmup_fraction,
            "a fraction in [0, 1)",
        ));
    }
    config.dynamics.check()?;
    if let Some(p) = config.usd_per_hour {
        if !(p.is_finite() && p >= 0.0) {
            return Err(SimError::invalid("usd_per_hour", p, "a number >= 0"));
        }
    }
    Ok(())
}
