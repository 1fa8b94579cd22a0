//! `gpuplan plan W --export k8s|skypilot|engine`: plan N of the ranking
//! `gpuplan plan W` shows (after simulation) as deployment files; the files
//! themselves come from `gpuplan-report`.

use super::check_finite;
use super::plan::verified_plan;
use crate::cli::{ExportArg, PlanCmd};
use crate::error::{CliError, CliResult};
use gpuplan_catalog::Catalog;
use gpuplan_core::Calibration;
use gpuplan_report::{export, ExportContext, ExportError, ExportFile, ExportKind};
use gpuplan_sim::VerifyOptions;
use std::path::Path;

/// Plans ranked for an export: the SkyPilot failover alternatives come from
/// the plans after the one exported. Plans past the simulated ones keep their
/// order, so plan N is the same as in `gpuplan plan`.
const EXPORT_POOL: usize = 50;

impl From<ExportArg> for ExportKind {
    fn from(arg: ExportArg) -> Self {
        match arg {
            ExportArg::K8s => ExportKind::K8s,
            ExportArg::Skypilot => ExportKind::SkyPilot,
            ExportArg::Engine => ExportKind::Engine,
        }
    }
}

impl From<ExportError> for CliError {
    fn from(e: ExportError) -> Self {
        if e.is_internal() {
            CliError::Internal(e.to_string())
        } else {
            CliError::bad(e.to_string())
        }
    }
}

/// Plans the workload, exports plan `--plan N` and prints or writes the files.
pub(crate) fn run(
    catalog: &Catalog,
    cal: &Calibration,
    path: &Path,
    cmd: &PlanCmd,
    kind: ExportArg,
    verify: VerifyOptions,
) -> CliResult {
    let rank = cmd.plan.unwrap_or(1);
    let pool = cmd.top.max(rank).max(EXPORT_POOL);
    let (workload, report) = verified_plan(catalog, cal, path, pool, verify)?;
    if report.plans.is_empty() {
        eprintln!(
            "No feasible plan to export{}",
            report
                .hint
                .as_deref()
                .map(|h| format!(". Hint: {h}."))
                .unwrap_or_else(|| ": `gpuplan plan` lists the rejections.".into())
        );
        return Err(CliError::Infeasible);
    }
    check_finite(&report.plans)?;
    let workload_file = path.display().to_string();
    let ctx = ExportContext {
        catalog,
        workload: &workload,
        workload_file: &workload_file,
        plans: &report.plans,
    };
    let files = export(&ctx, rank, kind.into())?;
    match &cmd.output {
        Some(dir) => write_files(dir, &files),
        None => {
            print_files(&files);
            Ok(())
        }
    }
}

/// Each file to stdout; several are separated by `==> NAME <==` lines.
pub(crate) fn print_files(files: &[ExportFile]) {
    for (i, f) in files.iter().enumerate() {
        if files.len() > 1 {
            if i > 0 {
                println!();
            }
            println!("==> {} <==", f.name);
        }
        print!("{}", f.contents);
    }
}

/// Writes the files into `dir` (created if missing) and lists them.
pub(crate) fn write_files(dir: &Path, files: &[ExportFile]) -> CliResult {
    let fail = |what: &Path, e: std::io::Error| {
        CliError::bad(format!(
            "-o {}: cannot write {}: {e}",
            dir.display(),
            what.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
    for f in files {
        let path = dir.join(&f.name);
        std::fs::write(&path, &f.contents).map_err(|e| fail(&path, e))?;
        #[cfg(unix)]
        if f.name.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| fail(&path, e))?;
        }
        println!("wrote {}", path.display());
    }
    Ok(())
}
