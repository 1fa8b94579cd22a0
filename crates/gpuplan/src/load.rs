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
    let format = if path.extension().and_then(|e| e.to_str()) == Some("json") {
        WorkloadFormat::Json
    } else {
        WorkloadFormat::Toml
    };
    let raw = parse_workload(&name.to_string(), &text, format)?;
    let hf_model = match &raw.model.hf_config {
        Some(rel) => {
            let p = path.parent().unwrap_or(Path::new(".")).join(rel);
            let id = raw
                .model
                .id
                .clone()
                .unwrap_or_else(|| "hf-model".to_string());
            Some(import_hf_config(&p.display().to_string(), &read(&p)?, &id)?)
        }
        None => None,
    };
    let validated = raw
        .clone()
        .validate(catalog, hf_model)
        .map_err(|e| CliError::bad(format!("{name}: {e}")))?;
    Ok((validated, raw))
}

/// Reads and validates a fleet workload file (`kind = "fleet"`).
pub fn fleet(catalog: &Catalog, path: &Path) -> CliResult<gpuplan_core::Fleet> {
    let text = read(path)?;
    let name = path.display().to_string();
    let format = if path.extension().and_then(|e| e.to_str()) == Some("json") {
        WorkloadFormat::Json
    } else {
        WorkloadFormat::Toml
    };
    let raw = gpuplan_core::parse_fleet(&name, &text, format)?;
    Ok(raw.validate(&name, catalog)?)
}
