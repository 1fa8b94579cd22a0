//! Full `plan` searches of each example workload over the whole bundled
//! catalog (target: under 1 s each on a 2-core machine). `items_count` is
//! the number of candidates a search evaluates, so divan reports candidates/s.
//!
//! Run: `cargo bench -p gpuplan-core --bench plan`

use gpuplan_catalog::Catalog;
use gpuplan_core::{plan, Calibration, InferenceWorkload, PlanOptions, RawWorkload};

fn main() {
    divan::main();
}

fn load(name: &str) -> (Catalog, InferenceWorkload) {
    let catalog = Catalog::embedded().unwrap();
    let path = format!("{}/../../examples/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let raw: RawWorkload = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let w = raw.validate(&catalog, None).unwrap();
    (catalog, w)
}

#[divan::bench(args = ["chat-70b", "code-completion", "rag-long-context", "batch-summarization", "eu-residency", "moe-mixtral"], sample_count = 10)]
fn plan_example(bencher: divan::Bencher, name: &str) {
    let (catalog, w) = load(name);
    let cal = Calibration::bundled();
    let candidates = plan(&catalog, &w, &cal, PlanOptions::default()).candidates_evaluated;
    bencher
        .counter(divan::counter::ItemsCount::new(candidates))
        .bench(|| plan(&catalog, &w, &cal, PlanOptions::default()));
}
