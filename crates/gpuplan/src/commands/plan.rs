//! `gpuplan plan`: ranked deployments, Pareto frontier, rejections, `--explain`.

use super::{check_finite, print_json, table, truncate, wide_table};
use crate::cli::PlanCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::Catalog;
use gpuplan_core::{
    plan, Calibration, InferenceWorkload, Plan, PlanOptions, PlanReport, Verification,
};
use gpuplan_sim::{verify_plans, Histograms, VerifyOptions, VERIFY_SEARCH_FACTOR};
use std::path::Path;
use std::time::Instant;

/// Plans a workload file and verifies the top plans by simulation
/// (`verify.top = 0` skips it); the report's plans are in verified order.
pub(crate) fn verified_plan(
    catalog: &Catalog,
    cal: &Calibration,
    path: &Path,
    top: usize,
    verify: VerifyOptions,
) -> CliResult<(InferenceWorkload, PlanReport)> {
    let (w, raw) = load::workload_with_raw(catalog, path)?;
    // Simulate a few more than shown, so plans that miss can be replaced.
    let mut report = plan(
        catalog,
        &w,
        cal,
        PlanOptions {
            top: top.max(verify.top * VERIFY_SEARCH_FACTOR),
        },
    );
    if verify.top > 0 && !report.plans.is_empty() {
        let histograms = Histograms {
            input: raw.traffic.input_tokens.histogram.as_deref(),
            output: raw.traffic.output_tokens.histogram.as_deref(),
        };
        let missed = verify_plans(catalog, &w, cal, histograms, &mut report.plans, verify)?;
        let simulated = report
            .plans
            .iter()
            .filter(|p| p.simulated.is_some())
            .count();
        report.verification = Some(Verification {
            simulated,
            missed,
            requests: verify.requests,
        });
        sync_frontier_ranks(&mut report);
    }
    report.plans.truncate(top);
    Ok((w, report))
}

/// Frontier plans take the rank their twin has among the verified plans.
fn sync_frontier_ranks(report: &mut PlanReport) {
    let plans = &report.plans;
    for f in report.pareto.iter_mut() {
        let twin = plans.iter().find(|p| {
            p.provider == f.provider
                && p.region == f.region
                && p.instance_type == f.instance_type
                && p.vllm_command == f.vllm_command
                && p.spot == f.spot
        });
        f.rank = twin.map_or(0, |p| p.rank);
        f.simulated = twin.and_then(|p| p.simulated.clone());
    }
}

pub fn run(catalog: &Catalog, cmd: PlanCmd) -> CliResult {
    let cal = load::calibration(cmd.calibration.as_deref())?;
    if cmd.top == 0 {
        return Err(CliError::bad("--top 0: expected a whole number >= 1"));
    }
    let verify = VerifyOptions {
        top: if cmd.no_verify { 0 } else { cmd.verify },
        requests: cmd.verify_requests,
        seed: 1,
    };
    if cmd.summary {
        return super::plan_summary::run(catalog, &cal, &cmd.workload, verify);
    }
    let [path] = cmd.workload.as_slice() else {
        return Err(CliError::bad(format!(
            "{} workload files given: plan takes one, or several with --summary",
            cmd.workload.len()
        )));
    };
    load::expect_kind(path, "plan", &["inference", "training"])?;
    if gpuplan_core::nonllm::nonllm_model_of(&load::read(path)?, load::workload_format(path))
        .is_some()
    {
        if cmd.export.is_some() {
            load::reject_nonllm(path, "plan --export")?;
        }
        return super::plan_nonllm::run(catalog, &cal, path, &cmd);
    }
    if load::workload_kind(path)?.as_deref() == Some("training") {
        return super::plan_training::run(catalog, &cal, path, &cmd);
    }
    if let Some(kind) = cmd.export {
        return super::export::run(catalog, &cal, path, &cmd, kind, verify);
    }
    let started = Instant::now();
    let top = cmd.top.max(cmd.explain.unwrap_or(0));
    let (w, report) = verified_plan(catalog, &cal, path, top, verify)?;
    let elapsed = started.elapsed();
    // Nothing feasible: the reasons are the answer, whatever plan was asked for.
    let explain_n = cmd.explain.filter(|_| !report.plans.is_empty());
    if let Some(n) = explain_n {
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
        print_report(&w, &report, elapsed.as_secs_f64(), cmd.wide);
    }
    if report.plans.is_empty() {
        Err(CliError::Infeasible)
    } else {
        Ok(())
    }
}

