//! The analytical tail model (what `plan` promises) against the simulator
//! on a grid of workloads: prompt lengths, output lengths, burstiness and
//! load up to the utilisation cap. Run with `--nocapture` for the table.

use gpuplan_catalog::{Catalog, CatalogBuilder, TableKind};
use gpuplan_core::{plan, Calibration, InferenceWorkload, Plan, PlanOptions, RawWorkload};
use gpuplan_sim::{simulate_plan, Histograms, Stop};

const HEADER: &str = "provider,instance_type,accelerator,accelerator_count,vcpus,memory_gib,region,zone,price_per_hour,spot_price_per_hour,interconnect,source_snapshot\n";

/// Three single-GPU offerings of different speed and memory.
fn catalog() -> Catalog {
    let rows = [
        "lambda,gpu_1x_h100_sxm5,H100,1,26,225,us-east-1,,3.29,,nvlink,test 2026-01-01",
        "aws,g6e.xlarge,L40S,1,4,32,us-east-1,,1.86,,pcie,test 2026-01-01",
        "gcp,a2-ultragpu-1g,A100-80GB,1,12,170,us-central1,,5.07,,nvlink,test 2026-01-01",
    ];
    let mut b = CatalogBuilder::embedded().unwrap();
    b.clear_offerings();
    let csv = format!("{HEADER}{}\n", rows.join("\n"));
    b.extend(TableKind::Offerings, "grid_offerings.csv", &csv)
        .unwrap();
    b.build().unwrap()
}

/// One grid point.
#[derive(Debug, Clone, Copy)]
struct Point {
    input_mean: u32,
    output_mean: u32,
    cv: f64,
    max_utilization: f64,
    requests_per_s: f64,
}

/// The model every grid point serves: Llama 3.1 8B, the one the floors
/// below hold for. `GRID_MODEL=qwen2.5-32b` (any catalog id that fits one
/// GPU in FP8) runs the same grid on another model and prints it without
/// the floors: the check on workloads the tail model was not built on.
fn grid_model() -> String {
    std::env::var("GRID_MODEL").unwrap_or_else(|_| DEFAULT_MODEL.to_string())
}

/// See [`grid_model`].
const DEFAULT_MODEL: &str = "llama-3.1-8b";

fn workload(catalog: &Catalog, p: Point) -> InferenceWorkload {
    let text = format!(
        r#"
kind = "inference"
[model]
id = "{model}"
precisions = ["fp8"]
[traffic]
requests_per_s = {rps}
input_tokens = {{ mean = {im}, p99 = {ip} }}
output_tokens = {{ mean = {om}, p99 = {op} }}
arrival = {{ kind = "gamma", cv = {cv} }}
[slo]
ttft_ms_p99 = 60000
tpot_ms_p99 = 1000
[constraints]
max_utilization = {u}
"#,
        model = grid_model(),
        rps = p.requests_per_s,
        im = p.input_mean,
        ip = p.input_mean * 3,
        om = p.output_mean,
        op = p.output_mean * 3,
        cv = p.cv,
        u = p.max_utilization,
    );
    let raw: RawWorkload = toml::from_str(&text).unwrap();
    raw.validate(catalog, None).unwrap()
}

fn grid() -> Vec<Point> {
    let mut points = Vec::new();
    for input_mean in [300, 1500, 6000] {
        for output_mean in [100, 400] {
            for cv in [0.5, 1.0, 2.0, 4.0] {
                for max_utilization in [0.5, 0.8, 0.95] {
                    points.push(Point {
                        input_mean,
                        output_mean,
                        cv,
                        max_utilization,
                        requests_per_s: 20.0,
                    });
                }
            }
        }
    }
    points
}

