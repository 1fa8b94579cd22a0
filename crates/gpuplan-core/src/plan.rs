//! `plan`: the SLO-aware, cost-optimal deployment search over the catalog.
//!
//! Candidates are offering × precision × TP/PP layout × batch limit. The
//! memory model rejects what does not fit; the performance model and a
//! queueing approximation give each replica's capacity at the SLO; replicas
//! cover the peak; the cost model prices the fleet. Every rejected candidate
//! is counted under a reason with one concrete example.

use crate::calibration::Calibration;
use crate::layout::Layout;
use crate::memory::{inference_memory, EngineLimits, InferenceMemoryInput, MemoryBreakdown};
use crate::perf::{Bound, Deployment};
use crate::queueing::{erlang_c, wait_quantile_s};
use crate::serving::{block_tokens, prefill_under_load_s, steady_state};
use crate::workload::{default_kv_precision, InferenceWorkload};
use gpuplan_catalog::{Catalog, GpuSpec, Offering, Precision};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Batch caps (vLLM `--max-num-seqs`) the search tries.
pub const BATCH_CAPS: [u64; 8] = [8, 16, 32, 64, 128, 256, 512, 1024];

/// Why a candidate was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectReason {
    /// The accelerator has no spec in gpus.csv.
    NoGpuSpec,
    /// The accelerator needs a serving stack the model does not cover (TPU, Neuron ...).
    AcceleratorNotModelled,
    /// The offering is a fraction of a GPU.
    FractionalGpu,
    /// No price the workload may use (no on-demand price and spot not allowed).
    NoPrice,
    /// Provider not in `constraints.providers`.
    ProviderNotAllowed,
    /// Region not matching `constraints.regions`.
    RegionNotAllowed,
    /// Region outside `constraints.geo` / `constraints.countries`.
    OutsideResidency,
    /// GPU not allowed by `constraints.gpus` / `exclude_gpus`.
    GpuNotAllowed,
    /// The GPU cannot run this precision (e.g. FP4 before Blackwell).
    PrecisionUnsupported,
    /// Weights, workspace and one p99 sequence do not fit.
    DoesNotFit,
    /// The replica would need more GPUs than allowed or than the instance has without a fast fabric.
    TooManyGpus,
    /// p99 TTFT cannot meet the SLO at any batch size.
    TtftSlo,
    /// p99 TPOT cannot meet the SLO at any batch size.
    TpotSlo,
    /// p99 end-to-end latency cannot meet the SLO.
    E2eSlo,
    /// The fleet costs more than `max_usd_per_hour`.
    OverBudget,
}

impl RejectReason {
    /// One-line description.
    pub fn describe(self) -> &'static str {
        match self {
            RejectReason::NoGpuSpec => "accelerator has no published spec in the catalog",
            RejectReason::AcceleratorNotModelled => {
                "accelerator needs a non-GPU serving stack (TPU/Neuron/Gaudi): not modelled"
            }
            RejectReason::FractionalGpu => "offering is a fraction of a GPU",
            RejectReason::NoPrice => "no usable price (no on-demand price and spot not allowed)",
            RejectReason::ProviderNotAllowed => "provider not allowed by constraints.providers",
            RejectReason::RegionNotAllowed => "region not allowed by constraints.regions",
            RejectReason::OutsideResidency => "region outside the data-residency constraint",
            RejectReason::GpuNotAllowed => "GPU not allowed by constraints.gpus / exclude_gpus",
            RejectReason::PrecisionUnsupported => "GPU cannot run this precision",
            RejectReason::DoesNotFit => "does not fit in GPU memory",
            RejectReason::TooManyGpus => {
                "layout needs more GPUs than allowed or than one instance has (no fast fabric)"
            }
            RejectReason::TtftSlo => "p99 TTFT above the SLO at every batch size",
            RejectReason::TpotSlo => "p99 TPOT above the SLO at every batch size",
            RejectReason::E2eSlo => "p99 end-to-end latency above the SLO",
            RejectReason::OverBudget => "fleet costs more than constraints.max_usd_per_hour",
        }
    }
}

