//! Full `plan` searches of the image-generation, speech-to-text and
//! embedding examples (`examples/services/`) over the whole bundled catalog
//! (target: under 1 s each on a 2-core machine; issue 12).
//!
//! Run: `cargo bench -p gpuplan-core --bench plan_services`

use gpuplan_catalog::Catalog;
use gpuplan_core::nonllm::{parse_nonllm_workload, plan_nonllm, NonLlmWorkload};
use gpuplan_core::{Calibration, WorkloadFormat};

fn main() {
    divan::main();
}

fn load(name: &str) -> (Catalog, NonLlmWorkload) {
    let catalog = Catalog::embedded().unwrap();
    let path = format!(
        "{}/../../examples/services/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let w = parse_nonllm_workload(&path, &text, WorkloadFormat::Toml, &catalog).unwrap();
    (catalog, w)
}

#[divan::bench(args = ["sdxl-images", "whisper-live", "rag-embeddings"], sample_count = 10)]
fn plan_service(bencher: divan::Bencher, name: &str) {
    let (catalog, w) = load(name);
    let cal = Calibration::bundled();
    let report = plan_nonllm(&catalog, &w, &cal, 10);
    assert!(!report.plans.is_empty(), "{name} has a plan");
    bencher.bench(|| plan_nonllm(&catalog, &w, &cal, 10));
}
