//! A discrete-event simulator of LLM serving: replicas running vLLM V1's
//! continuous-batching scheduler (chunked prefill, paged KV cache,
//! preemption by recompute), fed by Poisson, Gamma or recorded traffic and
//! routed by least outstanding requests or round-robin. Each engine step
//! costs what [`gpuplan_core::Deployment::iteration`] says for that step's
//! actual mix of decodes and prefill chunks.
//!
//! It checks the planner's analytical tails: latencies are streamed into HDR
//! histograms (memory flat in the number of requests) and reported as
//! percentiles, with goodput against the workload's SLOs. The traffic is
//! drawn from ChaCha8 streams, so a seed always gives the same result.
//!
//! ```
//! use gpuplan_catalog::{Catalog, Precision};
//! use gpuplan_core::{inference_memory, Calibration, Deployment, EngineLimits,
//!     InferenceMemoryInput, Layout, Slo, TokenStats};
//! use gpuplan_sim::{simulate, ArrivalProcess, DeploymentCost, Dynamics, EngineConfig, PromptSteps, Router,
//!     SimConfig, Stop, SyntheticTraffic, TokenLengths, Traffic, VLLM_BLOCK_TOKENS};
//!
//! let catalog = Catalog::embedded().unwrap();
//! let model = catalog.model("llama-3.1-8b").unwrap();
//! let gpu = catalog.gpu("H100").unwrap();
//! let layout = Layout { tp: 1, pp: 1 };
//! let (p, kv) = (Precision::Fp8, Precision::Fp8);
//! let dep = Deployment::new(&model, gpu, layout, p, kv, &Calibration::bundled()).unwrap();
//! let memory = inference_memory(&InferenceMemoryInput {
//!     model: &model, gpu, layout, precision: p, kv_precision: kv,
//!     context_len: 4096, limits: EngineLimits::default(),
//! }).unwrap();
//! let config = SimConfig {
//!     replicas: 2,
//!     engine: EngineConfig {
//!         max_num_seqs: 64,
//!         max_batched_tokens: 8192,
//!         kv_cache_tokens: memory.kv_cache_tokens,
//!         block_tokens: VLLM_BLOCK_TOKENS,
//!         prompts: PromptSteps::BesideDecodes,
//!     },
//!     router: Router::LeastOutstanding,
//!     warmup_fraction: 0.1,
//!     slo: Slo { ttft_ms_p99: Some(500.0), ..Slo::default() },
//!     usd_per_hour: Some(8.0),
//!     seed: 7,
//!     dynamics: Dynamics::default(),
//! };
//! let traffic = Traffic::Synthetic(SyntheticTraffic {
//!     requests_per_s: 10.0,
//!     rate_curve: None,
//!     clients: None,
//!     arrival: ArrivalProcess::Poisson,
//!     input_tokens: TokenLengths::fit(TokenStats { mean: 1000.0, p99: 4000.0 }),
//!     output_tokens: TokenLengths::fit(TokenStats { mean: 200.0, p99: 600.0 }),
//!     max_context_tokens: 131_072,
//!     stop: Stop::Requests(2_000),
//! });
//! let result = simulate(&DeploymentCost::new(dep), &config, &traffic).unwrap();
//! assert_eq!(
//!     result.arrivals,
//!     result.requests_completed + result.in_flight + result.rejected + result.timed_out
//! );
//! assert!(result.ttft_ms.p99 > result.ttft_ms.p50);
//! ```

mod capacity;
mod config;
mod cost;
mod engine;
mod error;
mod fleet;
mod fleet_verify;
mod rate;
mod sim;
mod stats;
mod traffic;
mod verify;

pub use capacity::{simulated_capacity, CapacityQuery, SimulatedCapacity, CAPACITY_BISECTIONS};
pub use config::{Router, SimConfig, SimResult};
pub use cost::{CostModel, DeploymentCost};
pub use engine::{EngineConfig, PromptSteps, VLLM_BLOCK_TOKENS};
pub use error::SimError;
pub use fleet::{
    scale_up_delay_s, Autoscale, Dynamics, Failures, TimePoint, ENGINE_WARMUP_S,
    HPA_SCALE_DOWN_STABILIZATION_S, HPA_SYNC_PERIOD_S, IMAGE_PULL_S, NODE_PROVISION_S,
    WEIGHT_LOAD_GIB_PER_S,
};
pub use fleet_verify::{
    plan_verified_fleet, verify_fleet, FLEET_VERIFY_ROUNDS, RESIZE_UTILIZATION_FACTOR,
};
pub use rate::{RateCurve, DAY_S};
pub use sim::{simulate, simulate_with_progress, Progress};
pub use stats::Percentiles;
pub use traffic::{
    check_simulable, ArrivalProcess, ClosedLoop, Stop, SyntheticTraffic, TokenLengths, Trace,
    TraceRow, Traffic,
};
pub use verify::{
    simulate_plan, simulated_tails, verify_plans, Histograms, VerifyOptions, VERIFY_SEARCH_FACTOR,
};