/// Count and one example of a rejection reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    /// Candidates rejected for this reason.
    pub count: usize,
    /// What the reason means.
    pub description: &'static str,
    /// One concrete example.
    pub example: String,
}

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
    /// Mean request service time (slot occupancy) at a full batch, s.
    pub service_s: f64,
    /// Most requests/s one replica completes at a full batch.
    pub max_requests_per_s_per_replica: f64,
    /// Requests/s one replica sustains within the SLO and utilisation cap.
    pub capacity_requests_per_s_per_replica: f64,
    /// Arrivals per replica at peak, requests/s.
    pub peak_requests_per_s_per_replica: f64,
    /// Erlang-C probability that a request waits for a slot at peak.
    pub p_wait_at_peak: f64,
    /// p99 queueing delay at peak, ms.
    pub queue_wait_ms_p99: f64,
    /// Prefill time of a p99 prompt, ms.
    pub prefill_ms_p99: f64,
    /// Squared coefficients of variation (arrivals, service) used.
    pub ca2: f64,
    /// See `ca2`.
    pub cs2: f64,
    /// Replicas needed for the peak before `min_replicas`.
    pub replicas_for_peak: u32,
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
    /// Whether the GPU family has calibrated efficiency factors.
    pub calibrated: bool,
    /// The derivation, for `--explain`.
    pub derivation: Derivation,
    /// A `vllm serve` command that realises the plan.
    pub vllm_command: String,
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

/// Families served by vLLM/TensorRT-LLM on GPUs, which the model covers.
fn gpu_modelled(gpu: &GpuSpec) -> bool {
    matches!(gpu.vendor.as_str(), "NVIDIA" | "AMD") && gpu.half_tflops().is_some()
}

/// Whether the GPU can run the precision in vLLM.
fn precision_supported(gpu: &GpuSpec, p: Precision) -> Result<(), String> {
    match p {
        Precision::Fp4 if gpu.fp4_tflops.is_none() => Err(format!(
            "{}: no FP4 tensor cores (Blackwell needed)",
            gpu.name
        )),
        Precision::Fp8
            if gpu.fp8_tflops.is_none() && !matches!(gpu.architecture.as_str(), "Ampere") =>
        {
            Err(format!(
                "{}: no FP8 support (FP8 needs Ada/Hopper/Blackwell/CDNA3, or Ampere weight-only)",
                gpu.name
            ))
        }
        _ => Ok(()),
    }
}

/// Per-replica result of the performance side for one (GPU, precision, layout).
#[derive(Debug, Clone)]
struct ReplicaChoice {
    dep: Deployment,
    memory: crate::memory::InferenceMemory,
    batch: u64,
    capacity_rps: f64,
    service_s: f64,
    max_rps: f64,
    prefill99_s: f64,
    tpot_full_ms: f64,
    iteration_full_s: f64,
    prefill_bound: Bound,
    decode_bound: Bound,
    kv_sequences: u64,
}

#[derive(Debug, Clone)]
enum ReplicaOutcome {
    Ok(Box<ReplicaChoice>),
    Rejected(RejectReason, String, Option<f64>),
}

struct Shared<'a> {
    workload: &'a InferenceWorkload,
    cal: &'a Calibration,
    ca2: f64,
    cs2: f64,
}

