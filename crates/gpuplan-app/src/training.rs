//! Training plans in words: the layout label, the method, and the
//! derivation of one plan (`gpuplan plan TRAIN.toml --explain N`).

use crate::error::{AppError, AppResult};
use gpuplan_core::training::TrainingWorkload;
use gpuplan_core::{TrainingPlan, TrainingReport};
use std::fmt::Write as _;

/// Appends one line to a String (writing to a String cannot fail).
macro_rules! line {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Training plan `rank` of a report, or bad input naming `flag`.
pub fn training_plan_by_rank<'a>(
    report: &'a TrainingReport,
    rank: usize,
    flag: &str,
) -> AppResult<&'a TrainingPlan> {
    report.plans.iter().find(|p| p.rank == rank).ok_or_else(|| {
        AppError::bad_field(
            flag,
            format!(
                "{flag} {rank}: expected a plan number from 1 to {}",
                report.plans.len()
            ),
        )
    })
}

/// The fine-tuning method in words (`full`, `LoRA r16`).
pub fn training_method_label(w: &TrainingWorkload) -> String {
    match w.method {
        gpuplan_core::FineTuneMethod::Full => "full".into(),
        gpuplan_core::FineTuneMethod::Lora { rank, .. } => format!("LoRA r{rank}"),
        gpuplan_core::FineTuneMethod::Qlora { rank, .. } => format!("QLoRA r{rank}"),
    }
}

/// TP·PP·DP, ZeRO stage, micro-batch and recomputation in one cell.
pub fn training_layout_label(p: &TrainingPlan) -> String {
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

/// The derivation of one training plan, as `--explain N` prints it.
pub fn training_explain_text(w: &TrainingWorkload, p: &TrainingPlan) -> String {
    let mut out = String::new();
    let s = &p.step_breakdown;
    line!(
        out,
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
    line!(out,
        "Layout: {} ({} micro-batches per step), {} precision; peak memory {:.1} of {:.1} GiB per GPU",
        training_layout_label(p),
        p.micro_batches,
        p.precision,
        p.peak_memory_gib,
        p.gpu_memory_gib
    );
    line!(out,
        "Step: {:.2} s for {:.0} tokens → {:.0} tokens/s ({:.0} per GPU), {:.0} TFLOP/s per GPU, MFU {:.1}%",
        s.step_s,
        s.tokens_per_step,
        s.tokens_per_s,
        s.tokens_per_s_per_gpu,
        s.tflops_per_gpu,
        s.mfu * 100.0
    );
    line!(out, "Where the step goes:");
    for (name, v) in s.parts() {
        if v > 0.0 {
            line!(
                out,
                "  {name:32} {:>9.3} s  {:>5.1}%",
                v,
                100.0 * v / s.step_s
            );
        }
    }
    line!(
        out,
        "  (data-parallel traffic {:.3} s in total, hidden behind compute except the exposed part)",
        s.dp_comm_total_s
    );
    line!(out,
        "Time: {:.1} h ideal; {:.1} h expected with a checkpoint every {:.0} min ({:.0} s to write), {:.3} interruptions/h",
        p.ideal_hours, p.time_to_train_hours, p.checkpoint_interval_min, p.checkpoint_write_s, p.interruptions_per_hour
    );
    line!(
        out,
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
        line!(
            out,
            "Spot pays off below {r:.2} preemptions per instance-hour (assumed {}).",
            w.pricing.spot_preemptions_per_hour
        );
    }
    for f in &p.flags {
        line!(out, "Note: {f}");
    }
    line!(
        out,
        "Launch ({}):",
        gpuplan_core::plan_training_framework(w)
    );
    line!(out, "  {}", p.launch_command);
    out
}
