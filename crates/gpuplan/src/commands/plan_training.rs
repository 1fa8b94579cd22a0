//! `gpuplan plan TRAIN.toml`: training plans (table, `--json`, `--explain N`).

use super::{check_finite, print_json, table, truncate};
use crate::cli::PlanCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::Catalog;
use gpuplan_core::training::TrainingWorkload;
use gpuplan_core::{plan_training, Calibration, TrainingReport};
use std::path::Path;
use std::time::Instant;

pub fn run(catalog: &Catalog, cal: &Calibration, path: &Path, cmd: &PlanCmd) -> CliResult {
    if cmd.html.is_some() {
        return Err(CliError::bad(format!(
            "--html: the HTML report shows inference plans; {} is a training workload (use --json)",
            path.display()
        )));
    }
    let w = load::training_workload(catalog, path)?;
    let factors = load::training_factors(None)?;
    let started = Instant::now();
    let report = plan_training(catalog, &w, cal, &factors);
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(kind) = cmd.export {
        return export(catalog, &w, path, &report, cmd, kind);
    }
    if let Some(n) = cmd.explain.filter(|_| !report.plans.is_empty()) {
        let Some(p) = report.plans.iter().find(|p| p.rank == n) else {
            return Err(CliError::bad(format!(
                "--explain {n}: expected a plan number from 1 to {}",
                report.plans.len()
            )));
        };
        if cmd.json {
            print_json(p)?;
        } else {
            check_finite(p)?;
            print!("{}", gpuplan_app::training_explain_text(&w, p));
        }
        return Ok(());
    }
    if cmd.json {
        print_json(&report)?;
    } else {
        check_finite(&report)?;
        print_report(&w, &report, elapsed, cmd.top);
    }
    if report.plans.is_empty() {
        Err(CliError::Infeasible)
    } else {
        Ok(())
    }
}

/// Writes plan `--plan N` as SkyPilot, Kubernetes or launch-script files.
fn export(
    catalog: &Catalog,
    w: &TrainingWorkload,
    path: &Path,
    report: &TrainingReport,
    cmd: &PlanCmd,
    kind: crate::cli::ExportArg,
) -> CliResult {
    if report.plans.is_empty() {
        eprintln!(
            "No feasible plan to export. Hint: {}.",
            report
                .hint
                .as_deref()
                .unwrap_or("see `gpuplan plan` for the rejections")
        );
        return Err(CliError::Infeasible);
    }
    let rank = cmd.plan.unwrap_or(1);
    let plan = report
        .plans
        .iter()
        .find(|p| p.rank == rank)
        .ok_or_else(|| {
            CliError::bad(format!(
                "--plan {rank}: expected a plan number from 1 to {}",
                report.plans.len()
            ))
        })?;
    check_finite(plan)?;
    let file = path.display().to_string();
    let ctx = gpuplan_report::TrainingExportContext {
        catalog,
        workload: w,
        workload_file: &file,
        plan,
    };
    let files = gpuplan_report::export_training(&ctx, kind.into())?;
    match &cmd.output {
        Some(dir) => super::export::write_files(dir, &files),
        None => {
            super::export::print_files(&files);
            Ok(())
        }
    }
}

fn print_report(w: &TrainingWorkload, report: &TrainingReport, elapsed: f64, top: usize) {
    println!(
        "{}: {} training of {} on {:.3e} tokens, seq {} × global batch {}{}{}",
        w.name,
        gpuplan_app::training_method_label(w),
        w.model.id,
        w.tokens,
        w.seq_len,
        w.global_batch,
        w.deadline_hours
            .map(|d| format!(", deadline {d} h"))
            .unwrap_or_default(),
        w.max_usd
            .map(|b| format!(", budget ${b}"))
            .unwrap_or_default()
    );
    if report.plans.is_empty() {
        println!("No feasible plan.");
    } else {
        let mut t = table(&[
            "#",
            "GPUs",
            "instances (where)",
            "TP·PP·DP ZeRO mb AC",
            "prec",
            "tok/s/GPU",
            "MFU",
            "hours",
            "total $",
            "notes",
        ]);
        for p in report.plans.iter().take(top) {
            t.add_row(vec![
                p.rank.to_string(),
                format!("{}×{}", p.gpus, p.gpu),
                format!(
                    "{}×{}{} ({} {})",
                    p.nodes,
                    p.instance_type,
                    if p.spot { " spot" } else { "" },
                    p.provider,
                    truncate(&p.region, 14)
                ),
                gpuplan_app::training_layout_label(p),
                p.precision.to_string(),
                format!("{:.0}", p.tokens_per_s_per_gpu),
                format!("{:.0}%", p.mfu * 100.0),
                format!("{:.1}", p.time_to_train_hours),
                format!("{:.0}", p.total_cost_usd),
                p.flags
                    .iter()
                    .map(|f| f.split(':').next().unwrap_or(f).to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
            ]);
        }
        println!("{t}");
        println!(
            "hours = expected wall time with checkpoints (Young/Daly interval), hardware failures, spot preemptions and the data copy; --explain N for the breakdown and launch command."
        );
    }
    if !report.rejected.is_empty() {
        println!("Rejected:");
        for (reason, r) in &report.rejected {
            println!(
                "  {:>5} × {:?}: {} (e.g. {})",
                r.count, reason, r.description, r.example
            );
        }
    }
    if let Some(h) = &report.hint {
        println!("Hint: {h}");
    }
    println!(
        "Searched {} cluster shapes (each over TP × PP × DP × ZeRO × micro-batch × recomputation) in {elapsed:.2} s.",
        report.layouts_evaluated
    );
}