fn describe_workload(w: &InferenceWorkload) -> String {
    let slo = &w.slo;
    let mut targets = Vec::new();
    if let Some(t) = slo.ttft_ms_p99 {
        targets.push(format!("TTFT p99 ≤ {t} ms"));
    }
    if let Some(t) = slo.tpot_ms_p99 {
        targets.push(format!("TPOT p99 ≤ {t} ms"));
    }
    if let Some(t) = slo.e2e_ms_p99 {
        targets.push(format!("end-to-end p99 ≤ {t} ms"));
    }
    let targets = if targets.is_empty() {
        "no latency SLO: cheapest tokens per dollar".to_string()
    } else {
        targets.join(", ")
    };
    format!(
        "{} — {}: peak {} req/s (mean {}), input {:.0}/{:.0} tokens, output {:.0}/{:.0} (mean/p99)\nTargets: {targets}",
        w.name,
        w.model.id,
        w.peak_requests_per_s,
        w.mean_requests_per_s,
        w.input_tokens.mean,
        w.input_tokens.p99,
        w.output_tokens.mean,
        w.output_tokens.p99
    )
}

/// Replicas and instances; billed GPUs no replica uses are shown.
fn replicas_cell(p: &Plan) -> String {
    if p.idle_gpus > 0 {
        format!(
            "{} ({} inst, {} GPU idle)",
            p.replicas, p.instances, p.idle_gpus
        )
    } else {
        format!("{} ({} inst)", p.replicas, p.instances)
    }
}

/// GPU × per replica; `*` marks a GPU family without calibration data.
fn gpus(p: &Plan) -> String {
    let mark = if p.calibrated { "" } else { "*" };
    format!("{}{mark} × {}", p.gpu, p.gpus_per_replica)
}

/// The region, with how many other regions offer the same plan.
fn region_cell(p: &Plan, max_chars: usize) -> String {
    let more = if p.also_in_regions.is_empty() {
        String::new()
    } else {
        format!(" (+{})", p.also_in_regions.len())
    };
    let room = max_chars.saturating_sub(more.chars().count());
    format!("{}{more}", truncate(&p.region, room))
}

/// Borderless style with a rule under the header: two spaces between
/// columns, so the compact plan table fits 120 columns.
const COMPACT_STYLE: comfy_table::TableStyle = comfy_table::TableStyle::new()
    .header_separator(comfy_table::LineStyle::none().fill('─').junction('─'));

/// The ranked plans: compact to fit 120 columns, or every column with `wide`.
fn plans_table(plans: &[Plan], wide: bool) -> comfy_table::Table {
    if wide {
        return wide_plans_table(plans);
    }
    let mut t = table(&[
        "#", "provider", "region", "instance", "GPU × n", "TP/PP", "prec", "n/inst", "$/h",
        "TTFT ms", "TPOT ms", "util", "sim",
    ]);
    // Cells are cut to fixed widths below, so the table fits 120 columns
    // without wrapping a row.
    t.load_style(COMPACT_STYLE)
        .set_content_arrangement(comfy_table::ContentArrangement::Disabled);
    for column in t.column_iter_mut() {
        column.set_padding((0, 1));
    }
    if let Some(last) = t.column_iter_mut().last() {
        last.set_padding((0, 0));
    }
    for p in plans {
        let spot = if p.spot { " spot" } else { "" };
        let idle = if p.idle_gpus > 0 { "!" } else { "" };
        let mark = if p.calibrated { "" } else { "*" };
        t.add_row(vec![
            p.rank.to_string(),
            truncate(&p.provider, 10),
            region_cell(p, 12),
            format!("{}{spot}", truncate(&p.instance_type, 16 - spot.len())),
            format!("{}{mark}×{}", truncate(&p.gpu, 13), p.gpus_per_replica),
            format!("{}/{}", p.tp, p.pp),
            p.precision.to_string(),
            format!("{}/{}{idle}", p.replicas, p.instances),
            price_cell(p),
            format!("{:.0}", p.ttft_ms_p99),
            format!("{:.1}", p.tpot_ms_p99),
            format!("{:.0}%", p.utilization * 100.0),
            sim_cell(p).to_string(),
        ]);
    }
    t
}

