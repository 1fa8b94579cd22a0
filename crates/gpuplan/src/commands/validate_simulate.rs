//! `validate --simulate`: the MLPerf Server / Interactive LLM rows' capacity
//! at the p99 bounds found by simulation, beside the analytical capacity
//! (what `plan` sizes with) and the measurement.

use super::{print_json, table};
use crate::error::CliResult;
use gpuplan_catalog::{BenchmarkRow, Catalog};
use gpuplan_core::mlperf_inference::{is_mlperf_llm_row, server_setup};
use gpuplan_core::Calibration;
use gpuplan_sim::{simulated_capacity, CapacityQuery};
use serde::Serialize;

/// One row: measured, analytical and simulated output tokens/s of the system.
#[derive(Debug, Serialize)]
struct SimRow {
    id: String,
    gpu: String,
    scenario: String,
    layout: String,
    measured: f64,
    analytical: Option<f64>,
    simulated: Option<f64>,
    analytical_error_pct: Option<f64>,
    simulated_error_pct: Option<f64>,
    /// Simulated p99 TTFT and TPOT at the simulated capacity, ms.
    simulated_ttft_ms_p99: Option<f64>,
    simulated_tpot_ms_p99: Option<f64>,
    skipped: Option<String>,
}

#[derive(Debug, Serialize)]
struct SimReport {
    requests_per_simulation: u64,
    rows: Vec<SimRow>,
    median_abs_error_analytical_pct: Option<f64>,
    median_abs_error_simulated_pct: Option<f64>,
    /// Median |analytical − simulated| / simulated.
    median_abs_gap_pct: Option<f64>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}

fn simulate_row(
    catalog: &Catalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    lengths: &Calibration,
    requests: u64,
) -> SimRow {
    let mut out = SimRow {
        id: row.id.clone(),
        gpu: row.gpu.clone(),
        scenario: row.scenario.clone(),
        layout: String::new(),
        measured: row.value,
        analytical: None,
        simulated: None,
        analytical_error_pct: None,
        simulated_error_pct: None,
        simulated_ttft_ms_p99: None,
        simulated_tpot_ms_p99: None,
        skipped: None,
    };
    let setup = match server_setup(catalog, row, cal, lengths) {
        Ok(s) => s,
        Err(e) => {
            out.skipped = Some(e);
            return out;
        }
    };
    let err = |v: f64| (v - row.value) / row.value * 100.0;
    let analytical = setup.system_tokens_per_s(setup.capacity.capacity_rps);
    out.layout = format!(
        "TP{} ×{} {} cap {}",
        setup.layout.tp, setup.replicas, setup.precision, setup.capacity.batch_cap
    );
    out.analytical = Some(analytical);
    out.analytical_error_pct = Some(err(analytical));
    let query = CapacityQuery {
        catalog,
        workload: &setup.workload,
        cal,
        gpu: &setup.gpu,
        precision: setup.precision,
        layout: setup.layout,
        engine: setup.engine,
        max_num_seqs: setup.capacity.batch_cap,
        max_rps: setup.capacity.max_rps,
        requests,
        seed: 1,
    };
    match simulated_capacity(&query) {
        Ok(c) => {
            let simulated = setup.system_tokens_per_s(c.capacity_rps);
            out.simulated = Some(simulated);
            out.simulated_error_pct = Some(err(simulated));
            out.simulated_ttft_ms_p99 = Some(c.ttft_ms_p99);
            out.simulated_tpot_ms_p99 = Some(c.tpot_ms_p99);
        }
        Err(e) => out.skipped = Some(e.to_string()),
    }
    out
}

/// Simulates every Server / Interactive MLPerf LLM row of `rows` and prints
/// the comparison (a table, or JSON).
pub fn run(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &Calibration,
    lengths: &Calibration,
    requests: u64,
    json: bool,
) -> CliResult {
    let rows: Vec<SimRow> = rows
        .iter()
        .filter(|r| is_mlperf_llm_row(r) && r.scenario != "offline")
        .map(|r| simulate_row(catalog, r, cal, lengths, requests))
        .collect();
    let abs =
        |f: fn(&SimRow) -> Option<f64>| median(rows.iter().filter_map(f).map(f64::abs).collect());
    let report = SimReport {
        requests_per_simulation: requests,
        median_abs_error_analytical_pct: abs(|r| r.simulated.and(r.analytical_error_pct)),
        median_abs_error_simulated_pct: abs(|r| r.simulated_error_pct),
        median_abs_gap_pct: abs(|r| Some((r.analytical? - r.simulated?) / r.simulated? * 100.0)),
        rows,
    };
    if json {
        return print_json(&report);
    }
    print_report(&report);
    Ok(())
}

/// The human table of [`run`]: one line per row simulated (or skipped with
/// an analytical figure), then the medians.
fn print_report(report: &SimReport) {
    let requests = report.requests_per_simulation;
    let mut t = table(&[
        "id",
        "gpu",
        "scenario",
        "layout",
        "measured tok/s",
        "analytical",
        "simulated",
        "analytical err %",
        "simulated err %",
        "sim p99 TTFT / TPOT ms",
    ]);
    let fmt =
        |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "–".into());
    for r in &report.rows {
        if let Some(why) = &r.skipped {
            if r.analytical.is_none() {
                continue;
            }
            t.add_row(vec![
                r.id.clone(),
                r.gpu.clone(),
                r.scenario.clone(),
                why.clone(),
            ]);
            continue;
        }
        t.add_row(vec![
            r.id.clone(),
            r.gpu.clone(),
            r.scenario.clone(),
            r.layout.clone(),
            format!("{:.0}", r.measured),
            fmt(r.analytical, 0),
            fmt(r.simulated, 0),
            r.analytical_error_pct
                .map(|e| format!("{e:+.1}"))
                .unwrap_or_default(),
            r.simulated_error_pct
                .map(|e| format!("{e:+.1}"))
                .unwrap_or_default(),
            format!(
                "{} / {}",
                fmt(r.simulated_ttft_ms_p99, 0),
                fmt(r.simulated_tpot_ms_p99, 1)
            ),
        ]);
    }
    println!("{t}");
    let simulated = report.rows.iter().filter(|r| r.simulated.is_some()).count();
    let skipped = report.rows.len() - simulated;
    println!(
        "{simulated} Server/Interactive rows simulated ({requests} requests each, Poisson, seed 1; {skipped} skipped: `validate --set mlperf` says why). Median |error| against the measurement: analytical {}%, simulated {}%; median |analytical − simulated| {}% of the simulated.",
        fmt(report.median_abs_error_analytical_pct, 1),
        fmt(report.median_abs_error_simulated_pct, 1),
        fmt(report.median_abs_gap_pct, 1)
    );
}