/// Evaluates one replica configuration: memory, then the best batch cap under the SLO.
fn evaluate_replica(
    s: &Shared<'_>,
    gpu: &GpuSpec,
    precision: Precision,
    layout: Layout,
) -> (ReplicaOutcome, usize) {
    let w = s.workload;
    let kv_precision = w.kv_precision.unwrap_or(default_kv_precision(precision));
    let label = format!(
        "{} × {} (TP{} PP{}), {}",
        gpu.name,
        layout.gpus(),
        layout.tp,
        layout.pp,
        precision
    );
    let context99 = (w.input_tokens.p99 + w.output_tokens.p99).ceil() as u64;
    let memory = match inference_memory(&InferenceMemoryInput {
        model: &w.model,
        gpu,
        layout,
        precision,
        kv_precision,
        context_len: context99,
        limits: EngineLimits {
            memory_utilization: w.memory_utilization,
            max_batched_tokens: w.max_batched_tokens,
            max_num_seqs: 1024,
        },
    }) {
        Ok(m) => m,
        Err(e) => {
            return (
                ReplicaOutcome::Rejected(RejectReason::TooManyGpus, format!("{label}: {e}"), None),
                0,
            )
        }
    };
    if !memory.fits {
        let need = memory.per_gpu.weights_gib
            + memory.per_gpu.activations_gib
            + memory.per_gpu.overhead_gib;
        return (
            ReplicaOutcome::Rejected(
                RejectReason::DoesNotFit,
                format!(
                    "{label}: needs {:.1} GiB per GPU before KV cache, has {:.1} (KV for one {context99}-token sequence: {})",
                    need,
                    memory.budget_gib,
                    if memory.kv_cache_tokens > 0 { format!("{} tokens left", memory.kv_cache_tokens) } else { "none left".into() }
                ),
                None,
            ),
            0,
        );
    }
    let dep = match Deployment::new(&w.model, gpu, layout, precision, kv_precision, s.cal) {
        Ok(d) => d,
        Err(e) => {
            return (
                ReplicaOutcome::Rejected(
                    RejectReason::PrecisionUnsupported,
                    format!("{label}: {e}"),
                    None,
                ),
                0,
            )
        }
    };
    let mean_ctx = block_tokens((w.input_tokens.mean + w.output_tokens.mean).ceil() as u64) as f64;
    let kv_sequences = (memory.kv_cache_tokens as f64 / mean_ctx).floor() as u64;
    let mut caps: Vec<u64> = BATCH_CAPS
        .iter()
        .copied()
        .filter(|b| *b <= kv_sequences)
        .collect();
    if (1..1024).contains(&kv_sequences) && !caps.contains(&kv_sequences) {
        caps.push(kv_sequences);
    }
    if caps.is_empty() {
        return (
            ReplicaOutcome::Rejected(
                RejectReason::DoesNotFit,
                format!(
                    "{label}: KV cache holds {} tokens, less than one mean request",
                    memory.kv_cache_tokens
                ),
                None,
            ),
            0,
        );
    }
    let slo = w.slo;
    let max_util = w.constraints.max_utilization;
    let mut best: Option<ReplicaChoice> = None;
    let mut last_reject: Option<(RejectReason, String, f64)> = None;
    let evaluated = caps.len();
    for &b in &caps {
        let ss = steady_state(
            &dep,
            w.input_tokens.mean,
            w.output_tokens.mean,
            b as f64,
            w.max_batched_tokens as f64,
        );
        let service_s = ss.e2e_ms / 1e3;
        let max_rps = b as f64 / service_s;
        let tpot = ss.tpot_ms;
        // A p99 prompt is prefilled in chunks next to a full batch of decodes.
        let prefill99_s = prefill_under_load_s(
            &dep,
            w.input_tokens.p99,
            w.input_tokens.mean,
            w.output_tokens.mean,
            b as f64,
            w.max_batched_tokens as f64,
        );
        if let Some(limit) = slo.tpot_ms_p99 {
            if tpot > limit {
                let keep = last_reject
                    .as_ref()
                    .is_none_or(|r| r.0 != RejectReason::TpotSlo || tpot < r.2);
                if keep {
                    last_reject = Some((
                        RejectReason::TpotSlo,
                        format!("{label}: TPOT {tpot:.1} ms at batch {b} > {limit} ms"),
                        tpot,
                    ));
                }
                continue;
            }
        }
        let e2e_tail = |lambda: f64| -> (f64, f64) {
            let wait = wait_quantile_s(lambda, service_s, b as f64, s.ca2, s.cs2, 0.99);
            let ttft = wait + prefill99_s;
            (
                ttft,
                ttft + (w.output_tokens.p99 - 1.0).max(0.0) * tpot / 1e3,
            )
        };
        let ok = |lambda: f64| -> bool {
            let (ttft, e2e) = e2e_tail(lambda);
            slo.ttft_ms_p99.is_none_or(|l| ttft * 1e3 <= l)
                && slo.e2e_ms_p99.is_none_or(|l| e2e * 1e3 <= l)
        };
        let hi = max_rps * max_util;
        if !ok(hi * 1e-6) {
            let (ttft, e2e) = e2e_tail(0.0);
            let (reason, msg, v) = if slo.ttft_ms_p99.is_some_and(|l| ttft * 1e3 > l) {
                (
                    RejectReason::TtftSlo,
                    format!(
                        "{label}: p99 prompt alone takes {:.0} ms to prefill > {} ms",
                        ttft * 1e3,
                        slo.ttft_ms_p99.unwrap_or(0.0)
                    ),
                    ttft * 1e3,
                )
            } else {
                (
                    RejectReason::E2eSlo,
                    format!(
                        "{label}: p99 request takes {:.0} ms > {} ms",
                        e2e * 1e3,
                        slo.e2e_ms_p99.unwrap_or(0.0)
                    ),
                    e2e * 1e3,
                )
            };
            let keep = last_reject
                .as_ref()
                .is_none_or(|r| r.0 == RejectReason::TpotSlo || (r.0 == reason && v < r.2));
            if keep {
                last_reject = Some((reason, msg, v));
            }
            continue;
        }
        // Highest arrival rate within the SLO: bisection (latency grows with load).
        let capacity = if ok(hi) {
            hi
        } else {
            let (mut lo, mut up) = (0.0, hi);
            for _ in 0..40 {
                let mid = 0.5 * (lo + up);
                if ok(mid) {
                    lo = mid;
                } else {
                    up = mid;
                }
            }
            lo
        };
        if best
            .as_ref()
            .is_none_or(|x| capacity > x.capacity_rps * (1.0 + 1e-9))
        {
            let prefill = ss.prefill_bound;
            best = Some(ReplicaChoice {
                dep: dep.clone(),
                memory: memory.clone(),
                batch: b,
                capacity_rps: capacity,
                service_s,
                max_rps,
                prefill99_s,
                tpot_full_ms: tpot,
                iteration_full_s: ss.iteration_s,
                prefill_bound: prefill,
                decode_bound: ss.decode_bound,
                kv_sequences,
            });
        }
    }
    match best {
        Some(b) if b.capacity_rps > 0.0 => (ReplicaOutcome::Ok(Box::new(b)), evaluated),
        _ => {
            let (r, msg, v) = last_reject.unwrap_or((
                RejectReason::TtftSlo,
                format!("{label}: no batch size meets the SLO"),
                f64::INFINITY,
            ));
            (ReplicaOutcome::Rejected(r, msg, Some(v)), evaluated)
        }
    }
}

