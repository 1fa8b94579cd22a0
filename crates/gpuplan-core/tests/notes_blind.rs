//! No prediction reads the free-text `notes` column: every setting a model
//! path depends on comes from a structured column. Blanking every notes cell
//! of both development sets changes no prediction and no skip.

use gpuplan_catalog::{
    parse_benchmarks, BenchmarkRow, Catalog, BUNDLED_BENCHMARKS_DEV, BUNDLED_BENCHMARKS_DEV_2,
};
use gpuplan_core::mlperf_inference::bundled_input_lengths;
use gpuplan_core::nonllm::bundled_factors;
use gpuplan_core::training::TrainingFactors;
use gpuplan_core::{validate_all, Calibration};
use std::collections::BTreeMap;

fn predictions(rows: &[BenchmarkRow]) -> BTreeMap<String, (Option<f64>, Option<String>)> {
    let catalog = Catalog::embedded().unwrap();
    let report = validate_all(
        &catalog,
        rows,
        &Calibration::bundled(),
        &TrainingFactors::bundled(),
        &bundled_factors(),
        &bundled_input_lengths(),
    );
    report
        .rows
        .into_iter()
        .map(|r| (r.id, (r.predicted, r.skipped)))
        .collect()
}

#[test]
fn blanking_every_notes_cell_changes_no_prediction() {
    for (file, text) in [
        ("benchmarks_dev.csv", BUNDLED_BENCHMARKS_DEV),
        ("benchmarks_dev_2.csv", BUNDLED_BENCHMARKS_DEV_2),
    ] {
        let rows = parse_benchmarks(file, text).unwrap();
        let blanked: Vec<BenchmarkRow> = rows
            .iter()
            .cloned()
            .map(|mut r| {
                r.notes.clear();
                r
            })
            .collect();
        let with_notes = predictions(&rows);
        let without = predictions(&blanked);
        assert_eq!(with_notes.len(), rows.len(), "{file}: duplicate ids");
        let changed: Vec<_> = with_notes
            .iter()
            .filter(|(id, a)| without.get(*id) != Some(a))
            .map(|(id, a)| format!("{id}: {a:?} → {:?}", without.get(id)))
            .collect();
        let predicted = with_notes.values().filter(|p| p.0.is_some()).count();
        assert!(predicted > 50, "{file}: only {predicted} rows predicted");
        assert!(
            changed.is_empty(),
            "{file}: {} rows depend on notes:\n{}",
            changed.len(),
            changed.join("\n")
        );
    }
}