/// ✓ / ✗: the simulated p99s meet / miss the SLO; – not simulated.
fn sim_cell(p: &Plan) -> &'static str {
    match &p.simulated {
        Some(s) if s.meets_slo => "✓",
        Some(_) => "✗",
        None => "–",
    }
}

/// Every column, full names, never wrapped.
fn wide_plans_table(plans: &[Plan]) -> comfy_table::Table {
    let mut t = wide_table(&[
        "#",
        "provider",
        "region",
        "instance",
        "GPU × per replica",
        "TP/PP",
        "prec",
        "replicas",
        "$/hour",
        "$/1M out tok",
        "TTFT p99",
        "TPOT p99",
        "util",
        "price date",
    ]);
    for p in plans {
        let spot = if p.spot { " (spot)" } else { "" };
        t.add_row(vec![
            p.rank.to_string(),
            p.provider.clone(),
            region_cell(p, usize::MAX),
            format!("{}{spot}", p.instance_type),
            gpus(p),
            format!("{}/{}", p.tp, p.pp),
            p.precision.to_string(),
            replicas_cell(p),
            price_cell(p),
            format!("{:.3}", p.usd_per_million_output_tokens),
            format!("{:.0} ms", p.ttft_ms_p99),
            format!("{:.1} ms", p.tpot_ms_p99),
            format!("{:.0}%", p.utilization * 100.0),
            p.price_date.clone().unwrap_or_else(|| "undated".into()),
            match &p.simulated {
                Some(s) => format!(
                    "{} {:.0} / {:.1} ms",
                    sim_cell(p),
                    s.ttft_ms_p99,
                    s.tpot_ms_p99
                ),
                None => "–".into(),
            },
        ]);
    }
    t
}

/// $/hour; `?` marks a price the catalog flags as suspicious.
fn price_cell(p: &Plan) -> String {
    let mark = if p.price_flags.is_empty() { "" } else { "?" };
    format!("{:.2}{mark}", p.usd_per_hour)
}

/// The footnote for flagged prices, when a shown plan uses one.
fn price_flag_footnote(plans: &[Plan]) {
    if plans.iter().any(|p| !p.price_flags.is_empty()) {
        println!("? price flagged by the catalog's checks (`--explain N` says why); [pricing] trust = \"strict\" excludes them.");
    }
}

/// The footnotes that explain the compact table's markers and units.
fn compact_footnotes(plans: &[Plan], verification: Option<&Verification>) {
    println!("TTFT/TPOT are p99 at peak load; n/inst = replicas / instances billed.");
    if let Some(v) = verification.filter(|v| v.simulated > 0) {
        println!(
            "sim: top {} plans simulated at peak ({} requests each): ✓ meets every SLO, ✗ misses one ({}, moved down).",
            v.simulated, v.requests, v.missed
        );
    }
    if plans.iter().any(|p| p.idle_gpus > 0) {
        println!("! some billed GPUs run no replica (the layout does not divide the instance).");
    }
    let dates: Vec<&str> = plans
        .iter()
        .filter_map(|p| p.price_date.as_deref())
        .collect();
    if let (Some(old), Some(new)) = (dates.iter().min(), dates.iter().max()) {
        let undated = plans.iter().filter(|p| p.price_date.is_none()).count();
        let undated = if undated > 0 {
            format!(", {undated} undated")
        } else {
            String::new()
        };
        let span = if old == new {
            old.to_string()
        } else {
            format!("{old} to {new}")
        };
        println!("Prices read {span}{undated}; `--wide` shows each plan's date and $/1M tokens.");
    }
}

