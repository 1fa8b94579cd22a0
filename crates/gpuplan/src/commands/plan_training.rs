//! `gpuplan plan TRAIN.toml`: training plans (table, `--json`, `--explain N`).

use super::{check_finite, print_json, table, truncate};
use crate::cli::PlanCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::Catalog;
use gpuplan_core::training::TrainingWorkload;
use gpuplan_core::{plan_training, Calibration, TrainingPlan, TrainingReport};
use std::path::Path;
use std::time::Instant;

pub fn run(catalog: &Catalog, cal: &Calibration, path: &Path, cmd: &PlanCmd) -> CliResult {
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
            explain(&w, p);
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

fn method(w: &TrainingWorkload) -> String {
    match w.method {
        gpuplan_core::FineTuneMethod::Full => "full".into(),
        gpuplan_core::FineTuneMethod::Lora { rank, .. } => format!("LoRA r{rank}"),
        gpuplan_core::FineTuneMethod::Qlora { rank, .. } => format!("QLoRA r{rank}"),
    }
}

fn print_report(w: &TrainingWorkload, report: &TrainingReport, elapsed: f64, top: usize) {
    println!(
        "{}: {} training of {} on {:.3e} tokens, seq {} × global batch {}{}{}",
        w.name,
        method(w),
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
                layout(p),
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

fn layout(p: &TrainingPlan) -> String {
    format!(
        "{}·{}·{} Z{} mb{} {}",
        p.tp,
        p.pp,
        p.dp,
        p.zero_stage,
        p.micro_batch,
        match p.recompute {
            gpuplan_core::Recompute::None => "none",
            gpuplan_core::Recompute::Selective => "sel",
            gpuplan_core::Recompute::Full => "full",
        }
    )
}

fn explain(w: &TrainingWorkload, p: &TrainingPlan) {
    let s = &p.step_breakdown;
    println!(
        "Plan {}: {} × {} ({} × {} {} {}{}), {}",
        p.rank,
        p.gpus,
        p.gpu,
        p.nodes,
        p.instance_type,
        p.provider,
        p.region,
        if p.spot { ", spot" } else { "" },
        p.fabric
    );
    println!(
        "Layout: {} ({} micro-batches per step), {} precision; peak memory {:.1} of {:.1} GiB per GPU",
        layout(p),
        p.micro_batches,
        p.precision,
        p.peak_memory_gib,
        p.gpu_memory_gib
    );
    println!(
        "Step: {:.2} s for {:.0} tokens → {:.0} tokens/s ({:.0} per GPU), {:.0} TFLOP/s per GPU, MFU {:.1}%",
        s.step_s,
        s.tokens_per_step,
        s.tokens_per_s,
        s.tokens_per_s_per_gpu,
        s.tflops_per_gpu,
        s.mfu * 100.0
    );
    println!("Where the step goes:");
    for (name, v) in s.parts() {
        if v > 0.0 {
            println!("  {name:32} {:>9.3} s  {:>5.1}%", v, 100.0 * v / s.step_s);
        }
    }
    println!(
        "  (data-parallel traffic {:.3} s in total, hidden behind compute except the exposed part)",
        s.dp_comm_total_s
    );
    println!(
        "Time: {:.1} h ideal; {:.1} h expected with a checkpoint every {:.0} min ({:.0} s to write), {:.3} interruptions/h",
        p.ideal_hours, p.time_to_train_hours, p.checkpoint_interval_min, p.checkpoint_write_s, p.interruptions_per_hour
    );
    println!(
        "Cost: ${:.2}/h × {:.1} h = ${:.0} compute + {} data ({}) = ${:.0}",
        p.usd_per_hour,
        p.time_to_train_hours,
        p.compute_usd,
        p.egress_usd
            .map(|e| format!("${e:.0}"))
            .unwrap_or_else(|| "unknown".into()),
        p.data_route,
        p.total_cost_usd
    );
    if let Some(r) = p.spot_break_even_preemptions_per_hour {
        println!(
            "Spot pays off below {r:.2} preemptions per instance-hour (assumed {}).",
            w.pricing.spot_preemptions_per_hour
        );
    }
    for f in &p.flags {
        println!("Note: {f}");
    }
    println!("Launch ({}):", gpuplan_core::plan_training_framework(w));
    println!("  {}", p.launch_command);
}
