//! `gpuplan plan --summary A.toml B.toml …`: one Markdown row per workload
//! with its cheapest plan and a one-line reason it wins. The README's
//! examples table is this output, verbatim (a test checks it).

use crate::error::{CliError, CliResult};
use gpuplan_catalog::Catalog;
use gpuplan_core::{Calibration, InferenceWorkload, Plan, PlanReport};
use gpuplan_sim::VerifyOptions;
use std::path::PathBuf;

/// Prints the table; exit 1 when any workload has no feasible plan.
pub fn run(
    catalog: &Catalog,
    cal: &Calibration,
    files: &[PathBuf],
    verify: VerifyOptions,
) -> CliResult {
    let mut all_training = !files.is_empty();
    for path in files {
        crate::load::reject_nonllm(path, "plan --summary")?;
        all_training &= crate::load::workload_kind(path)?.as_deref() == Some("training");
    }
    if all_training {
        println!("| file | workload | cheapest plan (total cost, expected time to train) | why it wins |");
    } else {
        println!("| file | workload | cheapest plan that passes simulation | why it wins |");
    }
    println!("|---|---|---|---|");
    let mut infeasible = false;
    for path in files {
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        if crate::load::workload_kind(path)?.as_deref() == Some("training") {
            infeasible |= !training_row(catalog, cal, path, &file)?;
            continue;
        }
        let (w, report) = super::plan::verified_plan(catalog, cal, path, 2, verify)?;
        let (cheapest, why) = match report.plans.first() {
            Some(best) => (describe_plan(best), why_it_wins(&w, &report, best)),
            None => {
                infeasible = true;
                let hint = report.hint.clone().unwrap_or_default();
                ("no feasible plan".to_string(), hint)
            }
        };
        println!(
            "| `{file}` | {} | {cheapest} | {why} |",
            describe_workload(&w)
        );
    }
    if infeasible {
        Err(CliError::Infeasible)
    } else {
        Ok(())
    }
}

/// "Llama-3.1-70b, 20 req/s, TTFT p99 2000 ms, TPOT p99 60 ms, 2+ replicas".
fn describe_workload(w: &InferenceWorkload) -> String {
    let mut parts = vec![
        format!("`{}`", w.model.id),
        format!("{} req/s", w.peak_requests_per_s),
        format!(
            "{:.0}/{:.0} tokens in/out",
            w.input_tokens.mean, w.output_tokens.mean
        ),
    ];
    if let Some(t) = w.slo.ttft_ms_p99 {
        parts.push(format!("TTFT p99 {t} ms"));
    }
    if let Some(t) = w.slo.tpot_ms_p99 {
        parts.push(format!("TPOT p99 {t} ms"));
    }
    if let Some(t) = w.slo.e2e_ms_p99 {
        parts.push(format!("e2e p99 {t} ms"));
    }
    if w.slo.ttft_ms_p99.is_none() && w.slo.tpot_ms_p99.is_none() && w.slo.e2e_ms_p99.is_none() {
        parts.push("no SLO".into());
    }
    if w.constraints.min_replicas > 1 {
        parts.push(format!("{}+ replicas", w.constraints.min_replicas));
    }
    if !w.constraints.geo.is_empty() {
        parts.push(format!("in {}", w.constraints.geo.join("/")));
    }
    if w.constraints.spot {
        parts.push("spot allowed".into());
    }
    parts.join(", ")
}

/// "9 × GH200-96GB (FP8, TP1) on lambda gpu_1x_gh200, asia-northeast-1: $20.61/h".
fn describe_plan(p: &Plan) -> String {
    let layout = match (p.tp, p.pp) {
        (1, 1) => String::new(),
        (tp, 1) => format!(", TP{tp}"),
        (1, pp) => format!(", PP{pp}"),
        (tp, pp) => format!(", TP{tp} PP{pp}"),
    };
    let flagged = if p.price_flags.is_empty() {
        String::new()
    } else {
        let kinds: Vec<String> = p.price_flags.iter().map(|f| f.kind.to_string()).collect();
        format!(" (price flagged: {})", kinds.join(", "))
    };
    format!(
        "{} × {}{} ({}{layout}) on {} `{}`{} {}: ${:.2}/h{flagged}",
        p.replicas,
        if p.gpus_per_replica > 1 {
            format!("{} ", p.gpus_per_replica)
        } else {
            String::new()
        },
        p.gpu,
        p.precision,
        p.provider,
        p.instance_type,
        if p.spot { " spot," } else { "," },
        p.region,
        p.usd_per_hour
    )
}

