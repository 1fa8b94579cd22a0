//! What the search returns: ranked plans with their derivations, the Pareto
//! frontier and the rejections.

use super::rejections::{RejectReason, Rejection};
use crate::engine::{Engine, LaunchFile};
use crate::memory::MemoryBreakdown;
use crate::perf::Bound;
use gpuplan_catalog::{AnomalyKind, Precision};
use serde::Serialize;
use std::collections::BTreeMap;

/// How the plan's numbers were derived (for `--explain`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Derivation {
    /// Per-GPU memory breakdown.
    pub memory: MemoryBreakdown,
    /// KV-cache tokens per replica.
    pub kv_cache_tokens: u64,
    /// Sequences of mean length the cache holds.
    pub kv_sequences: u64,
    /// What bounds prefill.
    pub prefill_bound: Bound,
    /// What bounds the steady decode iteration.
    pub decode_bound: Bound,
    /// Iteration time at a full batch, ms.
    pub iteration_ms_full_batch: f64,
    /// Mean request service time (slot occupancy) at a full batch with a
    /// queue standing, over the workload's length distribution, s.
    pub service_s: f64,
    /// Most requests/s one replica completes at a full batch (batch cap /
    /// `service_s`): the rate utilisation is a share of.
    pub max_requests_per_s_per_replica: f64,
    /// Requests/s one replica sustains within the SLO and utilisation cap.
    pub capacity_requests_per_s_per_replica: f64,
    /// Arrivals per replica at peak, requests/s.
    pub peak_requests_per_s_per_replica: f64,
    /// Erlang-C probability that a request waits for a slot at peak.
    pub p_wait_at_peak: f64,
    /// p99 wait for a batch slot at peak, ms.
    pub queue_wait_ms_p99: f64,
    /// Share of the replica's time spent on prefill work at peak.
    pub prefill_utilization: f64,
    /// Mean and p99 wait for prefill compute at peak (prompts queue for the
    /// iteration token budget even when slots are free), ms.
    pub prefill_wait_ms_mean: f64,
    /// See `prefill_wait_ms_mean`.
    pub prefill_wait_ms_p99: f64,
    /// Prefill of the mean and of the p99 prompt beside the decodes, ms.
    pub prefill_ms_mean: f64,
    /// See `prefill_ms_mean`.
    pub prefill_ms_p99: f64,
    /// What the prompts batched with a prompt add to its prefill iteration, ms.
    pub co_batched_prefill_ms: f64,
    /// Mean iteration time at peak (mean time per output token), ms.
    pub tpot_ms_mean: f64,
    /// Squared coefficients of variation (arrivals, service) used.
    pub ca2: f64,
    /// See `ca2`.
    pub cs2: f64,
    /// Replicas needed for the peak before `min_replicas`: the fewest that
    /// meet every SLO together behind the router.
    pub replicas_for_peak: u32,
    /// Replicas the peak would need at one replica's own capacity (each
    /// alone, slots not pooled): `replicas_for_peak` or more.
    pub replicas_for_peak_alone: u32,
    /// Instances billed.
    pub instances: u32,
    /// Price per instance-hour before discount, USD.
    pub list_usd_per_instance_hour: f64,
    /// Discount applied (fraction).
    pub discount: f64,
    /// Spot: expected preemptions per instance-hour assumed.
    pub spot_preemptions_per_hour: Option<f64>,
    /// Spot: expected share of capacity lost to replacements.
    pub spot_capacity_loss: Option<f64>,
}

/// What a discrete-event simulation of the plan at its peak measured
/// (`gpuplan plan --verify`; filled by `gpuplan_sim::verify_plans`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimulatedTails {
    /// Requests simulated (the first 10 % are warm-up, not measured).
    pub requests: u64,
    /// Seed of the simulation.
    pub seed: u64,
    /// Simulated p99 time to first token, ms.
    pub ttft_ms_p99: f64,
    /// Simulated p99 over requests of the time per output token, ms.
    pub tpot_ms_p99: f64,
    /// Simulated p99 gap between two tokens of a stream, ms.
    pub itl_ms_p99: f64,
    /// Simulated p99 end-to-end latency, ms.
    pub e2e_ms_p99: f64,
    /// Share of measured requests that met every SLO.
    pub goodput: f64,
    /// Whether every simulated p99 meets its SLO and the replicas kept up
    /// (fewer than 1 % of arrivals left in flight).
    pub meets_slo: bool,
}

/// Why the price a plan pays looks wrong (`gpuplan catalog anomalies`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriceFlag {
    /// What kind of anomaly.
    pub kind: AnomalyKind,
    /// One sentence with the numbers.
    pub reason: String,
}