/// Whether `region` of `provider` satisfies the residency constraint.
fn residency_ok(catalog: &Catalog, w: &InferenceWorkload, o: &Offering) -> bool {
    let c = &w.constraints;
    if c.geo.is_empty() && c.countries.is_empty() {
        return true;
    }
    let Some(r) = catalog.region(&o.provider, &o.region) else {
        return false;
    };
    if r.country.is_empty() {
        return false;
    }
    let geo_ok = c.geo.is_empty()
        || c.geo.iter().any(|g| match g.as_str() {
            "EU" => r.eu,
            "EEA" => r.eea,
            "EUROPE" => r.continent == "EU",
            "US" => r.country == "US",
            other => r.continent == other,
        });
    let country_ok = c.countries.is_empty() || c.countries.contains(&r.country);
    geo_ok && country_ok
}

/// Layouts for an instance of `per_instance` GPUs.
fn layouts(per_instance: u32, fast_fabric: bool, max_gpus: u32) -> Vec<(Layout, u32)> {
    let mut out = Vec::new();
    let powers = [1u32, 2, 4, 8, 16];
    for &tp in &powers {
        for &pp in &powers {
            let g = tp * pp;
            if g <= per_instance && g <= max_gpus {
                out.push((Layout { tp, pp }, 1));
            }
        }
    }
    if fast_fabric && per_instance >= 2 {
        for nodes in [2u32, 4] {
            let g = per_instance * nodes;
            if g <= max_gpus {
                out.push((
                    Layout {
                        tp: per_instance,
                        pp: nodes,
                    },
                    nodes,
                ));
            }
        }
    }
    out
}

