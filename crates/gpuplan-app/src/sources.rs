//! Where inputs come from: the catalog with its override files, and workload
//! documents with the files they name. The file reads of every front end
//! happen here (the core is pure); a request to the server reads no file.

use crate::error::{AppError, AppResult};
use gpuplan_catalog::{
    import_hf_config, import_skypilot_vms, Catalog, CatalogBuilder, ModelArch, TableKind,
};
use gpuplan_core::{
    parse_document, parse_workload, InferenceWorkload, RawWorkload, WorkloadFormat,
};
use std::path::{Path, PathBuf};

/// Reads a file, naming it in the error.
pub fn read(path: &Path) -> AppResult<String> {
    std::fs::read_to_string(path)
        .map_err(|e| AppError::bad(format!("{}: cannot read: {e}", path.display())))
}

/// The files that extend or replace the bundled catalog tables.
#[derive(Debug, Clone, Default)]
pub struct CatalogSources {
    /// A folder with any of the catalog's CSV files.
    pub dir: Option<PathBuf>,
    /// A gpus.csv.
    pub gpus: Option<PathBuf>,
    /// A cloud_offerings.csv.
    pub offerings: Option<PathBuf>,
    /// A models.csv.
    pub models: Option<PathBuf>,
    /// A SkyPilot vms.csv and the provider whose offerings it replaces.
    pub skypilot_vms: Option<(PathBuf, String)>,
}

/// The bundled catalog with the overrides applied.
pub fn load_catalog(sources: &CatalogSources) -> AppResult<Catalog> {
    let mut b = CatalogBuilder::embedded()?;
    if let Some(dir) = &sources.dir {
        extend_from_dir(&mut b, dir)?;
    }
    for (path, kind) in [
        (&sources.gpus, TableKind::Gpus),
        (&sources.offerings, TableKind::Offerings),
        (&sources.models, TableKind::Models),
    ] {
        if let Some(path) = path {
            b.extend(kind, &path.display().to_string(), &read(path)?)?;
        }
    }
    if let Some((path, provider)) = &sources.skypilot_vms {
        let rows = import_skypilot_vms(&path.display().to_string(), &read(path)?, provider)?;
        b.replace_provider_offerings(provider, rows);
    }
    Ok(b.build()?)
}

