//! Cross-validation of the LLM efficiency fit: held-out rows never reach the
//! fit that predicts them, and the held-out accuracy stays near the training
//! accuracy the README reports.

use gpuplan_catalog::{parse_benchmarks, Catalog, BUNDLED_BENCHMARKS_DEV};
use gpuplan_core::{cross_validate, Calibration, Split};

fn rows() -> Vec<gpuplan_catalog::BenchmarkRow> {
    parse_benchmarks("benchmarks_dev.csv", BUNDLED_BENCHMARKS_DEV).unwrap()
}

#[test]
fn a_held_out_fold_never_informs_its_own_prediction() {
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let rows = rows();
    let before = cross_validate(&catalog, &rows, &cal, Split::Folds(5));
    // Corrupt one row's measurement tenfold: the rows of its fold are
    // predicted by factors fitted without it, so only its own error moves.
    let victim = before.detail[before.detail.len() / 2].clone();
    let mut corrupted = rows.clone();
    for r in &mut corrupted {
        if r.id == victim.id {
            r.value *= 10.0;
        }
    }
    let after = cross_validate(&catalog, &corrupted, &cal, Split::Folds(5));
    let mut moved_outside = 0;
    for d in &after.detail {
        let b = before.detail.iter().find(|b| b.id == d.id).unwrap();
        if d.id == victim.id {
            // Same prediction, a measurement 10× larger.
            let predicted = (1.0 + b.error_pct / 100.0) * 1.0;
            let expected = (predicted / 10.0 - 1.0) * 100.0;
            assert!(
                (d.error_pct - expected).abs() < 1e-6,
                "{} vs {expected}",
                d.error_pct
            );
        } else if d.group == victim.group {
            assert!((d.error_pct - b.error_pct).abs() < 1e-9, "{} moved", d.id);
        } else if (d.error_pct - b.error_pct).abs() > 1e-9 {
            moved_outside += 1;
        }
    }
    // The other folds' fits saw the corrupted row: their predictions move.
    assert!(
        moved_outside > 0,
        "the corrupted row reached no other fold's fit"
    );
}

#[test]
fn held_out_accuracy_is_reported_beside_training_accuracy() {
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let cv = cross_validate(&catalog, &rows(), &cal, Split::Folds(5));
    assert!(cv.rows >= 80, "{} rows", cv.rows);
    assert_eq!(
        cv.detail.len(),
        cv.rows,
        "every usable row is held out once"
    );
    assert_eq!(cv.by_group.len(), 5);
    let held = cv.held_out.median_abs_pct_error.unwrap();
    let inside = cv.in_sample.median_abs_pct_error.unwrap();
    assert!(
        held >= inside - 0.5,
        "held out {held}% vs training {inside}%"
    );
    // Regression guards at today's levels (README: validate --cv 5).
    assert!(held <= 8.0, "held-out median {held}%");
    assert!(cv.held_out.p90_abs_pct_error.unwrap() <= 22.0);
    // A family held out falls back to the others' mean: worse, but bounded.
    let fam = cross_validate(&catalog, &rows(), &cal, Split::Family);
    assert!(fam.by_group.contains_key("Hopper") && fam.by_group.contains_key("Ampere"));
    let fam_median = fam.held_out.median_abs_pct_error.unwrap();
    assert!(fam_median > held && fam_median <= 20.0, "{fam_median}%");
}