/// Runs the search.
pub fn plan(
    catalog: &Catalog,
    w: &InferenceWorkload,
    cal: &Calibration,
    options: PlanOptions,
) -> PlanReport {
    let mut rejected: BTreeMap<RejectReason, Rejection> = BTreeMap::new();
    let mut reject = |reason: RejectReason, n: usize, example: &dyn Fn() -> String| {
        let e = rejected.entry(reason).or_insert_with(|| Rejection {
            count: 0,
            description: reason.describe(),
            example: example(),
        });
        e.count += n;
    };
    let c = &w.constraints;
    let region_patterns: Vec<glob::Pattern> = c
        .regions
        .iter()
        .filter_map(|r| glob::Pattern::new(r).ok())
        .collect();
    // 1. Offerings that pass the constraints.
    let mut passing: Vec<(&Offering, &GpuSpec, u32)> = Vec::new();
    for o in catalog.offerings() {
        let Some(gpu_name) = &o.gpu else {
            reject(RejectReason::NoGpuSpec, 1, &|| {
                format!(
                    "{} {} ({}): no spec for `{}`",
                    o.provider, o.instance_type, o.region, o.accelerator
                )
            });
            continue;
        };
        let Ok(gpu) = catalog.gpu(gpu_name) else {
            continue;
        };
        if !c.providers.is_empty() && !c.providers.contains(&o.provider) {
            reject(RejectReason::ProviderNotAllowed, 1, &|| {
                format!("{} {}: provider {}", o.instance_type, o.region, o.provider)
            });
            continue;
        }
        if !region_patterns.is_empty() && !region_patterns.iter().any(|p| p.matches(&o.region)) {
            reject(RejectReason::RegionNotAllowed, 1, &|| {
                format!("{} {}: region {}", o.provider, o.instance_type, o.region)
            });
            continue;
        }
        if !residency_ok(catalog, w, o) {
            reject(RejectReason::OutsideResidency, 1, &|| {
                let where_ = catalog
                    .region(&o.provider, &o.region)
                    .map(|r| format!("{} ({}, {})", r.region, r.country, r.location))
                    .unwrap_or_else(|| format!("{} (location unknown)", o.region));
                format!("{} {}: {where_}", o.provider, o.instance_type)
            });
            continue;
        }
        if (!c.gpus.is_empty() && !c.gpus.contains(&gpu.name)) || c.exclude_gpus.contains(&gpu.name)
        {
            reject(RejectReason::GpuNotAllowed, 1, &|| {
                format!("{} {}: {}", o.provider, o.instance_type, gpu.name)
            });
            continue;
        }
        if !gpu_modelled(gpu) {
            reject(RejectReason::AcceleratorNotModelled, 1, &|| {
                format!(
                    "{} {}: {} ({})",
                    o.provider, o.instance_type, gpu.name, gpu.vendor
                )
            });
            continue;
        }
        if o.accelerator_count < 1.0 || o.accelerator_count.fract() != 0.0 {
            reject(RejectReason::FractionalGpu, 1, &|| {
                format!(
                    "{} {}: {} × {}",
                    o.provider, o.instance_type, o.accelerator_count, gpu.name
                )
            });
            continue;
        }
        let has_price = o.price_per_hour.is_some() || (c.spot && o.spot_price_per_hour.is_some());
        if !has_price {
            reject(RejectReason::NoPrice, 1, &|| {
                format!(
                    "{} {} {}: on-demand price not listed",
                    o.provider, o.instance_type, o.region
                )
            });
            continue;
        }
        passing.push((o, gpu, o.accelerator_count as u32));
    }

    // 2. Distinct (GPU, precision, layout) to evaluate once each.
    let mut keys: Vec<(String, Precision, Layout)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (o, gpu, per_instance) in &passing {
        for &p in &w.precisions {
            for (layout, _) in layouts(*per_instance, o.has_fast_fabric(), c.max_gpus_per_replica) {
                if seen.insert((gpu.name.clone(), p, layout)) {
                    keys.push((gpu.name.clone(), p, layout));
                }
            }
        }
    }
    let ca2 = w.arrival_cv2;
    // Service-time variability from the output length: p99 ≈ mean + 2.33 σ.
    let cs2 = ((w.output_tokens.p99 - w.output_tokens.mean) / (2.326 * w.output_tokens.mean))
        .powi(2)
        .clamp(0.0, 4.0);
    let shared = Shared {
        workload: w,
        cal,
        ca2,
        cs2,
    };
    let outcomes: HashMap<(String, Precision, Layout), (ReplicaOutcome, usize)> = keys
        .par_iter()
        .map(|(g, p, l)| {
            let gpu = catalog.gpu(g).expect("gpu resolved above");
            let outcome = match precision_supported(gpu, *p) {
                Err(msg) => (
                    ReplicaOutcome::Rejected(RejectReason::PrecisionUnsupported, msg, None),
                    0,
                ),
                Ok(()) => match l.check(&w.model) {
                    Err(e) => (
                        ReplicaOutcome::Rejected(
                            RejectReason::TooManyGpus,
                            format!("{} TP{} PP{}: {e}", gpu.name, l.tp, l.pp),
                            None,
                        ),
                        0,
                    ),
                    Ok(()) => evaluate_replica(&shared, gpu, *p, *l),
                },
            };
            ((g.clone(), *p, *l), outcome)
        })
        .collect();

    // 3. Price every offering × precision × layout.
    let mut candidates_evaluated = 0usize;
    let mut plans: Vec<Plan> = Vec::new();
    let mut best_over_budget: Option<f64> = None;
    let mut best_slo: BTreeMap<RejectReason, f64> = BTreeMap::new();
    for (o, gpu, per_instance) in &passing {
        for &p in &w.precisions {
            for (layout, nodes) in
                layouts(*per_instance, o.has_fast_fabric(), c.max_gpus_per_replica)
            {
                let (outcome, n) = &outcomes[&(gpu.name.clone(), p, layout)];
                candidates_evaluated += n.max(&1);
                let choice = match outcome {
                    ReplicaOutcome::Rejected(reason, example, value) => {
                        reject(*reason, 1, &|| example.clone());
                        if let Some(v) = value {
                            let e = best_slo.entry(*reason).or_insert(f64::INFINITY);
                            *e = e.min(*v);
                        }
                        continue;
                    }
                    ReplicaOutcome::Ok(c) => c,
                };
                let mut price_options = Vec::new();
                if let Some(od) = o.price_per_hour {
                    price_options.push((false, od));
                }
                if c.spot {
                    if let Some(sp) = o.spot_price_per_hour {
                        price_options.push((true, sp));
                    }
                }
                for (spot, list) in price_options {
                    let mut plan = price_plan(
                        w,
                        o,
                        gpu,
                        *per_instance,
                        layout,
                        nodes,
                        choice,
                        spot,
                        list,
                        ca2,
                        cs2,
                    );
                    if let Some(r) = catalog.region(&o.provider, &o.region) {
                        plan.location = if r.country.is_empty() {
                            r.location.clone()
                        } else {
                            format!("{}, {}", r.location, r.country)
                        };
                    }
                    if let Some(max) = c.max_usd_per_hour {
                        if plan.usd_per_hour > max {
                            reject(RejectReason::OverBudget, 1, &|| {
                                format!(
                                    "{} {} × {} ({}): ${:.2}/h > ${max:.2}/h",
                                    o.provider,
                                    plan.instances,
                                    o.instance_type,
                                    o.region,
                                    plan.usd_per_hour
                                )
                            });
                            best_over_budget = Some(
                                best_over_budget
                                    .map_or(plan.usd_per_hour, |b: f64| b.min(plan.usd_per_hour)),
                            );
                            continue;
                        }
                    }
                    plans.push(plan);
                }
            }
        }
    }

    // 4. Rank, collapse identical plans across regions, Pareto frontier.
    plans.sort_by(|a, b| {
        a.usd_per_hour
            .total_cmp(&b.usd_per_hour)
            .then_with(|| a.e2e_ms_p99.total_cmp(&b.e2e_ms_p99))
            .then_with(|| a.provider.cmp(&b.provider))
            .then_with(|| a.instance_type.cmp(&b.instance_type))
            .then_with(|| a.region.cmp(&b.region))
    });
    let mut distinct: Vec<Plan> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for p in plans {
        let key = format!(
            "{}|{}|{}|{}|{}|{}|{}|{:.4}",
            p.provider,
            p.instance_type,
            p.tp,
            p.pp,
            p.precision,
            p.spot,
            p.max_num_seqs,
            p.usd_per_hour
        );
        match index.get(&key) {
            Some(&i) => distinct[i].also_in_regions.push(p.region.clone()),
            None => {
                index.insert(key, distinct.len());
                distinct.push(p);
            }
        }
    }
    let mut pareto: Vec<Plan> = Vec::new();
    let mut best_latency = f64::INFINITY;
    for p in &distinct {
        if p.e2e_ms_p99 < best_latency * (1.0 - 1e-9) {
            best_latency = p.e2e_ms_p99;
            pareto.push(p.clone());
        }
    }
    let feasible = distinct.len();
    let mut top: Vec<Plan> = distinct.into_iter().take(options.top.max(1)).collect();
    for (i, p) in top.iter_mut().enumerate() {
        p.rank = i + 1;
    }
    for p in pareto.iter_mut() {
        p.rank = top
            .iter()
            .find(|t| {
                t.vllm_command == p.vllm_command
                    && t.provider == p.provider
                    && t.region == p.region
                    && t.instance_type == p.instance_type
            })
            .map_or(0, |t| t.rank);
    }
    let hint = (feasible == 0).then(|| hint(w, &rejected, &best_slo, best_over_budget));
    PlanReport {
        workload: w.name.clone(),
        model: w.model.id.clone(),
        plans: top,
        pareto,
        rejected,
        feasible,
        candidates_evaluated,
        hint,
    }
}

