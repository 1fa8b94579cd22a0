//! Reading user files (the I/O edge): catalog overrides, models from HF configs.

use crate::cli::{CatalogArgs, ModelArgs};
use crate::error::{CliError, CliResult};
use gpuplan_catalog::{
    import_hf_config, import_skypilot_vms, Catalog, CatalogBuilder, ModelArch, TableKind,
};
use gpuplan_core::{parse_workload, WorkloadFormat};
use std::path::Path;

/// Reads a file, naming it in the error.
pub fn read(path: &Path) -> CliResult<String> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::bad(format!("{}: cannot read: {e}", path.display())))
}

/// The bundled catalog with the user's overrides applied.
pub fn catalog(args: &CatalogArgs) -> CliResult<Catalog> {
    let mut b = CatalogBuilder::embedded()?;
    if let Some(dir) = &args.catalog {
        if !dir.is_dir() {
            return Err(CliError::bad(format!(
                "--catalog {}: not a directory (expected a folder with any of gpus.csv, cloud_offerings.csv, models.csv ...)",
                dir.display()
            )));
        }
        let mut found = 0;
        for kind in TableKind::ALL {
            let path = dir.join(kind.file_name());
            if path.exists() {
                b.extend(kind, &path.display().to_string(), &read(&path)?)?;
                found += 1;
            }
        }
        if found == 0 {
            return Err(CliError::bad(format!(
                "--catalog {}: contains none of gpus.csv, gpu_aliases.csv, mig_profiles.csv, cloud_offerings.csv, regions.csv, models.csv, checkpoints.csv",
                dir.display()
            )));
        }
    }
    for (path, kind) in [
        (&args.gpus, TableKind::Gpus),
        (&args.offerings, TableKind::Offerings),
        (&args.models, TableKind::Models),
    ] {
        if let Some(path) = path {
            b.extend(kind, &path.display().to_string(), &read(path)?)?;
        }
    }
    if let (Some(path), Some(provider)) = (&args.skypilot_vms, &args.skypilot_provider) {
        let rows = import_skypilot_vms(&path.display().to_string(), &read(path)?, provider)?;
        b.replace_provider_offerings(provider, rows);
    }
    Ok(b.build()?)
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
/// (the simulator samples token lengths from its histograms, which the
/// validated workload reduces to mean and p99).
pub fn workload_with_raw(
    catalog: &Catalog,
    path: &Path,
) -> CliResult<(gpuplan_core::InferenceWorkload, gpuplan_core::RawWorkload)> {
    let text = read(path)?;
    let name = path.display();
    let raw = parse_workload(&name.to_string(), &text, workload_format(path))?;
    let hf_model = hf_model(
        path,
        raw.model.hf_config.as_deref(),
        raw.model.id.as_deref(),
    )?;
    let validated = raw
        .clone()
        .validate(catalog, hf_model)
        .map_err(|e| CliError::bad(format!("{name}: {e}")))?;
    Ok((validated, raw))
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

/// The syntax of a workload file, from its extension.
pub fn workload_format(path: &Path) -> WorkloadFormat {
    if path.extension().and_then(|e| e.to_str()) == Some("json") {
        WorkloadFormat::Json
    } else {
        WorkloadFormat::Toml
    }
}

/// The `kind` a workload file declares (None when unreadable as a table; the
/// full parse then names the error).
pub fn workload_kind(path: &Path) -> CliResult<Option<String>> {
    let text = read(path)?;
    Ok(gpuplan_core::workload_kind(&text, workload_format(path)))
}

/// Reads and validates a training workload file.
pub fn training_workload(
    catalog: &Catalog,
    path: &Path,
) -> CliResult<gpuplan_core::training::TrainingWorkload> {
    let text = read(path)?;
    let name = path.display().to_string();
    let raw: gpuplan_core::training::RawTrainingWorkload =
        gpuplan_core::parse_document(&name, &text, workload_format(path))?;
    let hf_model = hf_model(
        path,
        raw.model.hf_config.as_deref(),
        raw.model.id.as_deref(),
    )?;
    raw.validate(catalog, hf_model)
        .map_err(|e| CliError::bad(format!("{name}: {e}")))
}

/// The training calibration table: the user's file or the bundled one.
pub fn training_factors(path: Option<&Path>) -> CliResult<gpuplan_core::training::TrainingFactors> {
    match path {
        Some(p) => gpuplan_core::training::TrainingFactors::parse(&read(p)?)
            .map_err(|e| CliError::bad(format!("{}: {e}", p.display()))),
        None => Ok(gpuplan_core::training::TrainingFactors::bundled()),
    }
}

/// The model a workload's `model.hf_config` names (relative to the workload
/// file), read and imported with `model.id` as its id.
fn hf_model(
    workload: &Path,
    hf_config: Option<&str>,
    id: Option<&str>,
) -> CliResult<Option<gpuplan_catalog::ModelArch>> {
    let Some(rel) = hf_config else {
        return Ok(None);
    };
    let p = workload.parent().unwrap_or(Path::new(".")).join(rel);
    let id = id.unwrap_or("hf-model");
    Ok(Some(import_hf_config(
        &p.display().to_string(),
        &read(&p)?,
        id,
    )?))
}

/// Reads and validates a fleet workload file (`kind = "fleet"`).
pub fn fleet(catalog: &Catalog, path: &Path) -> CliResult<gpuplan_core::Fleet> {
    let text = read(path)?;
    let name = path.display().to_string();
    let raw = gpuplan_core::parse_fleet(&name, &text, workload_format(path))?;
    Ok(raw.validate(&name, catalog)?)
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
