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

#[test]
fn the_fit_reports_its_starts_and_drops_factors_no_row_pins() {
    let catalog = Catalog::embedded().unwrap();
    let all = parse_benchmarks("benchmarks_dev.csv", BUNDLED_BENCHMARKS_DEV).unwrap();
    // Only the Hopper rows: Ampere, Ada and Blackwell factors are pinned by nothing.
    let rows: Vec<_> = all
        .into_iter()
        .filter(|r| {
            catalog
                .gpu(&r.gpu)
                .is_ok_and(|g| gpuplan_core::family(g) == "Hopper")
        })
        .collect();
    let bundled = Calibration::bundled();
    let report = gpuplan_core::fit_calibration_report(&catalog, &rows, &bundled);
    // The bounds' starts and the given table.
    assert_eq!(report.starts, gpuplan_core::FIT_STARTS + 1);
    assert!(report.start_losses.len() > 1, "several starts descended");
    let lowest = report.start_losses.iter().copied().fold(f64::MAX, f64::min);
    assert!(
        report.loss <= lowest * 1.01 + 1e-12,
        "kept a start within 1% of the best"
    );
    let status = |name: &str| {
        report
            .factors
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} reported"))
            .status
    };
    use gpuplan_core::FactorStatus::*;
    assert_eq!(status("bandwidth_efficiency.Ampere"), Unconstrained);
    assert_eq!(status("compute_efficiency.Blackwell.4"), Unconstrained);
    assert!(matches!(
        status("bandwidth_efficiency.Hopper"),
        Fitted | AtLowerBound | AtUpperBound
    ));
    assert_eq!(status("engine_step_time.vllm"), OtherFit);
    // The free count is the factors actually moved.
    let moved = report
        .factors
        .iter()
        .filter(|f| matches!(f.status, Fitted | AtLowerBound | AtUpperBound))
        .count();
    assert_eq!(report.free_factors, moved);
    // A dropped family falls back to the fitted families' mean and is flagged.
    let a100 = catalog.gpu("A100-SXM-80GB").unwrap();
    assert!(bundled.has_family(a100));
    assert!(!report.calibration.has_family(a100));
    assert!(report
        .calibration
        .get("bandwidth_efficiency.Ampere")
        .is_none());
    // Every fitted factor has a sensitivity.
    for f in report.factors.iter().filter(|f| f.status == Fitted) {
        assert!(f.loss_rise_pct.is_some_and(f64::is_finite), "{}", f.name);
    }
    // A refit of the fitted table keeps its optimum (the given table wins
    // the tie, so fits coupled to this one converge instead of flipping
    // between near-tied optima); the polish may still move a flat factor a
    // little.
    let again = gpuplan_core::fit_calibration_report(&catalog, &rows, &report.calibration);
    assert_eq!(
        again.chosen_start,
        gpuplan_core::FIT_STARTS,
        "the given table kept"
    );
    for f in &report.calibration.factors {
        let v = again.calibration.get(&f.name).unwrap();
        assert!(
            (v - f.value).abs() <= 0.02 * f.value.abs().max(1e-3),
            "{}: {} then {v}",
            f.name,
            f.value
        );
    }
    assert!(again.loss <= report.loss * (1.0 + 1e-9));
}

/// A trtllm-bench row that states its request count is predicted as that
/// finite run: a few batches' worth of requests pay for the ramp-up and the
/// drain (below the steady state), many batches' worth approach it.
#[test]
fn a_max_throughput_row_with_a_request_count_is_a_finite_run() {
    let catalog = Catalog::embedded().unwrap();
    let rows = parse_benchmarks("benchmarks_dev.csv", BUNDLED_BENCHMARKS_DEV).unwrap();
    let cal = Calibration::bundled();
    // 70B FP8 on 2 × H100, 128/2048: a few hundred sequences in flight.
    let base = rows
        .iter()
        .find(|r| r.id == "trtllm-main-037")
        .expect("row trtllm-main-037")
        .clone();
    // The perf-overview's documented run: 3,000 requests at 128/2048.
    assert!(base.requests == Some(3000) && base.scenario == "offline");
    let run = |requests: Option<u64>| {
        let row = gpuplan_catalog::BenchmarkRow {
            requests,
            ..base.clone()
        };
        validate(&catalog, &[row], &cal).rows.remove(0)
    };
    let predict = |requests: Option<u64>| run(requests).predicted.unwrap();
    // Sequences in flight, from "compute, N by kv-capacity": the run's waves.
    let bound = run(None).bound.unwrap();
    let in_flight: u64 = bound
        .split(", ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{bound}"));
    // Equal requests start and end in waves: a fifth of a wave at the end
    // costs a whole wave's 2048 steps.
    let wave = |waves: u64| Some(waves * in_flight + in_flight / 5);
    let steady = predict(None);
    let short = predict(wave(4));
    let twelve_waves = predict(wave(12));
    let long = predict(wave(1000));
    assert!(
        short < twelve_waves && twelve_waves < steady,
        "{short} {twelve_waves} {steady}"
    );
    assert!(short < 0.95 * steady, "{short} vs {steady}");
    assert!((long / steady - 1.0).abs() < 0.03, "{long} vs {steady}");
    // The bundled row predicts its documented run, not the steady state.
    let bundled = validate(&catalog, std::slice::from_ref(&base), &cal)
        .rows
        .remove(0);
    assert_eq!(bundled.predicted, Some(predict(Some(3000))));
    assert!(bundled.predicted.unwrap() < steady);
}
