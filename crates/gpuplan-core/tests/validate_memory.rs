//! The memory rows of the development benchmark set are reproduced.

use gpuplan_catalog::{parse_benchmarks, BenchmarkKind, Catalog, BUNDLED_BENCHMARKS_DEV};
use gpuplan_core::{validate, Calibration};

#[test]
fn memory_rows_of_benchmarks_dev_are_reproduced() {
    let catalog = Catalog::embedded().unwrap();
    let rows = parse_benchmarks("benchmarks_dev.csv", BUNDLED_BENCHMARKS_DEV).unwrap();
    let report = validate(&catalog, &rows, &Calibration::bundled());
    let memory: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.kind == BenchmarkKind::Memory)
        .collect();
    assert!(memory.len() >= 8, "{}", memory.len());
    for r in &memory {
        let err = r
            .error_pct
            .unwrap_or_else(|| panic!("{} skipped: {:?}", r.id, r.skipped));
        let limit = if r.metric == "param_count" { 0.5 } else { 15.0 };
        assert!(
            err.abs() <= limit,
            "{} {}: measured {} predicted {:?} ({err:.2}%)",
            r.id,
            r.metric,
            r.measured,
            r.predicted
        );
    }
    let summary = &report.summary.by_kind["memory"];
    assert_eq!(summary.n_skipped, 0);
    assert_eq!(summary.within_25pct, Some(1.0));
}
