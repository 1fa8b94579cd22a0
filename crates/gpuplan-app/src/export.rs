//! `plan --export`: plan N of a workload's ranking as deployment files
//! (Kubernetes, SkyPilot, engine launch), for either kind of workload.

use crate::error::{AppError, AppResult};
use crate::plan::{plan_document, PlanDocument, PlanSettings};
use crate::sources::WorkloadInput;
use gpuplan_catalog::Catalog;
use gpuplan_core::training::TrainingFactors;
use gpuplan_core::Calibration;
use gpuplan_report::{ExportContext, ExportError, ExportFile, ExportKind, TrainingExportContext};
use serde::{Deserialize, Serialize};

/// Plans ranked for an export: the SkyPilot failover alternatives come from
/// the plans after the one exported. Plans past the simulated ones keep their
/// order, so plan N is the same as in `gpuplan plan`.
pub const EXPORT_POOL: usize = 50;

/// What to export plan N as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// Kubernetes manifests.
    K8s,
    /// A SkyPilot task (with SkyServe for inference).
    Skypilot,
    /// The engine's launch script and config.
    Engine,
}

impl From<ExportFormat> for ExportKind {
    fn from(f: ExportFormat) -> Self {
        match f {
            ExportFormat::K8s => ExportKind::K8s,
            ExportFormat::Skypilot => ExportKind::SkyPilot,
            ExportFormat::Engine => ExportKind::Engine,
        }
    }
}

impl From<ExportError> for AppError {
    fn from(e: ExportError) -> Self {
        if e.is_internal() {
            AppError::internal(e.to_string())
        } else {
            AppError::bad_field("plan", e.to_string())
        }
    }
}

/// One exported file, as the API returns it.
#[derive(Debug, Clone, Serialize)]
pub struct ExportedFile {
    /// File name, without a directory.
    pub name: String,
    /// The whole file.
    pub contents: String,
}

/// Plans the workload and exports plan `rank` (1-based, as `plan` numbers them).
pub fn export_plan(
    catalog: &Catalog,
    cal: &Calibration,
    training: &TrainingFactors,
    input: &WorkloadInput,
    rank: usize,
    format: ExportFormat,
    settings: PlanSettings,
) -> AppResult<Vec<ExportFile>> {
    crate::replica::check_count("plan", rank as u64, crate::PLAN_RANKS)?;
    let settings = PlanSettings {
        top: settings.top.max(rank).max(EXPORT_POOL),
        ..settings
    };
    let doc = plan_document(catalog, cal, training, input, settings)?;
    if doc.is_empty() {
        return Err(AppError::infeasible(format!(
            "No feasible plan to export{}",
            doc.hint()
                .map(|h| format!(". Hint: {h}."))
                .unwrap_or_else(|| ": `gpuplan plan` lists the rejections.".into())
        )));
    }
    match &doc {
        PlanDocument::Service(b) => Err(crate::llm_only(&b.1, "exports")),
        PlanDocument::Inference(b) => {
            let (w, report) = &**b;
            crate::check_finite(&report.plans)?;
            let ctx = ExportContext {
                catalog,
                workload: w,
                workload_file: &input.name,
                plans: &report.plans,
            };
            Ok(gpuplan_report::export(&ctx, rank, format.into())?)
        }
        PlanDocument::Training(b) => {
            let (w, report) = &**b;
            let plan = report
                .plans
                .iter()
                .find(|p| p.rank == rank)
                .ok_or_else(|| {
                    AppError::bad_field(
                        "plan",
                        format!(
                            "--plan {rank}: expected a plan number from 1 to {}",
                            report.plans.len()
                        ),
                    )
                })?;
            crate::check_finite(plan)?;
            let ctx = TrainingExportContext {
                catalog,
                workload: w,
                workload_file: &input.name,
                plan,
            };
            Ok(gpuplan_report::export_training(&ctx, format.into())?)
        }
    }
}