fn print_report(w: &InferenceWorkload, r: &PlanReport, seconds: f64, wide: bool) {
    println!("{}", describe_workload(w));
    println!(
        "Searched {} candidates in {:.2} s: {} feasible distinct plans.",
        r.candidates_evaluated, seconds, r.feasible
    );
    if !r.plans.is_empty() {
        println!("{}", plans_table(&r.plans, wide));
        if wide {
            println!("$/1M out tok is at peak load.");
        } else {
            compact_footnotes(&r.plans, r.verification.as_ref());
        }
        price_flag_footnote(&r.plans);
        println!("`--explain N` shows the derivation and the vLLM command of plan N.");
        if r.plans.iter().any(|p| p.spot) {
            println!(
                "Spot plans include extra replicas for the expected capacity lost to preemptions."
            );
        }
        if r.plans.iter().any(|p| !p.calibrated) {
            println!("* GPU family without calibration data: its efficiencies are extrapolated from other GPUs.");
        }
        println!();
        println!("Pareto frontier (cost vs p99 end-to-end latency at peak):");
        let mut t = table(&["$/hour", "e2e p99", "TTFT p99", "TPOT p99", "deployment"]);
        for p in &r.pareto {
            t.add_row(vec![
                format!("{:.2}", p.usd_per_hour),
                format!("{:.0} ms", p.e2e_ms_p99),
                format!("{:.0} ms", p.ttft_ms_p99),
                format!("{:.1} ms", p.tpot_ms_p99),
                format!(
                    "{} {} {} × {}, {} replicas, TP{}/PP{}, {}{}",
                    p.provider,
                    p.region,
                    p.instance_type,
                    p.instances,
                    p.replicas,
                    p.tp,
                    p.pp,
                    p.precision,
                    if p.spot { ", spot" } else { "" }
                ),
            ]);
        }
        println!("{t}");
    }
    println!();
    println!("Rejected candidates by reason:");
    println!("{}", rejection_table(r));
    if let Some(h) = &r.hint {
        println!("No feasible plan. Hint: {h}.");
    }
}