/// Requests each simulated run serves (`GRID_REQUESTS` overrides it). At
/// c_v 2–4 a 10,000-request run's p99 is set by a burst or two (one seed's
/// TTFT p99 of a single H100 at cv 2 was 420 ms, the next two seeds' 62 and
/// 51 ms; 100,000 requests give 61–68 ms for all three): the reference must
/// be the steady state's p99, not one burst's.
fn requests_per_run() -> u64 {
    std::env::var("GRID_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// Simulator seeds each grid point runs with: 1 to 9. `GRID_SEEDS=n` runs
/// n seeds, and `GRID_SEED_OFFSET=k` starts them at k + 1, to see how far
/// the reference itself moves.
fn seeds() -> Vec<u64> {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (n, offset) = (env("GRID_SEEDS", 9), env("GRID_SEED_OFFSET", 0));
    (offset + 1..=offset + n.max(1)).collect()
}

struct Row {
    point: Point,
    plan: Plan,
    sim_ttft: f64,
    /// Standard error of `sim_ttft` over the seeds, ms.
    sim_ttft_se: f64,
    sim_tpot: f64,
    sim_queue: f64,
}

/// Standard error of the mean of `values`.
fn standard_error(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let n = values.clone().count() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mean = values.clone().sum::<f64>() / n;
    let variance = values.map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (variance / n).sqrt()
}

fn rel(analytical: f64, simulated: f64) -> f64 {
    analytical / simulated - 1.0
}

#[test]
fn analytical_tails_track_the_simulator_on_a_grid() {
    let catalog = catalog();
    let cal = Calibration::bundled();
    let mut rows = Vec::new();
    for point in grid() {
        let w = workload(&catalog, point);
        let report = plan(&catalog, &w, &cal, PlanOptions { top: 1 });
        let Some(p) = report.plans.first() else {
            continue;
        };
        // The simulated p99s averaged over nine seeds of 100,000 requests
        // each (see `requests_per_run`).
        let runs: Vec<_> = seeds()
            .iter()
            .map(|&seed| {
                simulate_plan(
                    &catalog,
                    &w,
                    &cal,
                    p,
                    Histograms::default(),
                    Stop::Requests(requests_per_run()),
                    seed,
                )
                .unwrap()
            })
            .collect();
        let mean = |f: &dyn Fn(&gpuplan_sim::SimResult) -> f64| {
            runs.iter().map(f).sum::<f64>() / runs.len() as f64
        };
        rows.push(Row {
            point,
            plan: p.clone(),
            sim_ttft: mean(&|r| r.ttft_ms.p99),
            sim_ttft_se: standard_error(runs.iter().map(|r| r.ttft_ms.p99)),
            sim_tpot: mean(&|r| r.tpot_ms.p99),
            sim_queue: mean(&|r| r.queue_ms.p99),
        });
    }
    println!("| in | out | cv | util | GPU × n | cap | TTFT p99 plan / sim ms | err | TPOT p99 plan / sim ms | err | P(wait) | slot wait p99 / prefill wait p99 / sim queue p99 ms | sim TTFT s.e. |");
    println!("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.2} | {} × {} | {} | {:.0} / {:.0} | {:+.0}% | {:.1} / {:.1} | {:+.0}% | {:.3} | {:.0} / {:.0} / {:.0} | {:.1}% |",
            r.point.input_mean,
            r.point.output_mean,
            r.point.cv,
            r.point.max_utilization,
            r.plan.gpu,
            r.plan.replicas,
            r.plan.max_num_seqs,
            r.plan.ttft_ms_p99,
            r.sim_ttft,
            rel(r.plan.ttft_ms_p99, r.sim_ttft) * 100.0,
            r.plan.tpot_ms_p99,
            r.sim_tpot,
            rel(r.plan.tpot_ms_p99, r.sim_tpot) * 100.0,
            r.plan.derivation.p_wait_at_peak,
            r.plan.derivation.queue_wait_ms_p99,
            r.plan.derivation.prefill_wait_ms_p99,
            r.sim_queue,
            r.sim_ttft_se / r.sim_ttft * 100.0,
        );
    }
    let n = rows.len() as f64;
    let share = |f: &dyn Fn(&Row) -> f64, tol: f64| {
        rows.iter().filter(|r| f(r).abs() <= tol).count() as f64 / n
    };
    let ttft_err = |r: &Row| rel(r.plan.ttft_ms_p99, r.sim_ttft);
    // A miss whose reference could sit inside the band by two standard
    // errors is one the seeds cannot settle.
    let unsettled = rows
        .iter()
        .filter(|r| {
            let err = ttft_err(r).abs();
            let se = r.plan.ttft_ms_p99 * r.sim_ttft_se / r.sim_ttft.powi(2);
            err > 0.15 && err - 2.0 * se <= 0.15
        })
        .count();
    let tpot_err = |r: &Row| rel(r.plan.tpot_ms_p99, r.sim_tpot);
    println!(
        "{} points: TTFT within 15% {:.0}%, within 30% {:.0}%; TPOT within 15% {:.0}%",
        rows.len(),
        share(&ttft_err, 0.15) * 100.0,
        share(&ttft_err, 0.30) * 100.0,
        share(&tpot_err, 0.15) * 100.0
    );
    println!(
        "TTFT misses within two standard errors of the 15% band (the seeds cannot settle them): {unsettled}"
    );
    // Regression floors a little under what the model reaches today against
    // the mean of nine seeds' p99s of 100,000 requests each (TTFT 92 %
    // within 15 %, 100 % within 30 %; TPOT 93 % within 15 %; the issue's
    // target is 90 % within 15 %). The reference itself moves: seeds 10–18
    // give TTFT 88 %, 19–27 90 %, 28–36 92 %, all thirty-six 92 %
    // (`GRID_SEEDS`, `GRID_SEED_OFFSET`), because a bursty point's p99 is
    // set by its few largest clumps (1500/100 tokens at c_v 4 moves by 8 %
    // from 18 to 36 seeds). A change to the tail model or the simulator
    // that loses agreement fails.
    assert_eq!(rows.len(), grid().len(), "every grid point has a plan");
    if grid_model() != DEFAULT_MODEL {
        // Another model: the table is the result; the floors are the 8B's.
        return;
    }
    assert!(share(&tpot_err, 0.15) >= 0.90, "TPOT agreement fell");
    assert!(share(&ttft_err, 0.30) >= 0.97, "TTFT agreement fell");
    // 89 % within 15 % today (64 of 72; 93 % before the last refit moved the
    // overheads by a few percent; qwen2.5-32b 89 %): up from the 85 % the
    // per-layer and per-sequence overheads had left, once the
    // utilisation cap was measured against what a full batch completes over
    // the length distribution (not at the mean lengths, 6 % higher at
    // 6,000/400 tokens, which put "95 %" plans at 99 % of saturation) and a
    // long slot wait stopped adding its clump's prefill wait on top.
    assert!(share(&ttft_err, 0.15) >= 0.87, "TTFT agreement fell");
    // Smooth traffic well below the knee is where the model must be right.
    let easy: Vec<&Row> = rows
        .iter()
        .filter(|r| r.point.cv <= 0.5 && r.point.max_utilization <= 0.8)
        .collect();
    assert!(easy
        .iter()
        .all(|r| ttft_err(r).abs() <= 0.25 && tpot_err(r).abs() <= 0.3));
}
