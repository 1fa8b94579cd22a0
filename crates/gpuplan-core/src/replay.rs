//! Rebuilds what a [`Plan`] runs on one replica — its [`Deployment`] and its
//! memory (KV-cache tokens) — exactly as the planner built them, so that a
//! simulator or a benchmark can replay the plan.

use crate::calibration::Calibration;
use crate::check::check_replica;
use crate::engine::Engine;
use crate::error::{CoreError, Result};
use crate::layout::Layout;
use crate::memory::{inference_memory, InferenceMemory};
use crate::perf::Deployment;
use crate::plan::{replica_spec, Plan, ReplicaKey};
use crate::workload::InferenceWorkload;
use gpuplan_catalog::{Catalog, GpuSpec, Precision};

/// One replica of a plan: the cost model and the memory the planner used.
#[derive(Debug, Clone)]
pub struct PlanReplica {
    /// The per-iteration cost model of the replica.
    pub deployment: Deployment,
    /// The replica's per-GPU memory; `kv_cache_tokens` is the replica's KV capacity.
    pub memory: InferenceMemory,
}

/// The replica of `plan` for workload `w`, built exactly as the planner's
/// capacity step builds it: the same validation layer (so the same
/// checkpoint and weight kernel), the p99 context, and the engine workspace
/// of the largest batch cap the search reserves.
pub fn plan_replica(
    catalog: &Catalog,
    w: &InferenceWorkload,
    cal: &Calibration,
    plan: &Plan,
) -> Result<PlanReplica> {
    let gpu = catalog
        .gpu(&plan.gpu)
        .map_err(|e| CoreError::invalid("plan.gpu", &plan.gpu, e.to_string()))?;
    let layout = Layout {
        tp: plan.tp,
        pp: plan.pp,
    };
    replica(catalog, w, cal, gpu, plan.precision, layout, plan.engine)
}

/// One replica of `w.model` on `layout` GPUs of `gpu` at `precision`, built
/// as the planner's capacity step builds it (see [`plan_replica`]), served
/// by `engine`.
pub fn replica(
    catalog: &Catalog,
    w: &InferenceWorkload,
    cal: &Calibration,
    gpu: &GpuSpec,
    precision: Precision,
    layout: Layout,
    engine: Engine,
) -> Result<PlanReplica> {
    let key = ReplicaKey {
        gpu: gpu.name.clone(),
        precision,
        layout,
        engine,
    };
    let spec = replica_spec(w, gpu, &key);
    let checked = check_replica(&spec, catalog, w.variant).map_err(|violations| {
        violations
            .into_iter()
            .next()
            .map(CoreError::from)
            .unwrap_or_else(|| CoreError::invalid("plan", &gpu.name, "a replica vLLM can run"))
    })?;
    let deployment = checked.deployment(cal)?.with_beams(w.beam_width);
    let memory = inference_memory(&checked.memory_input())?;
    Ok(PlanReplica { deployment, memory })
}
