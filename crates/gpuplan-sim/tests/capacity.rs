//! Capacity at an SLO by simulation against the planner's analytical
//! capacity and an MLPerf Server measurement.

use gpuplan_catalog::{parse_benchmarks, Catalog, BUNDLED_BENCHMARKS_DEV_2};
use gpuplan_core::mlperf_inference::{bundled_input_lengths, server_setup};
use gpuplan_core::Calibration;
use gpuplan_sim::{simulated_capacity, CapacityQuery};

#[test]
fn an_mlperf_server_row_simulates_near_its_analytical_capacity_and_within_the_bounds() {
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let rows = parse_benchmarks("benchmarks_dev_2.csv", BUNDLED_BENCHMARKS_DEV_2).unwrap();
    // NVIDIA DGX H100, llama2-70b Server: p99 TTFT ≤ 2 s, p99 TPOT ≤ 200 ms.
    let row = rows
        .iter()
        .find(|r| r.id == "mlperf41-llama2-70b-044")
        .unwrap();
    let setup = server_setup(&catalog, row, &cal, &bundled_input_lengths()).unwrap();
    let query = CapacityQuery {
        engine: gpuplan_core::Engine::Vllm,
        catalog: &catalog,
        workload: &setup.workload,
        cal: &cal,
        gpu: &setup.gpu,
        precision: setup.precision,
        layout: setup.layout,
        max_num_seqs: setup.capacity.batch_cap,
        max_rps: setup.capacity.max_rps,
        requests: 4_000,
        seed: 1,
    };
    let sim = simulated_capacity(&query).unwrap();
    let analytical = setup.capacity.capacity_rps;
    assert!(sim.capacity_rps > 0.0 && sim.capacity_rps <= setup.capacity.max_rps);
    let gap = (analytical - sim.capacity_rps).abs() / sim.capacity_rps;
    assert!(
        gap < 0.25,
        "analytical {analytical} vs simulated {}",
        sim.capacity_rps
    );
    // At the capacity found the simulated p99s meet the bounds.
    assert!(
        sim.ttft_ms_p99 <= 2_000.0 && sim.tpot_ms_p99 <= 200.0,
        "{sim:?}"
    );
    // And the system's output tokens/s is within 25% of the measurement.
    let tokens = setup.system_tokens_per_s(sim.capacity_rps);
    assert!(
        (tokens / row.value - 1.0).abs() < 0.25,
        "{tokens} vs {}",
        row.value
    );
    // Deterministic for a seed.
    assert_eq!(simulated_capacity(&query).unwrap(), sim);
}

/// What `plan` calls a replica's most requests/s (the rate its utilisation
/// cap is a share of) is what the simulated replica completes when it is
/// overloaded: long prompts of variable length (6,000/18,000 tokens,
/// mean/p99) with variable answers, where the mean-length steady state
/// overstated it by 6% and put "95 %" plans at 99% of saturation.
#[test]
fn a_replicas_most_requests_per_second_is_what_it_completes_when_overloaded() {
    use gpuplan_core::{plan, PlanOptions, RawWorkload};
    use gpuplan_sim::{simulate_plan, Histograms, Stop};
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let text = |rps: f64| {
        format!(
            r#"
kind = "inference"
[model]
id = "llama-3.1-8b"
precisions = ["fp8"]
[traffic]
requests_per_s = {rps}
input_tokens = {{ mean = 6000, p99 = 18000 }}
output_tokens = {{ mean = 400, p99 = 1200 }}
[slo]
ttft_ms_p99 = 60000
tpot_ms_p99 = 1000
[constraints]
max_utilization = 0.95
gpus = ["H100-SXM-80GB"]
"#
        )
    };
    let workload = |rps: f64| {
        let raw: RawWorkload = toml::from_str(&text(rps)).unwrap();
        raw.validate(&catalog, None).unwrap()
    };
    let report = plan(&catalog, &workload(2.0), &cal, PlanOptions { top: 1 });
    let p = report.plans.first().expect("a plan");
    assert_eq!(p.replicas, 1);
    let most = p.derivation.max_requests_per_s_per_replica;
    // Twice as many arrivals as it can serve: the queue never empties.
    let overloaded = workload(2.0 * most);
    let sim = simulate_plan(
        &catalog,
        &overloaded,
        &cal,
        p,
        Histograms::default(),
        Stop::Requests(6_000),
        1,
    )
    .unwrap();
    let gap = most / sim.throughput_requests_per_s - 1.0;
    assert!(
        gap.abs() < 0.03,
        "plan says {most:.3} req/s, the overloaded replica completes {:.3}",
        sim.throughput_requests_per_s
    );
}