/// What decides the plan, from its derivation, and how far the runner-up is.
fn why_it_wins(w: &InferenceWorkload, r: &PlanReport, p: &Plan) -> String {
    let d = &p.derivation;
    let fit = format!(
        "{} weights take {:.0} GiB of each GPU, leaving KV cache for {} mean requests",
        p.precision, d.memory.weights_gib, d.kv_sequences
    );
    let pooled = if d.replicas_for_peak < d.replicas_for_peak_alone {
        format!(
            "; behind the router (slots pooled, prompts spread over the replicas in turn) {} replica(s) carry the peak, not {}",
            d.replicas_for_peak, d.replicas_for_peak_alone
        )
    } else {
        format!(", so {} replica(s) carry the peak", d.replicas_for_peak)
    };
    let capacity = format!(
        "batch cap {} serves {:.1} req/s per replica alone within the SLO at ≤{:.0}% utilisation{pooled}",
        p.max_num_seqs,
        d.capacity_requests_per_s_per_replica,
        w.constraints.max_utilization * 100.0,
    );
    let floor = if p.replicas > d.replicas_for_peak {
        format!(" ({} run: min_replicas or whole instances)", p.replicas)
    } else {
        String::new()
    };
    let runner_up = match r.plans.get(1) {
        Some(next) => format!(
            "; next: {} × {} on {} at ${:.2}/h ({:+.0}%{})",
            next.replicas,
            next.gpu,
            next.provider,
            next.usd_per_hour,
            (next.usd_per_hour / p.usd_per_hour - 1.0) * 100.0,
            match &next.simulated {
                Some(s) if !s.meets_slo => ", misses its SLO in simulation",
                _ => "",
            }
        ),
        None => "; the only feasible plan".into(),
    };
    format!(
        "{fit}; {capacity}{floor}; {} feasible plans{runner_up}",
        r.feasible
    )
}

/// A training workload's row; false when nothing is feasible.
fn training_row(
    catalog: &Catalog,
    cal: &Calibration,
    path: &std::path::Path,
    file: &str,
) -> CliResult<bool> {
    let w = crate::load::training_workload(catalog, path)?;
    let factors = crate::load::training_factors(None)?;
    let report = gpuplan_core::plan_training(catalog, &w, cal, &factors);
    let method = match w.method {
        gpuplan_core::FineTuneMethod::Full => "full training".to_string(),
        gpuplan_core::FineTuneMethod::Lora { rank, .. } => format!("LoRA r{rank}"),
        gpuplan_core::FineTuneMethod::Qlora { rank, .. } => format!("QLoRA r{rank}"),
    };
    let mut workload = format!(
        "`{}` {method}, {:.3e} tokens at seq {}",
        w.model.id, w.tokens, w.seq_len
    );
    if let Some(d) = w.deadline_hours {
        workload.push_str(&format!(", deadline {d} h"));
    }
    if w.constraints.spot {
        workload.push_str(", spot allowed");
    }
    let (cheapest, why) = match report.plans.first() {
        Some(p) => (
            format!(
                "{} × {} ({}) on {} `{}`{}, {}: ${:.0} in {:.1} h",
                p.gpus,
                p.gpu,
                p.precision,
                p.provider,
                p.instance_type,
                if p.spot { " spot" } else { "" },
                p.region,
                p.total_cost_usd,
                p.time_to_train_hours
            ),
            format!(
                "TP{}·PP{}·DP{} ZeRO-{} fits in {:.0} of {:.0} GiB; {:.0} tokens/s per GPU at {:.0}% MFU; checkpoint every {:.0} min",
                p.tp,
                p.pp,
                p.dp,
                p.zero_stage,
                p.peak_memory_gib,
                p.gpu_memory_gib,
                p.tokens_per_s_per_gpu,
                p.mfu * 100.0,
                p.checkpoint_interval_min
            ),
        ),
        None => ("no feasible plan".into(), report.hint.clone().unwrap_or_default()),
    };
    println!("| `{file}` | {workload} | {cheapest} | {why} |");
    Ok(!report.plans.is_empty())
}
