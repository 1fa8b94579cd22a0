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
fn the_bundled_calibration_is_what_the_fit_produces() {
    let catalog = Catalog::embedded().unwrap();
    let rows = parse_benchmarks("benchmarks_dev.csv", BUNDLED_BENCHMARKS_DEV).unwrap();
    let bundled = Calibration::bundled();
    let fitted = gpuplan_core::fit_calibration(&catalog, &rows, &bundled);
    for (f, b) in fitted.factors.iter().zip(&bundled.factors) {
        assert_eq!(f.name, b.name);
        assert!(
            f.value >= f.min && f.value <= f.max,
            "{} out of bounds",
            f.name
        );
        // calibration.csv stores 4 decimals
        assert!(
            (f.value - b.value).abs() <= 6e-5,
            "{}: the fit gives {} but data/calibration.csv has {} (rerun `gpuplan validate --fit --kind inference --write-calibration data/calibration.csv`)",
            f.name, f.value, b.value
        );
    }
    let inference: Vec<_> = rows
        .iter()
        .filter(|r| r.kind == BenchmarkKind::Inference)
        .collect();
    let (fitted_loss, n) = gpuplan_core::calibration_loss(&catalog, &inference, &fitted);
    let mut perturbed = bundled.clone();
    for f in &mut perturbed.factors {
        f.value = (f.value * 1.1).clamp(f.min, f.max);
    }
    let (worse, m) = gpuplan_core::calibration_loss(&catalog, &inference, &perturbed);
    assert_eq!(n, m);
    assert!(fitted_loss < worse, "the fit beats a 10% perturbation");
}