#[allow(clippy::too_many_arguments)]
fn price_plan(
    w: &InferenceWorkload,
    o: &Offering,
    gpu: &GpuSpec,
    per_instance: u32,
    layout: Layout,
    nodes: u32,
    choice: &ReplicaChoice,
    spot: bool,
    list_price: f64,
    ca2: f64,
    cs2: f64,
) -> Plan {
    let c = &w.constraints;
    let peak = w.peak_requests_per_s;
    // Spot: a preempted instance is down for the replacement time; plan enough
    // replicas that the expected remaining capacity still covers the peak.
    let loss = if spot {
        (w.pricing.spot_preemptions_per_hour * w.pricing.spot_replacement_hours).min(0.5)
    } else {
        0.0
    };
    let per_replica = choice.capacity_rps * (1.0 - loss);
    let replicas_for_peak = (peak / per_replica).ceil().max(1.0) as u32;
    let replicas = replicas_for_peak.max(c.min_replicas);
    let g = layout.gpus();
    let instances = if nodes > 1 {
        replicas * nodes
    } else {
        let per = (per_instance / g).max(1);
        replicas.div_ceil(per)
    };
    let discount = if spot {
        0.0
    } else {
        w.pricing.discounts.get(&o.provider).copied().unwrap_or(0.0)
    };
    let usd_per_hour = f64::from(instances) * list_price * (1.0 - discount);
    let out_tokens_per_hour_peak = peak * w.output_tokens.mean * 3600.0;
    let out_tokens_per_hour_mean = w.mean_requests_per_s * w.output_tokens.mean * 3600.0;
    // Latency at peak with the load spread over the replicas.
    let lambda = peak / f64::from(replicas) / (1.0 - loss).max(0.5);
    let b = choice.batch as f64;
    let wait = wait_quantile_s(lambda, choice.service_s, b, ca2, cs2, 0.99);
    let in_flight = (lambda * choice.service_s).clamp(1.0, b);
    let at_load = steady_state(
        &choice.dep,
        w.input_tokens.mean,
        w.output_tokens.mean,
        in_flight,
        w.max_batched_tokens as f64,
    );
    let tpot = at_load.tpot_ms.min(choice.tpot_full_ms);
    let prefill99 = prefill_under_load_s(
        &choice.dep,
        w.input_tokens.p99,
        w.input_tokens.mean,
        w.output_tokens.mean,
        in_flight,
        w.max_batched_tokens as f64,
    )
    .min(choice.prefill99_s);
    let ttft = (wait + prefill99) * 1e3;
    let e2e = ttft + (w.output_tokens.p99 - 1.0).max(0.0) * tpot;
    let utilization = lambda / choice.max_rps;
    let max_model_len = block_tokens((w.input_tokens.p99 + w.output_tokens.p99).ceil() as u64);
    let location = String::new();
    Plan {
        rank: 0,
        provider: o.provider.clone(),
        region: o.region.clone(),
        location,
        also_in_regions: vec![],
        instance_type: o.instance_type.clone(),
        gpu: gpu.name.clone(),
        gpus_per_instance: per_instance,
        gpus_per_replica: g,
        replicas,
        instances,
        tp: layout.tp,
        pp: layout.pp,
        precision: choice.dep.precision,
        kv_precision: choice.dep.kv_precision,
        spot,
        max_num_seqs: choice.batch,
        max_batched_tokens: w.max_batched_tokens,
        max_model_len,
        memory_utilization: w.memory_utilization,
        usd_per_hour,
        usd_per_million_output_tokens: usd_per_hour / out_tokens_per_hour_peak * 1e6,
        usd_per_million_output_tokens_at_mean: usd_per_hour / out_tokens_per_hour_mean * 1e6,
        ttft_ms_p99: ttft,
        tpot_ms_p99: tpot,
        e2e_ms_p99: e2e,
        utilization,
        headroom: 1.0 - utilization,
        price_source: o.source_snapshot.clone(),
        price_date: o.snapshot_date().map(str::to_string),
        calibrated: choice.dep.calibrated_family,
        derivation: Derivation {
            memory: choice.memory.per_gpu,
            kv_cache_tokens: choice.memory.kv_cache_tokens,
            kv_sequences: choice.kv_sequences,
            prefill_bound: choice.prefill_bound,
            decode_bound: choice.decode_bound,
            iteration_ms_full_batch: choice.iteration_full_s * 1e3,
            service_s: choice.service_s,
            max_requests_per_s_per_replica: choice.max_rps,
            capacity_requests_per_s_per_replica: choice.capacity_rps,
            peak_requests_per_s_per_replica: lambda,
            p_wait_at_peak: erlang_c(b, lambda * choice.service_s),
            queue_wait_ms_p99: wait * 1e3,
            prefill_ms_p99: prefill99 * 1e3,
            ca2,
            cs2,
            replicas_for_peak,
            instances,
            list_usd_per_instance_hour: list_price,
            discount,
            spot_preemptions_per_hour: spot.then_some(w.pricing.spot_preemptions_per_hour),
            spot_capacity_loss: spot.then_some(loss),
        },
        vllm_command: vllm_command(w, choice, max_model_len),
    }
}

