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
