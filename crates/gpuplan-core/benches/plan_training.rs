//! Training searches of the example workloads over the whole bundled catalog
//! (target: the 70B full fine-tune under 2 s on a 2-core machine).
//!
//! Run: `cargo bench -p gpuplan-core --bench plan_training`

use gpuplan_catalog::Catalog;
use gpuplan_core::training::{RawTrainingWorkload, TrainingFactors, TrainingWorkload};
use gpuplan_core::{plan_training, Calibration};

fn main() {
    divan::main();
}

fn load(name: &str) -> (Catalog, TrainingWorkload) {
    let catalog = Catalog::embedded().unwrap();
    let path = format!(
        "{}/../../examples/training/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let raw: RawTrainingWorkload = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let w = raw.validate(&catalog, None).unwrap();
    (catalog, w)
}

#[divan::bench(args = ["full-70b", "pretrain-7b", "lora-8b", "qlora-70b", "spot-8b"], sample_count = 10)]
fn plan_training_example(bencher: divan::Bencher, name: &str) {
    let (catalog, w) = load(name);
    let cal = Calibration::bundled();
    let factors = TrainingFactors::bundled();
    bencher.bench(|| plan_training(&catalog, &w, &cal, &factors));
}