/// The `vllm serve` command line that realises a replica.
fn vllm_command(w: &InferenceWorkload, choice: &ReplicaChoice, max_model_len: u64) -> String {
    let repo = w
        .model
        .hf_repo
        .clone()
        .unwrap_or_else(|| w.model.id.clone());
    let mut cmd = format!(
        "vllm serve {repo} --tensor-parallel-size {} --pipeline-parallel-size {} --max-num-seqs {} --max-num-batched-tokens {} --gpu-memory-utilization {:.2} --max-model-len {max_model_len}",
        choice.dep.layout.tp, choice.dep.layout.pp, choice.batch, w.max_batched_tokens, w.memory_utilization
    );
    if choice.dep.kv_precision == Precision::Fp8 {
        cmd.push_str(" --kv-cache-dtype fp8");
    }
    match choice.dep.precision {
        Precision::Fp8 => cmd.push_str(" --quantization fp8"),
        Precision::Int4 => cmd.push_str(" --quantization awq  # use an AWQ/GPTQ INT4 checkpoint"),
        Precision::Int8 => cmd.push_str(" --quantization gptq  # use a W8 checkpoint"),
        Precision::Fp4 => cmd.push_str(" --quantization modelopt_fp4  # use an NVFP4 checkpoint"),
        _ => {}
    }
    cmd
}

