//! `gpuplan plan`: ranked deployments, Pareto frontier, rejections, `--explain`.

use super::{check_finite, print_json, table, truncate, wide_table};
use crate::cli::PlanCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::Catalog;
use gpuplan_core::{Calibration, Engine, InferenceWorkload, Plan, PlanReport, Verification};
use gpuplan_sim::VerifyOptions;
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
    let input = gpuplan_app::WorkloadInput::from_file(path)?;
    Ok(gpuplan_app::verified_plan(
        catalog, cal, &input, top, verify,
    )?)
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
            print!("{}", gpuplan_app::explain_text(&w, p));
        }
        return Ok(());
    }
    if cmd.json {
        print_json(&report)?;
    } else {
        check_finite(&report)?;
        print_report(&w, &report, elapsed.as_secs_f64(), cmd.wide);
    }
    if let Some(out) = &cmd.html {
        write_html(catalog, &cal, path, &w, &report, out)?;
    }
    if report.plans.is_empty() {
        Err(CliError::Infeasible)
    } else {
        Ok(())
    }
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
    let show_engine = plans.iter().any(|p| p.engine != Engine::Vllm);
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
            precision_cell(p, show_engine),
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

/// Short engine names for the compact table.
fn engine_short(e: Engine) -> &'static str {
    match e {
        Engine::Vllm => "vllm",
        Engine::Sglang => "sgl",
        Engine::Trtllm => "trt",
    }
}

/// The precision cell: `fp8`, or `fp8·trt` when the plans use several engines
/// or one other than vLLM.
fn precision_cell(p: &Plan, show_engine: bool) -> String {
    if show_engine {
        format!("{}·{}", p.precision, engine_short(p.engine))
    } else {
        p.precision.to_string()
    }
}

/// `, on sglang` for a plan off the default engine, else nothing.
fn engine_suffix(p: &Plan) -> String {
    if p.engine == Engine::Vllm {
        String::new()
    } else {
        format!(", on {}", p.engine)
    }
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
    let show_engine = plans.iter().any(|p| p.engine != Engine::Vllm);
    for p in plans {
        let spot = if p.spot { " (spot)" } else { "" };
        t.add_row(vec![
            p.rank.to_string(),
            p.provider.clone(),
            region_cell(p, usize::MAX),
            format!("{}{spot}", p.instance_type),
            gpus(p),
            format!("{}/{}", p.tp, p.pp),
            precision_cell(p, show_engine),
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
    if let Some(why) = verification.and_then(|v| v.skipped.as_deref()) {
        println!("sim: not run ({why}); the p99s are analytical.");
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
    println!("{}", gpuplan_app::describe_workload(w));
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
        println!("`--explain N` shows the derivation and the launch command of plan N.");
        if r.plans.iter().any(|p| p.engine != Engine::Vllm) {
            println!("prec·engine: vllm = vLLM, sgl = SGLang, trt = TensorRT-LLM (SGLang runs at vLLM's fitted step time).");
        }
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
                    "{} {} {} × {}, {} replicas, TP{}/PP{}, {}{}{}",
                    p.provider,
                    p.region,
                    p.instance_type,
                    p.instances,
                    p.replicas,
                    p.tp,
                    p.pp,
                    p.precision,
                    engine_suffix(p),
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

/// Writes the self-contained HTML report of a plan: the web page's tables
/// and charts with the data inlined.
fn write_html(
    catalog: &Catalog,
    cal: &Calibration,
    path: &Path,
    w: &InferenceWorkload,
    report: &PlanReport,
    out: &Path,
) -> CliResult {
    let input = gpuplan_app::WorkloadInput::from_file(path)?;
    let curves = gpuplan_app::load_curves(catalog, cal, w, report, 3)?;
    let data = gpuplan_server::ReportData {
        workload: input.to_json_value()?,
        report: json_value(report)?,
        curves: json_value(&curves)?,
        gpus: json_value(&gpuplan_app::catalog::gpus(catalog, None))?,
        explain: gpuplan_server::ReportData::explain_entries(
            report
                .plans
                .iter()
                .map(|p| (p.rank, gpuplan_app::explain_text(w, p))),
        ),
    };
    let html = gpuplan_server::html_report(&data).map_err(CliError::Internal)?;
    std::fs::write(out, html)
        .map_err(|e| CliError::bad(format!("--html {}: cannot write: {e}", out.display())))?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

/// A report document as a JSON value (after the finiteness check).
fn json_value<T: serde::Serialize>(value: &T) -> CliResult<serde_json::Value> {
    check_finite(value)?;
    serde_json::to_value(value).map_err(|e| CliError::Internal(format!("cannot encode JSON: {e}")))
}
