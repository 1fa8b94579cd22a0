//! The contracts gpuplan's fuzz targets check, one function per input
//! format, callable from the cargo-fuzz targets in `fuzz/` (nightly) and
//! from this crate's replay test (stable), so CI replays every checked-in
//! seed and crash reproducer without nightly.
//!
//! Each check takes the raw bytes of one input and panics when a contract is
//! broken, not only when the code under test panics:
//! - a rejected input gives an error that names the file (or the flag) and a
//!   line or a field;
//! - an accepted input gives values inside the ranges of `limits.rs`, and the
//!   models run on it give finite, non-negative numbers (the CLI's output
//!   guard, [`gpuplan_core::ensure_finite`]) and keep their invariants
//!   (orderings, sums, round trips, one verb agreeing with another).
//!
//! Non-UTF-8 input is skipped where the CLI reads text (`read_to_string`
//! rejects it before any parser runs).
//!
//! ```
//! // Every target, by the name of its fuzz target and seed folder.
//! assert!(gpuplan_fuzzcheck::TARGETS.iter().any(|(name, _)| *name == "workload_toml"));
//! gpuplan_fuzzcheck::check("parametric_model", b"gpt-h4096-l32-a32");
//! ```

mod bytes;
mod catalog;
mod fixtures;
mod nonllm;
mod plan;
mod text;

pub use bytes::Bytes;
pub use catalog::{
    benchmarks, catalog_checkpoints, catalog_gpu_aliases, catalog_gpus, catalog_mig_profiles,
    catalog_models, catalog_offerings, catalog_regions, hf_config, parametric_model, skypilot_vms,
};
pub use nonllm::{nonllm_components, nonllm_hf_config, service_toml};
pub use plan::{plan_structured, workload_text};
pub use text::{
    calibration, fleet_toml, token_histogram, trace, training_toml, workload_json, workload_toml,
};

/// A fuzz target's check: panics when the input breaks a contract.
pub type Check = fn(&[u8]);

/// Every target: its name (the fuzz target and its folders under
/// `fuzz/seeds/` and `fuzz/regressions/`) and its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("workload_toml", workload_toml),
    ("workload_json", workload_json),
    ("hf_config", hf_config),
    ("skypilot_vms", skypilot_vms),
    ("catalog_gpus", catalog_gpus),
    ("catalog_gpu_aliases", catalog_gpu_aliases),
    ("catalog_mig_profiles", catalog_mig_profiles),
    ("catalog_offerings", catalog_offerings),
    ("catalog_regions", catalog_regions),
    ("catalog_models", catalog_models),
    ("catalog_checkpoints", catalog_checkpoints),
    ("calibration", calibration),
    ("benchmarks", benchmarks),
    ("trace", trace),
    ("token_histogram", token_histogram),
    ("parametric_model", parametric_model),
    ("plan_structured", plan_structured),
    ("training_toml", training_toml),
    ("fleet_toml", fleet_toml),
    ("nonllm_components", nonllm_components),
    ("nonllm_hf_config", nonllm_hf_config),
    ("service_toml", service_toml),
];

/// Runs the check of the target `name` on `data`.
///
/// # Panics
/// When `name` is not a target, or when `data` breaks the target's contract.
pub fn check(name: &str, data: &[u8]) {
    let (_, f) = TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no fuzz target `{name}`"));
    f(data);
}

/// Fails when a report holds a NaN or an infinity (the CLI's output guard).
fn assert_finite<T: serde::Serialize + ?Sized>(what: &str, value: &T) {
    if let Err(field) = gpuplan_core::ensure_finite(value) {
        panic!("{what}: non-finite value in field {field}");
    }
}

/// Fails when `v` is negative, NaN or infinite.
fn assert_non_negative(what: &str, v: f64) {
    assert!(v.is_finite() && v >= 0.0, "{what} = {v}");
}
