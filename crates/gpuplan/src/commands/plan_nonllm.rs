//! `gpuplan plan` for image-generation, speech-to-text and encoder services
//! (a workload whose `[model] id` is a non-LLM model): the search is
//! `gpuplan_core::nonllm::plan_nonllm`; this file only prints.

use super::{check_finite, print_json, table};
use crate::cli::PlanCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::{Catalog, NonLlmFamily};
use gpuplan_core::nonllm::{
    parse_nonllm_workload, plan_nonllm, NonLlmPlanReport, NonLlmWorkload, Request,
};
use gpuplan_core::Calibration;
use std::path::Path;

pub fn run(catalog: &Catalog, cal: &Calibration, path: &Path, cmd: &PlanCmd) -> CliResult {
    let text = load::read(path)?;
    let name = path.display().to_string();
    let w =
        parse_nonllm_workload(&name, &text, load::workload_format(path), catalog).map_err(|e| {
            // Syntax errors already name the file.
            let msg = e.to_string();
            CliError::bad(if msg.starts_with(&name) {
                msg
            } else {
                format!("{name}: {msg}")
            })
        })?;
    let report = plan_nonllm(catalog, &w, cal, cmd.top);
    if cmd.json {
        print_json(&report)?;
    } else {
        check_finite(&report)?;
        print_report(&w, &report, cmd.explain);
    }
    if report.plans.is_empty() {
        Err(CliError::Infeasible)
    } else {
        Ok(())
    }
}

fn unit_words(w: &NonLlmWorkload) -> String {
    match w.unit {
        Request::Image {
            resolution_px,
            steps,
            guidance,
        } => format!(
            "{resolution_px}×{resolution_px} images, {steps} steps{}",
            if guidance { ", guidance" } else { "" }
        ),
        Request::Audio {
            output_tokens,
            beam,
        } => format!(
            "{} × 30 s windows per request, {output_tokens:.0} tokens per window, beam {beam}",
            w.units_per_request
        ),
        Request::Text { seq_len } => format!(
            "{} × {seq_len:.0}-token sequences per request",
            w.units_per_request
        ),
    }
}

fn print_report(w: &NonLlmWorkload, r: &NonLlmPlanReport, explain: Option<usize>) {
    let slo = w
        .latency_ms_p99
        .map(|ms| format!("p99 latency ≤ {ms} ms"))
        .unwrap_or_else(|| "no latency SLO: cheapest throughput".into());
    println!(
        "{} — {} ({}): peak {} req/s of {}\nTarget: {slo}",
        w.name,
        w.model.id,
        r.family.as_str(),
        w.requests_per_s,
        unit_words(w)
    );
    let unit = match r.family {
        NonLlmFamily::Diffusion => "img/s/GPU",
        NonLlmFamily::Speech | NonLlmFamily::Encoder => "req/s/GPU",
    };
    let mut t = table(&[
        "#", "provider", "region", "instance", "GPU × n", "prec", "batch", unit, "$/h",
    ]);
    for p in &r.plans {
        t.add_row(vec![
            p.rank.to_string(),
            p.provider.clone(),
            p.region.clone(),
            format!("{} × {}", p.instance_type, p.instances),
            format!("{} × {}", p.gpu, p.replicas),
            p.precision.to_string(),
            p.batch.to_string(),
            format!("{:.2}", p.requests_per_s_per_gpu),
            format!("{:.2}", p.usd_per_hour),
        ]);
    }
    println!("{t}");
    if let Some(best) = explain
        .and_then(|n| r.plans.iter().find(|p| p.rank == n))
        .or(r.plans.first())
    {
        let parts: Vec<String> = best
            .batch_parts_ms
            .iter()
            .map(|(n, ms)| format!("{n} {ms:.1} ms"))
            .collect();
        println!(
            "Plan {}: batch of {} in {:.1} ms ({}), {:.1} GiB per GPU.\nLaunch: {}",
            best.rank,
            best.batch,
            best.batch_ms,
            parts.join(", "),
            best.memory_gib,
            best.launch
        );
    }
    if !r.rejected.is_empty() {
        println!("Rejected:");
        for (reason, rej) in &r.rejected {
            println!("  {reason:?}: {} (e.g. {})", rej.count, rej.example);
        }
    }
}
