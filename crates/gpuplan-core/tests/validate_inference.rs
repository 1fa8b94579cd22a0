//! The inference rows of the development set are predicted within the targets.

use gpuplan_catalog::{parse_benchmarks, BenchmarkKind, Catalog, BUNDLED_BENCHMARKS_DEV};
use gpuplan_core::{validate, Calibration};

#[test]
fn inference_rows_meet_the_accuracy_targets() {
    let catalog = Catalog::embedded().unwrap();
    let rows = parse_benchmarks("benchmarks_dev.csv", BUNDLED_BENCHMARKS_DEV).unwrap();
    let report = validate(&catalog, &rows, &Calibration::bundled());
    let s = &report.summary.by_kind["inference"];
    let total = s.n_predicted + s.n_skipped;
    assert!(
        s.n_predicted as f64 >= 0.95 * total as f64,
        "{} of {total} predicted",
        s.n_predicted
    );
    let median = s.median_abs_pct_error.unwrap();
    let p90 = s.p90_abs_pct_error.unwrap();
    assert!(median <= 10.0, "median {median}");
    assert!(p90 <= 30.0, "p90 {p90}");
    // Every skipped row says why.
    for r in report
        .rows
        .iter()
        .filter(|r| r.kind == BenchmarkKind::Inference && r.predicted.is_none())
    {
        assert!(!r.skipped.as_deref().unwrap_or("").is_empty(), "{}", r.id);
    }
}

#[test]
fn the_fit_is_reproducible_and_does_not_worsen_the_loss() {
    let catalog = Catalog::embedded().unwrap();
    let rows = parse_benchmarks("benchmarks_dev.csv", BUNDLED_BENCHMARKS_DEV).unwrap();
    let start = Calibration::bundled();
    let inference: Vec<_> = rows
        .iter()
        .filter(|r| r.kind == BenchmarkKind::Inference)
        .collect();
    let (before, n) = gpuplan_core::calibration_loss(&catalog, &inference, &start);
    let fitted = gpuplan_core::fit_calibration(&catalog, &rows, &start);
    let (after, m) = gpuplan_core::calibration_loss(&catalog, &inference, &fitted);
    assert_eq!(n, m);
    assert!(after <= before + 1e-12, "{after} > {before}");
    for f in &fitted.factors {
        assert!(
            f.value >= f.min && f.value <= f.max,
            "{} out of bounds",
            f.name
        );
    }
    let again = gpuplan_core::fit_calibration(&catalog, &rows, &start);
    assert_eq!(fitted, again, "deterministic");
}