fn hint(
    w: &InferenceWorkload,
    rejected: &BTreeMap<RejectReason, Rejection>,
    best: &BTreeMap<RejectReason, f64>,
    over_budget: Option<f64>,
) -> String {
    if let Some(cost) = over_budget {
        return format!(
            "raise constraints.max_usd_per_hour: the cheapest plan that meets the SLO costs ${cost:.2}/h"
        );
    }
    if let Some(v) = best.get(&RejectReason::TpotSlo) {
        return format!(
            "relax slo.tpot_ms_p99 (the best any candidate reaches is {v:.1} ms), or allow faster GPUs / more GPUs per replica"
        );
    }
    if let Some(v) = best.get(&RejectReason::TtftSlo) {
        return format!(
            "relax slo.ttft_ms_p99 (a p99 prompt alone takes at least {v:.0} ms to prefill on the allowed GPUs), or shorten prompts"
        );
    }
    if let Some(v) = best.get(&RejectReason::E2eSlo) {
        return format!("relax slo.e2e_ms_p99 (the best any candidate reaches is {v:.0} ms)");
    }
    if rejected.contains_key(&RejectReason::DoesNotFit) {
        let more = if w.constraints.max_gpus_per_replica < 16 {
            "raise constraints.max_gpus_per_replica, "
        } else {
            ""
        };
        return format!("the model does not fit: {more}allow lower precisions (model.precisions = [\"fp8\", \"int4\"]) or GPUs with more memory");
    }
    let by_count = rejected
        .iter()
        .max_by_key(|(_, r)| r.count)
        .map(|(k, _)| *k);
    match by_count {
        Some(RejectReason::OutsideResidency) => "widen constraints.geo / constraints.countries: no allowed GPU offering in those jurisdictions fits".into(),
        Some(RejectReason::ProviderNotAllowed) => "allow more providers in constraints.providers".into(),
        Some(RejectReason::RegionNotAllowed) => "allow more regions in constraints.regions".into(),
        Some(RejectReason::GpuNotAllowed) => "allow more GPUs in constraints.gpus".into(),
        _ => "relax the constraints: no offering passed them".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_stay_within_the_instance_without_fabric() {
        for (l, nodes) in layouts(8, false, 16) {
            assert!(l.gpus() <= 8);
            assert_eq!(nodes, 1);
        }
        assert!(layouts(8, true, 16)
            .iter()
            .any(|(l, n)| *n == 2 && l.gpus() == 16));
        assert!(layouts(8, true, 8).iter().all(|(l, _)| l.gpus() <= 8));
    }
}
