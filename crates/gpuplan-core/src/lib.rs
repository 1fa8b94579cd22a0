//! The models of gpuplan: memory, performance and cost, and the deployment
//! search. Pure functions of their inputs: no I/O, no global state.
//!
//! ```
//! use gpuplan_catalog::{Catalog, Precision};
//! use gpuplan_core::{inference_memory, EngineLimits, InferenceMemoryInput, Layout};
//! let catalog = Catalog::embedded().unwrap();
//! let model = catalog.model("llama-3.1-70b").unwrap();
//! let gpu = catalog.gpu("H100").unwrap();
//! let mem = inference_memory(&InferenceMemoryInput {
//!     model: &model,
//!     gpu,
//!     layout: Layout { tp: 2, pp: 1 },
//!     precision: Precision::Bf16,
//!     kv_precision: Precision::Bf16,
//!     context_len: 4096,
//!     limits: EngineLimits::default(),
//! })
//! .unwrap();
//! assert!(mem.fits);
//! ```

mod calibration;
mod check;
mod cross_validation;
mod engine;
mod engine_fit;
mod error;
mod finite;
mod layout;
pub mod limits;
mod memory;
mod mig;
pub mod mlperf_inference;
pub mod nonllm;
mod perf;
mod plan;
mod queueing;
mod replay;
mod serving;
mod tails;
#[cfg(test)]
mod test_support;
pub mod training;
mod training_memory;
mod validate;
mod workload;
mod workload_text;

pub use calibration::{family, precision_class, Calibration, Factor, BUNDLED_CALIBRATION};
pub use check::{
    check_accelerator, check_context, check_engine_limits, check_replica, CheckedReplica,
    ReplicaSpec, Spelling, Violation,
};
pub use cross_validation::{cross_validate, CrossValidation, HeldOutRow, Split};
pub use engine::{
    attention_precision, default_kernel, kernel_for, launch_command, platform, serving_choice,
    serving_choice_on, tensor_tflops, vllm_command, Engine, EngineProfile, Launch, LaunchFile,
    LaunchSettings, Platform, PrefillPolicy, ServingChoice, WeightKernel,
};
pub use engine_fit::{engine_loss, engine_rows, fit_engine_factors, MIN_ENGINE_ROWS};
pub use error::{CoreError, Result};
pub use finite::ensure_finite;
pub use gpuplan_catalog::{CheckpointFormat, Variant};
pub use layout::{weight_bytes_per_gpu, Layout};
pub use memory::{
    activation_workspace_bytes, inference_memory, kv_bytes_per_token_per_gpu, EngineLimits,
    InferenceMemory, InferenceMemoryInput, MemoryBreakdown, COMMUNICATOR_OVERHEAD_GIB,
    DEFAULT_MAX_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS, DEFAULT_MEMORY_UTILIZATION, GIB,
    REPORTED_CAPACITY_FRACTION, RUNTIME_OVERHEAD_GIB,
};
pub use mig::{
    device_deployment, fit_on_device, fractional_gpu, lower_bound, mig_gpu_names, mig_instance_gpu,
    mig_usable_sm_fraction, pack, parse_fleet, parse_placements, plan_fleet, Alternative,
    AlternativeLine, Baseline, DeviceFit, Fleet, FleetReport, GpuAssignment, GpuContents,
    GpuLayout, GpuShapes, GpuTypeResult, InstancePurchase, LayoutViolation, MigGeometry,
    PackMethod, Packing, Placement, ProfileOption, ProfileRejection, RawFleet, ServiceDemand,
    ServiceSlices, SliceAssignment, SliceOption, SliceProfile, EXACT_MAX_COMBINATIONS,
    EXACT_MAX_INSTANCES, EXACT_NODE_BUDGET, FLEET_SERVICES, HEURISTIC_RERUNS, MAX_LAYOUTS,
    MAX_MEMORY_SLICES, MAX_PACKED_PROFILES, TIME_SHARE_STEPS,
};
pub use perf::{roofline, Bound, Deployment, IterationCost, IterationWork};
pub use plan::training::{
    plan_training, plan_training_framework, TrainingPlan, TrainingReport, TRAINING_PLANS_SHOWN,
};
pub use plan::{
    plan, region_in_geo, replica_capacity, Derivation, Plan, PlanOptions, PlanReport, PriceFlag,
    RejectReason, Rejection, ReplicaCapacity, ReplicaConfig, SimulatedTails, Verification,
    BATCH_CAPS, MAX_REPLICAS,
};
pub use queueing::{erlang_c, mean_wait_s, wait_probability, wait_quantile_s};
pub use replay::{plan_replica, replica, PlanReplica};
pub use serving::{
    block_tokens, estimate, max_concurrency, prefill_under_load_s, static_batch, steady_state,
    Estimate, StaticBatch, SteadyState, KV_BLOCK_TOKENS,
};
pub use tails::{lognormal_cv2, TailInputs, TailModel, Tails};
pub use training_memory::{
    training_memory, FineTuneMethod, Optimizer, PipelineSchedule, Recompute, TrainingMemory,
    TrainingMemoryInput, ALLOCATOR_OVERHEAD_FRACTION,
};
// The benchmark harnesses (trtllm-bench settings, bursts, losses) stay
// inside the crate: `validate*` and the fits are the public surface.
pub use validate::{
    calibration_loss, fit_calibration, fit_calibration_report, fit_training_calibration,
    shapes_only_the_harness, source_key, summarize, summarize_by, validate, validate_all,
    validate_with, ErrorSummary, FactorFit, FactorStatus, FitReport, GroupBy, Prediction,
    ValidationReport, ValidationRow, ValidationSummary, FIT_STARTS,
};
pub use workload::{
    default_kv_precision, Bucket, Constraints, InferenceWorkload, PriceTrust, Pricing, RawWorkload,
    Slo, TokenStats, DEFAULT_SPOT_PREEMPTIONS_PER_HOUR, DEFAULT_SPOT_REPLACEMENT_MINUTES,
    GEO_CODES,
};
pub use workload_text::{parse_document, parse_workload, workload_kind, WorkloadFormat};