/// Extends the builder with every catalog table found in `dir`.
fn extend_from_dir(b: &mut CatalogBuilder, dir: &Path) -> AppResult<()> {
    if !dir.is_dir() {
        return Err(AppError::bad_field(
            "--catalog",
            format!(
                "--catalog {}: not a directory (expected a folder with any of gpus.csv, cloud_offerings.csv, models.csv ...)",
                dir.display()
            ),
        ));
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
        return Err(AppError::bad_field(
            "--catalog",
            format!(
                "--catalog {}: contains none of gpus.csv, gpu_aliases.csv, mig_profiles.csv, cloud_offerings.csv, regions.csv, models.csv, checkpoints.csv",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Whether a workload may name files (an HF `config.json`) beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileAccess {
    /// Relative paths are read from this folder (the CLI: the workload file's folder).
    Relative(PathBuf),
    /// No file is read (the server): a workload naming one is bad input.
    Denied,
}

/// A workload document: its text, syntax, the name errors give it, and
/// what files it may name.
#[derive(Debug, Clone)]
pub struct WorkloadInput {
    /// How errors name the document (a path, or `request body`).
    pub name: String,
    /// The document.
    pub text: String,
    /// TOML or JSON.
    pub format: WorkloadFormat,
    /// Whether `model.hf_config` may be read.
    pub files: FileAccess,
}

impl WorkloadInput {
    /// Reads a workload file: JSON with a `.json` extension, TOML otherwise;
    /// files it names are read beside it.
    pub fn from_file(path: &Path) -> AppResult<Self> {
        Ok(WorkloadInput {
            name: path.display().to_string(),
            text: read(path)?,
            format: workload_format(path),
            files: FileAccess::Relative(path.parent().unwrap_or(Path::new(".")).to_path_buf()),
        })
    }

    /// A document received from a client: it may not name local files.
    pub fn from_request(text: String, format: WorkloadFormat) -> Self {
        WorkloadInput {
            name: "request body".into(),
            text,
            format,
            files: FileAccess::Denied,
        }
    }

    /// The document as a JSON value (a TOML document converted).
    pub fn to_json_value(&self) -> AppResult<serde_json::Value> {
        match self.format {
            WorkloadFormat::Json => serde_json::from_str(&self.text)
                .map_err(|e| AppError::bad(format!("{}: {e}", self.name))),
            WorkloadFormat::Toml => {
                toml::from_str(&self.text).map_err(|e| AppError::bad(format!("{}: {e}", self.name)))
            }
        }
    }

    /// The `kind` the document declares (None when it is not a table; the
    /// full parse then names the error).
    pub fn kind(&self) -> Option<String> {
        gpuplan_core::workload_kind(&self.text, self.format)
    }

    /// Parses and validates an inference workload, keeping the shape as
    /// written (the simulator samples token lengths from its histograms).
    pub fn inference(&self, catalog: &Catalog) -> AppResult<(InferenceWorkload, RawWorkload)> {
        let raw = parse_workload(&self.name, &self.text, self.format)?;
        let hf_model = self.hf_model(
            raw.model.hf_config.as_deref(),
            raw.model.hf_config_inline.as_ref(),
            raw.model.id.as_deref(),
        )?;
        let validated = raw
            .clone()
            .validate(catalog, hf_model)
            .map_err(|e| AppError::from(e).in_source(&self.name))?;
        Ok((validated, raw))
    }

    /// Parses and validates a training workload.
    pub fn training(
        &self,
        catalog: &Catalog,
    ) -> AppResult<gpuplan_core::training::TrainingWorkload> {
        let raw: gpuplan_core::training::RawTrainingWorkload =
            parse_document(&self.name, &self.text, self.format)?;
        let hf_model = self.hf_model(
            raw.model.hf_config.as_deref(),
            raw.model.hf_config_inline.as_ref(),
            raw.model.id.as_deref(),
        )?;
        raw.validate(catalog, hf_model)
            .map_err(|e| AppError::from(e).in_source(&self.name))
    }

    /// Parses and validates a fleet (`kind = "fleet"`).
    pub fn fleet(&self, catalog: &Catalog) -> AppResult<gpuplan_core::Fleet> {
        let raw = gpuplan_core::parse_fleet(&self.name, &self.text, self.format)?;
        Ok(raw.validate(&self.name, catalog)?)
    }

    /// The model `model.hf_config` names (read beside the workload) or
    /// `model.hf_config_inline` holds, imported with `model.id` as its id.
    fn hf_model(
        &self,
        hf_config: Option<&str>,
        inline: Option<&serde_json::Map<String, serde_json::Value>>,
        id: Option<&str>,
    ) -> AppResult<Option<ModelArch>> {
        let id = id.unwrap_or("hf-model");
        match (hf_config, inline) {
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err(AppError::bad_field(
                "model.hf_config_inline",
                format!(
                    "{}: model.hf_config and model.hf_config_inline are both given: expected one of them",
                    self.name
                ),
            )),
            (None, Some(config)) => {
                let text = serde_json::Value::Object(config.clone()).to_string();
                let source = format!("{}: model.hf_config_inline", self.name);
                Ok(Some(import_hf_config(&source, &text, id)?))
            }
            (Some(rel), None) => {
                let FileAccess::Relative(dir) = &self.files else {
                    return Err(AppError::bad_field(
                        "model.hf_config",
                        format!(
                            "{}: model.hf_config = \"{rel}\": the server reads no files; put the config.json's contents in model.hf_config_inline instead",
                            self.name
                        ),
                    ));
                };
                let p = dir.join(rel);
                Ok(Some(import_hf_config(&p.display().to_string(), &read(&p)?, id)?))
            }
        }
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