/// One ranked deployment plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Rank, 1-based.
    pub rank: usize,
    /// Provider.
    pub provider: String,
    /// Region (the first of `also_in_regions` at the same price).
    pub region: String,
    /// Where the region is.
    pub location: String,
    /// Other regions with the same instance and price.
    pub also_in_regions: Vec<String>,
    /// Instance type.
    pub instance_type: String,
    /// GPU name.
    pub gpu: String,
    /// GPUs per instance.
    pub gpus_per_instance: u32,
    /// GPUs per replica (TP × PP).
    pub gpus_per_replica: u32,
    /// Replicas.
    pub replicas: u32,
    /// Instances billed.
    pub instances: u32,
    /// Billed GPUs that no replica uses (the layout does not divide the instance).
    pub idle_gpus: u32,
    /// Tensor parallel.
    pub tp: u32,
    /// Pipeline parallel.
    pub pp: u32,
    /// Weight precision.
    pub precision: Precision,
    /// KV-cache precision.
    pub kv_precision: Precision,
    /// Spot instances.
    pub spot: bool,
    /// Engine batch cap (vLLM --max-num-seqs).
    pub max_num_seqs: u64,
    /// Engine tokens per iteration (vLLM --max-num-batched-tokens).
    pub max_batched_tokens: u64,
    /// Longest sequence the engine must accept (--max-model-len).
    pub max_model_len: u64,
    /// Engine memory utilisation.
    pub memory_utilization: f64,
    /// Deployment cost, USD per hour (discounts and expected spot preemptions included).
    pub usd_per_hour: f64,
    /// USD per million output tokens at peak load.
    pub usd_per_million_output_tokens: f64,
    /// USD per million output tokens at mean load.
    pub usd_per_million_output_tokens_at_mean: f64,
    /// Predicted p99 time to first token at peak, ms.
    pub ttft_ms_p99: f64,
    /// Predicted p99 time per output token at peak, ms.
    pub tpot_ms_p99: f64,
    /// Predicted p99 gap between two tokens of a stream at peak, ms.
    pub itl_ms_p99: f64,
    /// Predicted p99 end-to-end latency at peak, ms.
    pub e2e_ms_p99: f64,
    /// Share of the replicas' throughput used at peak.
    pub utilization: f64,
    /// 1 − utilisation.
    pub headroom: f64,
    /// Where and when the price was read.
    pub price_source: String,
    /// Date of the price (YYYY-MM-DD), if the source gives one.
    pub price_date: Option<String>,
    /// Why the price this plan pays (on-demand or spot) looks suspicious;
    /// empty when the catalog flags nothing. `pricing.trust = "strict"`
    /// excludes flagged prices.
    pub price_flags: Vec<PriceFlag>,
    /// Whether the GPU family has calibrated efficiency factors.
    pub calibrated: bool,
    /// The derivation, for `--explain`.
    pub derivation: Derivation,
    /// Simulated p99s at peak when the plan was verified (`--verify`), else null.
    pub simulated: Option<SimulatedTails>,
    /// The serving engine the plan runs on (and was predicted for).
    pub engine: Engine,
    /// The command that starts one replica on that engine (`vllm serve`,
    /// `python -m sglang.launch_server`, `trtllm-serve`).
    pub launch_command: String,
    /// Files the launch command reads (TensorRT-LLM's FP8 KV-cache options).
    pub launch_files: Vec<LaunchFile>,
    /// The Hugging Face checkpoint it serves (pre-quantised where one exists).
    pub checkpoint: String,
    /// The weight kernel the engine runs that checkpoint with on this GPU (the one predicted).
    pub weight_kernel: String,
    /// An engine release known to carry that kernel and the launch flags.
    pub min_engine_version: String,
    /// What the operator must know to run it (arm64 hosts, weight-only fallbacks ...).
    pub launch_notes: Vec<String>,
}

/// The search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReport {
    /// Workload name.
    pub workload: String,
    /// Model id.
    pub model: String,
    /// The top plans, cheapest first.
    pub plans: Vec<Plan>,
    /// Feasible plans on the cost-versus-latency frontier (p99 end-to-end), cheapest first.
    pub pareto: Vec<Plan>,
    /// Rejected candidates by reason.
    pub rejected: BTreeMap<RejectReason, Rejection>,
    /// Feasible distinct plans found (before taking the top N).
    pub feasible: usize,
    /// Candidates evaluated (offering × precision × layout × batch cap).
    pub candidates_evaluated: usize,
    /// What to relax when nothing is feasible.
    pub hint: Option<String>,
    /// How the plans were checked in simulation (`plan --verify`), when they were.
    pub verification: Option<Verification>,
}

/// What `plan --verify` did: plans simulated from the top until enough met
/// every SLO.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    /// Plans simulated.
    pub simulated: usize,
    /// Of those, plans whose simulated p99s missed an SLO (moved below those that met them).
    pub missed: usize,
    /// Requests per simulation.
    pub requests: u64,
    /// Why no plan was simulated although `--verify` asked (beam search).
    pub skipped: Option<String>,
}

/// Search options.
#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    /// Plans to return.
    pub top: usize,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions { top: 10 }
    }
}
