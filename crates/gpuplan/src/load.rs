//! Reading user files (the I/O edge), through the façade's sources: catalog
//! overrides, workload files, models from HF configs, calibration tables.

use crate::cli::{CatalogArgs, ModelArgs};
use crate::error::{CliError, CliResult};
pub use gpuplan_app::workload_format;
use gpuplan_app::{CatalogSources, WorkloadInput};
use gpuplan_catalog::{import_hf_config, Catalog, ModelArch};
use std::path::Path;

/// Reads a file, naming it in the error.
pub fn read(path: &Path) -> CliResult<String> {
    Ok(gpuplan_app::read(path)?)
}

/// The bundled catalog with the user's overrides applied.
pub fn catalog(args: &CatalogArgs) -> CliResult<Catalog> {
    Ok(gpuplan_app::load_catalog(&catalog_sources(args))?)
}

/// The catalog override files the flags name.
pub fn catalog_sources(args: &CatalogArgs) -> CatalogSources {
    CatalogSources {
        dir: args.catalog.clone(),
        gpus: args.gpus.clone(),
        offerings: args.offerings.clone(),
        models: args.models.clone(),
        skypilot_vms: match (&args.skypilot_vms, &args.skypilot_provider) {
            (Some(path), Some(provider)) => Some((path.clone(), provider.clone())),
            _ => None,
        },
    }
}

/// The model named by `--model` or built from `--hf-config`.
pub fn model(catalog: &Catalog, args: &ModelArgs) -> CliResult<ModelArch> {
    match (&args.model, &args.hf_config) {
        (_, Some(path)) => {
            let id = path
                .parent()
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .unwrap_or("hf-model")
                .to_string();
            let id = args.model.clone().unwrap_or(id);
            Ok(import_hf_config(
                &path.display().to_string(),
                &read(path)?,
                &id,
            )?)
        }
        (Some(name), None) => Ok(catalog
            .model(name)
            .map_err(|e| CliError::bad(format!("--model: {e}")))?),
        (None, None) => Err(CliError::bad("--model or --hf-config is required")),
    }
}

/// The calibration table: the user's file or the bundled one.
pub fn calibration(path: Option<&Path>) -> CliResult<gpuplan_core::Calibration> {
    match path {
        Some(p) => gpuplan_core::Calibration::parse(&read(p)?)
            .map_err(|e| CliError::bad(format!("{}: {e}", p.display()))),
        None => Ok(gpuplan_core::Calibration::bundled()),
    }
}

/// Reads and validates a workload file, and keeps the shape as written
/// (the simulator samples token lengths from its histograms).
pub fn workload_with_raw(
    catalog: &Catalog,
    path: &Path,
) -> CliResult<(gpuplan_core::InferenceWorkload, gpuplan_core::RawWorkload)> {
    Ok(WorkloadInput::from_file(path)?.inference(catalog)?)
}

/// The image-generation, speech or encoder model `--model` names or
/// `--hf-config` describes, if it is one (None for LLMs).
pub fn nonllm_model(args: &ModelArgs) -> CliResult<Option<gpuplan_catalog::NonLlmModel>> {
    if let Some(path) = &args.hf_config {
        let id = args.model.clone().unwrap_or_else(|| "hf-model".to_string());
        let text = read(path)?;
        return Ok(gpuplan_catalog::import_nonllm_config(
            &path.display().to_string(),
            &text,
            &id,
        )?);
    }
    let Some(id) = &args.model else {
        return Ok(None);
    };
    let catalog = gpuplan_catalog::NonLlmCatalog::embedded()?;
    Ok(catalog.model(id).cloned())
}

/// Stops with bad input when the workload file names an image-generation,
/// speech or encoder model: `verb` models LLM engines only.
pub fn reject_nonllm(path: &Path, verb: &str) -> CliResult {
    let text = read(path)?;
    match gpuplan_core::nonllm::nonllm_model_of(&text, workload_format(path)) {
        None => Ok(()),
        Some(m) => Err(CliError::bad(format!(
            "{}: model `{}` is a {} model: `gpuplan {verb}` covers LLM engines only; \
             plan it with `gpuplan plan {}` (no --summary, --export or simulation yet)",
            path.display(),
            m.id,
            m.family.as_str(),
            path.display()
        ))),
    }
}

/// The `kind` a workload file declares (None when unreadable as a table; the
/// full parse then names the error).
pub fn workload_kind(path: &Path) -> CliResult<Option<String>> {
    Ok(WorkloadInput::from_file(path)?.kind())
}

/// Reads and validates a training workload file.
pub fn training_workload(
    catalog: &Catalog,
    path: &Path,
) -> CliResult<gpuplan_core::training::TrainingWorkload> {
    Ok(WorkloadInput::from_file(path)?.training(catalog)?)
}

/// The training calibration table: the user's file or the bundled one.
pub fn training_factors(path: Option<&Path>) -> CliResult<gpuplan_core::training::TrainingFactors> {
    match path {
        Some(p) => gpuplan_core::training::TrainingFactors::parse(&read(p)?)
            .map_err(|e| CliError::bad(format!("{}: {e}", p.display()))),
        None => Ok(gpuplan_core::training::TrainingFactors::bundled()),
    }
}

/// Stops with bad input when the workload file declares a `kind` the verb
/// does not take, naming the verb that does (unknown kinds fall through to
/// the validation's own message).
pub fn expect_kind(path: &Path, verb: &str, takes: &[&str]) -> CliResult {
    let Some(kind) = workload_kind(path)? else {
        return Ok(());
    };
    if takes.contains(&kind.as_str()) {
        return Ok(());
    }
    let other = match kind.as_str() {
        "inference" | "training" => "gpuplan plan",
        "fleet" => "gpuplan mig",
        _ => return Ok(()),
    };
    Err(CliError::bad(format!(
        "{}: kind = \"{kind}\": `gpuplan {verb}` takes {} workloads; run `{other} {}`",
        path.display(),
        takes.join(" or "),
        path.display()
    )))
}
