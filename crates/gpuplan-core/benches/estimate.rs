//! Speed of the performance model: single steady-state estimates per second
//! (the planner calls this millions of times; target ≥ 1 million/s on one core).
//!
//! Run: `cargo bench -p gpuplan-core --bench estimate`

use gpuplan_catalog::{Catalog, Precision};
use gpuplan_core::{steady_state, Calibration, Deployment, Layout};

fn main() {
    divan::main();
}

fn deployment() -> Deployment {
    let c = Catalog::embedded().unwrap();
    let m = c.model("llama-3.1-70b").unwrap();
    let g = c.gpu("H100").unwrap();
    Deployment::new(
        &m,
        g,
        Layout { tp: 4, pp: 1 },
        Precision::Fp8,
        Precision::Fp8,
        &Calibration::bundled(),
    )
    .unwrap()
}

/// One steady-state estimate (TTFT, TPOT, throughput) at a given concurrency.
#[divan::bench(items_count = 1u32)]
fn steady_state_estimate(bencher: divan::Bencher) {
    let dep = deployment();
    let mut c = 1.0;
    bencher.bench_local(|| {
        c = if c > 500.0 { 1.0 } else { c + 1.0 };
        steady_state(divan::black_box(&dep), 1500.0, 250.0, c, 8192.0)
    });
}

/// Building a deployment (once per model × GPU × precision × layout).
#[divan::bench]
fn build_deployment(bencher: divan::Bencher) {
    let c = Catalog::embedded().unwrap();
    let m = c.model("llama-3.1-70b").unwrap();
    let g = c.gpu("H100").unwrap();
    let cal = Calibration::bundled();
    bencher.bench_local(|| {
        Deployment::new(
            &m,
            g,
            Layout { tp: 4, pp: 1 },
            Precision::Fp8,
            Precision::Fp8,
            &cal,
        )
    });
}
