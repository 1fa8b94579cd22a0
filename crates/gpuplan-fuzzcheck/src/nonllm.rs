//! Inputs of the image-generation, speech and encoder models (issue 12):
//! the component table, their published configs and service workloads.

use crate::assert_finite;
use crate::catalog::assert_located;
use crate::fixtures::{self, text};
use crate::text::assert_core_located;
use gpuplan_catalog::Precision;
use gpuplan_catalog::{import_nonllm_config, NonLlmCatalog, NonLlmModel, BUNDLED_NONLLM_MODELS};
use gpuplan_core::nonllm::{
    bundled_factors, default_unit, parse_nonllm_workload, plan_nonllm, size, Setup,
};
use gpuplan_core::WorkloadFormat;

/// Sizes `model` on an H100 at 16 bits: numbers finite, memory growing with batch.
fn model_runs(model: &NonLlmModel) {
    let Ok(gpu) = fixtures::catalog().gpu("H100") else {
        return;
    };
    let factors = bundled_factors();
    let setup = Setup {
        model,
        gpu,
        precision: Precision::Fp16,
        cal: fixtures::calibration(),
        factors: &factors,
    };
    if let Ok(sizing) = size(&setup, &default_unit(model)) {
        assert_finite("sizing", &sizing);
        for pair in sizing.rows.windows(2) {
            assert!(
                pair[1].memory.total_gib >= pair[0].memory.total_gib,
                "{sizing:?}"
            );
        }
    }
}

/// `data/models_nonllm_components.csv` as a user might write it (with the
/// bundled model table): errors name the file and a line or field; parsed
/// models run.
pub fn nonllm_components(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let file = "user/models_nonllm_components.csv";
    match NonLlmCatalog::parse("data/models_nonllm.csv", BUNDLED_NONLLM_MODELS, file, text) {
        Err(e) => assert!(
            e.file.is_some() && (e.line.is_some() || e.field.is_some()),
            "{e}"
        ),
        Ok(c) => c.models().iter().for_each(model_runs),
    }
}

/// A diffusers, Whisper or BERT-style `config.json`: errors name the file
/// and key; an imported model runs.
pub fn nonllm_hf_config(data: &[u8]) {
    let Some(text) = text(data) else { return };
    match import_nonllm_config("config.json", text, "fuzz-model") {
        Err(e) => assert_located(&e, "config.json"),
        Ok(None) => {}
        Ok(Some(m)) => model_runs(&m),
    }
}

/// A service workload (`kind = "inference"` with a non-LLM model): errors
/// name the file or the field; a valid one plans with finite numbers,
/// cheapest first.
pub fn service_toml(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let file = "s.toml";
    match parse_nonllm_workload(file, text, WorkloadFormat::Toml, fixtures::catalog()) {
        Err(e) => assert_core_located(&e, file),
        Ok(w) => {
            let report = plan_nonllm(fixtures::catalog(), &w, fixtures::calibration(), 5);
            assert_finite("service plan", &report);
            for pair in report.plans.windows(2) {
                assert!(pair[0].usd_per_hour <= pair[1].usd_per_hour);
            }
        }
    }
}