fn explain(w: &InferenceWorkload, p: &Plan) {
    let d = &p.derivation;
    println!(
        "Plan {}: {} {} ({}), {} × {}{}",
        p.rank,
        p.provider,
        p.region,
        p.location,
        p.instances,
        p.instance_type,
        if p.spot { " spot" } else { "" }
    );
    println!("{}", describe_workload(w));
    println!();
    println!(
        "Replica: {} × {} (TP{} × PP{}), {} weights, {} KV cache, batch cap {} sequences.",
        p.gpus_per_replica, p.gpu, p.tp, p.pp, p.precision, p.kv_precision, p.max_num_seqs
    );
    println!(
        "Memory per GPU (engine budget = {:.0}% of the GPU):",
        p.memory_utilization * 100.0
    );
    let m = &d.memory;
    println!("  weights {:.2} GiB + activation workspace {:.2} GiB + runtime {:.2} GiB + KV cache {:.2} GiB = {:.2} GiB", m.weights_gib, m.activations_gib, m.overhead_gib, m.kv_cache_gib, m.total_gib);
    println!("  KV cache holds {} tokens per replica = {} requests of mean length; the engine admits at most {}.", d.kv_cache_tokens, d.kv_sequences, p.max_num_seqs);
    println!();
    println!(
        "Performance (per replica, at a full batch of {}):",
        p.max_num_seqs
    );
    println!(
        "  iteration {:.2} ms, decode bound by {}, prefill bound by {}",
        d.iteration_ms_full_batch,
        d.decode_bound.label(),
        d.prefill_bound.label()
    );
    println!(
        "  request service time {:.2} s → at most {:.2} req/s per replica",
        d.service_s, d.max_requests_per_s_per_replica
    );
    println!(
        "  capacity within the SLO and {:.0}% utilisation cap: {:.2} req/s per replica",
        w.constraints.max_utilization * 100.0,
        d.capacity_requests_per_s_per_replica
    );
    println!();
    println!(
        "Queueing at peak ({:.2} req/s per replica, c_a² = {:.2}):",
        d.peak_requests_per_s_per_replica, d.ca2
    );
    println!(
        "  batch slots: G/G/c with c = {}, c_s² = {:.2}: P(wait) = {:.3} (Erlang C, Halfin–Whitt-scaled for burstiness), p99 wait {:.0} ms",
        p.max_num_seqs, d.cs2, d.p_wait_at_peak, d.queue_wait_ms_p99
    );
    println!(
        "  prefill compute: {:.0}% busy; prompts wait {:.0} ms on average, {:.0} ms at p99 (G/G/1, Allen–Cunneen)",
        d.prefill_utilization * 100.0,
        d.prefill_wait_ms_mean,
        d.prefill_wait_ms_p99
    );
    println!(
        "  own prefill beside the decodes: {:.0} ms (mean prompt), {:.0} ms (p99 prompt)",
        d.prefill_ms_mean, d.prefill_ms_p99
    );
    println!(
        "  TTFT p99 = slot wait + mean prefill wait + mean prefill + combined spread = {:.0} ms",
        p.ttft_ms_p99
    );
    println!(
        "  TPOT: {:.1} ms mean; p99 {:.1} ms over requests (prompts arriving during a request's life slow its tokens); p99 gap between tokens {:.1} ms",
        d.tpot_ms_mean, p.tpot_ms_p99, p.itl_ms_p99
    );
    println!(
        "  end-to-end p99 = TTFT p99 + (p99 output − 1) × mean TPOT = {:.0} ms; utilisation {:.0}%",
        p.e2e_ms_p99,
        p.utilization * 100.0
    );
    if let Some(s) = &p.simulated {
        println!(
            "  simulated at peak ({} requests, seed {}): TTFT p99 {:.0} ms, TPOT p99 {:.1} ms, inter-token p99 {:.0} ms, end-to-end p99 {:.0} ms, goodput {:.1}% — {}",
            s.requests,
            s.seed,
            s.ttft_ms_p99,
            s.tpot_ms_p99,
            s.itl_ms_p99,
            s.e2e_ms_p99,
            s.goodput * 100.0,
            if s.meets_slo { "meets every SLO" } else { "MISSES an SLO" }
        );
    }
    println!();
    println!("Cost:");
    println!(
        "  replicas = max(min_replicas {}, ceil(peak {} / capacity)), filled up to whole instances = {} (peak alone needs {})",
        w.constraints.min_replicas, w.peak_requests_per_s, p.replicas, d.replicas_for_peak
    );
    println!(
        "  instances = {} ({} GPU(s) each, {} GPU(s) per replica); every whole replica the instances hold is run",
        p.instances, p.gpus_per_instance, p.gpus_per_replica
    );
    if p.idle_gpus > 0 {
        println!(
            "  {} billed GPU(s) idle: a {}-GPU replica does not divide a {}-GPU instance",
            p.idle_gpus, p.gpus_per_replica, p.gpus_per_instance
        );
    }
    println!(
        "  ${:.4}/instance-hour list × {} × (1 − discount {:.0}%) = ${:.2}/hour",
        d.list_usd_per_instance_hour,
        p.instances,
        d.discount * 100.0,
        p.usd_per_hour
    );
    if let (Some(rate), Some(loss)) = (d.spot_preemptions_per_hour, d.spot_capacity_loss) {
        println!("  spot: {rate} expected preemptions per instance-hour; {:.2}% of capacity lost to replacements is covered by extra replicas", loss * 100.0);
    }
    println!(
        "  $/1M output tokens: {:.3} at peak, {:.3} at mean load ({} req/s)",
        p.usd_per_million_output_tokens,
        p.usd_per_million_output_tokens_at_mean,
        w.mean_requests_per_s
    );
    for flag in &p.price_flags {
        println!("  price flagged ({}): {}", flag.kind, flag.reason);
    }
    println!(
        "  price: {} ({})",
        p.price_source,
        p.price_date
            .as_deref()
            .map(|d| format!("read {d}"))
            .unwrap_or_else(|| "the source gives no date".into())
    );
    println!();
    println!("Serving-engine settings (one replica):");
    println!(
        "  checkpoint {}, weight kernel {} (vLLM ≥ {})",
        p.checkpoint, p.weight_kernel, p.min_vllm_version
    );
    println!("  {}", p.vllm_command);
    for note in &p.launch_notes {
        println!("  note: {note}");
    }
}

/// Rejected candidates by reason, most frequent first, each with its nearest-miss example.
pub(crate) fn rejection_table(r: &PlanReport) -> comfy_table::Table {
    let mut t = table(&["reason", "count", "example"]);
    let mut rows: Vec<_> = r.rejected.values().collect();
    rows.sort_by_key(|rej| std::cmp::Reverse(rej.count));
    for rej in rows {
        t.add_row(vec![
            rej.description.to_string(),
            rej.count.to_string(),
            rej.example.clone(),
        ]);
    }
    t
}
