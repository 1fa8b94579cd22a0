//! What one service needs on one device (a MIG instance, a fractional GPU, a
//! time-sliced share, a whole GPU): the planner's own capacity search
//! ([`crate::plan`]'s `evaluate_replica`) run on the scaled [`GpuSpec`], so a
//! slice is judged by exactly the rules a whole GPU is.

use crate::calibration::Calibration;
use crate::check::check_replica;
use crate::engine::Engine;
use crate::layout::Layout;
use crate::perf::Deployment;
use crate::plan::MAX_REPLICAS;
use crate::plan::{
    context_p99, evaluate_replica, max_model_len, replica_launch, replica_spec, service_cv2,
    CapacityContext, ReplicaKey,
};
use crate::workload::InferenceWorkload;
use gpuplan_catalog::{Catalog, GpuSpec, Precision};
use serde::Serialize;

/// A service served by identical instances of one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceFit {
    /// Weight precision that needs the fewest instances.
    pub precision: Precision,
    /// Instances for the peak within the SLO, at least the service's min replicas.
    pub instances: u32,
    /// Engine batch cap (vLLM `--max-num-seqs`) of each instance.
    pub batch_cap: u64,
    /// Requests/s one instance carries within every SLO.
    pub capacity_requests_per_s: f64,
    /// Requests/s each instance carries at the peak (peak / instances).
    pub load_requests_per_s: f64,
    /// Weights on the device, GiB.
    pub weights_gib: f64,
    /// Tokens the KV cache holds.
    pub kv_cache_tokens: u64,
    /// Predicted p99 time to first token at the peak, ms.
    pub ttft_p99_ms: f64,
    /// Predicted p99 time per output token at the peak, ms.
    pub tpot_p99_ms: f64,
    /// Predicted p99 end-to-end latency at the peak, ms.
    pub e2e_p99_ms: f64,
    /// The checkpoint each instance serves.
    pub checkpoint: String,
    /// Oldest vLLM release with the weight kernel the prediction assumes.
    pub min_vllm_version: String,
    /// The `vllm serve` command of each instance, with the settings the prediction assumed.
    pub vllm_command: String,
}

/// Sizes `w` on `device` (TP 1, one device per instance) at each of its
/// precisions and keeps the one needing the fewest instances (then the
/// fastest). `Err` carries the nearest miss's reason.
pub fn fit_on_device(
    catalog: &Catalog,
    cal: &Calibration,
    w: &InferenceWorkload,
    device: &GpuSpec,
) -> Result<DeviceFit, String> {
    let cx = CapacityContext {
        workload: w,
        cal,
        ca2: w.arrival_cv2,
        cs2: service_cv2(w),
        prebuilt_engine: false,
    };
    let mut best: Option<DeviceFit> = None;
    let mut reason = String::from("no precision to try");
    for &precision in &w.precisions {
        let key = ReplicaKey {
            gpu: device.name.clone(),
            precision,
            layout: Layout { tp: 1, pp: 1 },
            // MIG slices and fractional GPUs are served with vLLM (the fleet exports run it).
            engine: Engine::Vllm,
        };
        let spec = replica_spec(w, device, &key);
        let checked = match check_replica(&spec, catalog, w.variant) {
            Ok(c) => c,
            Err(violations) => {
                reason = violations
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_else(|| format!("{precision} cannot run on {}", device.name));
                continue;
            }
        };
        let choice = match evaluate_replica(&cx, &key, &checked).0 {
            Ok(c) => c,
            Err(r) => {
                reason = r.example;
                continue;
            }
        };
        // Instances for the peak at each one's capacity within the SLO.
        let needed = (w.peak_requests_per_s / choice.cap.capacity_rps).ceil();
        if needed > MAX_REPLICAS as f64 {
            reason = format!(
                "{precision}: {needed:.0} instances of {:.3} req/s each for {} req/s",
                choice.cap.capacity_rps, w.peak_requests_per_s
            );
            continue;
        }
        let instances = (needed as u32).max(w.constraints.min_replicas);
        // Requests/s each instance carries at the peak.
        let load = w.peak_requests_per_s / f64::from(instances);
        let tails = cx
            .tail_model(&choice.dep, choice.cap.batch, choice.cap.service_s)
            .at(load);
        let fit = DeviceFit {
            precision,
            instances,
            batch_cap: choice.cap.batch,
            capacity_requests_per_s: choice.cap.capacity_rps,
            load_requests_per_s: load,
            weights_gib: choice.memory.per_gpu.weights_gib,
            kv_cache_tokens: choice.memory.kv_cache_tokens,
            ttft_p99_ms: tails.ttft_p99_s * 1e3,
            tpot_p99_ms: tails.tpot_p99_ms,
            e2e_p99_ms: tails.e2e_p99_s * 1e3,
            checkpoint: choice.serving.repo.clone(),
            min_vllm_version: choice.serving.min_vllm_version.clone(),
            vllm_command: replica_launch(w, &choice, max_model_len(w, &choice, context_p99(w)))
                .command,
        };
        let better = best.as_ref().is_none_or(|b| {
            fit.instances < b.instances
                || (fit.instances == b.instances && fit.tpot_p99_ms < b.tpot_p99_ms)
        });
        if better {
            best = Some(fit);
        }
    }
    best.ok_or(reason)
}

/// The [`Deployment`] one instance of `w` runs on `device` at `precision`
/// (the kernel vLLM picks for the checkpoint it serves): what a simulation
/// of the instance costs each engine step with.
pub fn device_deployment(
    catalog: &Catalog,
    cal: &Calibration,
    w: &InferenceWorkload,
    device: &GpuSpec,
    precision: Precision,
) -> Result<Deployment, String> {
    let key = ReplicaKey {
        gpu: device.name.clone(),
        precision,
        layout: Layout { tp: 1, pp: 1 },
        engine: Engine::Vllm,
    };
    let spec = replica_spec(w, device, &key);
    let checked = check_replica(&spec, catalog, w.variant).map_err(|v| {
        v.first()
            .map(ToString::to_string)
            .unwrap_or_else(|| format!("{precision} cannot run on {}", device.name))
    })?;
    checked.deployment(cal).map_err(|e| e.to_string())
}
