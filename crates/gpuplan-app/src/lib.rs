//! gpuplan's operations as one façade, the library every front end calls:
//! the CLI (`gpuplan`) and the HTTP server (`gpuplan serve`) add transport
//! and presentation, never logic. Each operation takes a typed request (or a
//! workload document) and returns the typed report whose JSON both front ends
//! print byte for byte, or an [`AppError`] whose kind says bad input,
//! infeasible or internal.
//!
//! ```
//! use gpuplan_app::{load_catalog, to_json, CatalogSources, VerifyOptions, WorkloadInput};
//! use gpuplan_core::{Calibration, WorkloadFormat};
//! let catalog = load_catalog(&CatalogSources::default()).unwrap();
//! let text = r#"
//! name = "doc"
//! kind = "inference"
//! [model]
//! id = "llama-3.1-8b"
//! [traffic]
//! requests_per_s = 2
//! input_tokens = { mean = 500, p99 = 2000 }
//! output_tokens = { mean = 200, p99 = 800 }
//! [constraints]
//! providers = ["aws"]
//! "#;
//! let input = WorkloadInput::from_request(text.into(), WorkloadFormat::Toml);
//! let verify = VerifyOptions { top: 0, requests: 0, seed: 1 };
//! let (_, report) =
//!     gpuplan_app::verified_plan(&catalog, &Calibration::bundled(), &input, 5, verify).unwrap();
//! assert!(!report.plans.is_empty());
//! assert!(to_json(&report).unwrap().contains("\"plans\""));
//! ```

pub mod catalog;
mod error;
mod estimate;
mod estimate_nonllm;
mod examples;
mod export;
mod fit;
mod fleet;
mod plan;
mod replica;
mod simulate;
mod sources;
mod training;
mod validate;

pub use error::{AppError, AppResult, ErrorKind};
pub use estimate::{
    run_estimate, DoesNotFit, EstimateOutcome, EstimateReport, EstimateRequest, MemoryBlock,
};
pub use estimate_nonllm::{
    nonllm_model_named, run_nonllm_estimate, NonLlmEstimateRequest, AUDIO_WINDOW_S, BEAM_WIDTH,
    DENOISING_STEPS, IMAGE_SIDE_PX,
};
pub use examples::{examples, Example, EXAMPLES};
pub use export::{export_plan, ExportFormat, ExportedFile, EXPORT_POOL};
pub use fit::{
    run_fit, training_input, FitReport, FitRequest, Method, RecomputeRequest, TrainingRequest,
};
pub use fleet::{fleet_plan, FleetSettings, DEFAULT_FLEET_VERIFY_REQUESTS};
pub use gpuplan_report::ExportFile;
pub use gpuplan_sim::VerifyOptions;
pub use plan::{
    describe_workload, explain_text, llm_only, load_curves, plan_by_rank, plan_document,
    verified_plan, CurveSlo, LoadCurve, LoadCurves, LoadPoint, PlanDocument, PlanSettings,
    CURVE_POINTS, PLAN_RANKS, VERIFY_PLANS, VERIFY_REQUESTS,
};
pub use replica::{check, parse_precision, FieldNames, ModelRequest, ReplicaRequest};
pub use simulate::{
    build_traffic, dynamics, prepare_plan_simulation, PlanSimulation, PlanSimulationSetup,
    RateCurveSetting, SimulateSettings, DEFAULT_SIM_REQUESTS, SIM_DELAY_S, SIM_DURATION_S,
    SIM_LOSS_RATE, SIM_REPLICAS, SIM_REQUESTS, SIM_SAMPLE_S, SIM_TARGET, SIM_TIMEOUT_S, SIM_USERS,
    SIM_WARMUP,
};
pub use sources::{load_catalog, read, workload_format, CatalogSources, FileAccess, WorkloadInput};
pub use training::{
    training_explain_text, training_layout_label, training_method_label, training_plan_by_rank,
};
pub use validate::{parse_groupings, validate_text, BenchmarkSet};

/// Requests each verification simulation runs by default (`plan --verify-requests`).
pub const DEFAULT_VERIFY_REQUESTS: u64 = 20_000;
/// Plans `plan` simulates by default (`plan --verify`).
pub const DEFAULT_VERIFY_PLANS: usize = 5;
/// Plans `plan` shows by default (`plan --top`).
pub const DEFAULT_TOP: usize = 10;

/// Checks that a report holds no NaN or infinity (JSON would print them as
/// `null`, a table as `NaN`): a bug, reported as an internal error.
pub fn check_finite<T: serde::Serialize>(value: &T) -> AppResult<()> {
    gpuplan_core::ensure_finite(value)
        .map_err(|field| AppError::internal(format!("non-finite value in field {field}")))
}

/// The pretty JSON every front end prints for a report (after [`check_finite`]).
pub fn to_json<T: serde::Serialize>(value: &T) -> AppResult<String> {
    check_finite(value)?;
    serde_json::to_string_pretty(value)
        .map_err(|e| AppError::internal(format!("cannot encode JSON: {e}")))
}
