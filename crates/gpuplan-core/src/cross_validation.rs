//! Cross-validation of the LLM efficiency fit: the accuracy a user gets on
//! rows the factors never saw, beside the training error `validate` shows.
//!
//! Two splits of the TensorRT-LLM inference rows the fit uses:
//! - k-fold: each row lands in one of k folds by a hash of its id; each
//!   fold is predicted with factors fitted on the other k − 1;
//! - by GPU family: each family is predicted with factors fitted on the
//!   others, its own factors removed — exactly what an uncalibrated
//!   family (Volta, Turing, a new generation) gets: the other families' mean.

use crate::calibration::{family, Calibration};
use crate::validate::{
    fit_calibration_from_bounds, predict_inference, summarize, ErrorSummary, ValidationRow,
};
use gpuplan_catalog::{BenchmarkKind, BenchmarkRow, Catalog};
use serde::Serialize;
use std::collections::BTreeMap;

/// How the rows are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// k folds by a hash of the row id.
    Folds(u32),
    /// One GPU family held out at a time.
    Family,
}

/// One held-out row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldOutRow {
    /// Row id.
    pub id: String,
    /// The fold (k-fold) or the family held out.
    pub group: String,
    /// Error of the prediction with factors fitted on the other groups, percent.
    pub error_pct: f64,
    /// Error with the factors fitted on every row (the training error), percent.
    pub in_sample_error_pct: f64,
}

/// The cross-validation report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrossValidation {
    /// The split.
    pub split: Split,
    /// Rows the fit uses (TensorRT-LLM inference rows the model predicts).
    pub rows: usize,
    /// Free parameters the fit moves.
    pub fitted_factors: usize,
    /// Held-out errors over all rows.
    pub held_out: ErrorSummary,
    /// Training errors over the same rows.
    pub in_sample: ErrorSummary,
    /// Held-out errors per group.
    pub by_group: BTreeMap<String, ErrorSummary>,
    /// Every row, worst held-out error first.
    pub detail: Vec<HeldOutRow>,
}

/// FNV-1a of the id: a fold assignment that does not depend on row order.
fn fold_of(id: &str, k: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % u64::from(k.max(1))) as u32
}

/// Error of `row` predicted with `cal`, percent.
fn error(catalog: &Catalog, row: &BenchmarkRow, cal: &Calibration) -> Option<f64> {
    predict_inference(catalog, row, cal)
        .ok()
        .map(|(p, _)| (p - row.value) / row.value * 100.0)
}

/// Cross-validates the fit of `template`'s factors on `rows` (see the
/// module docs). Rows the fit does not use are left out.
pub fn cross_validate(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    template: &Calibration,
    split: Split,
) -> CrossValidation {
    let usable: Vec<&BenchmarkRow> = rows
        .iter()
        .filter(|r| r.kind == BenchmarkKind::Inference && r.engine == "trtllm")
        .filter(|r| error(catalog, r, template).is_some())
        .collect();
    let group_of = |r: &BenchmarkRow| -> String {
        match split {
            Split::Folds(k) => format!("fold {}", fold_of(&r.id, k) + 1),
            Split::Family => catalog
                .gpu(&r.gpu)
                .map(|g| family(g).to_string())
                .unwrap_or_default(),
        }
    };
    let full = fit_calibration_from_bounds(catalog, rows, template);
    let groups: std::collections::BTreeSet<String> = usable.iter().map(|r| group_of(r)).collect();
    let mut detail = Vec::new();
    for g in &groups {
        let train: Vec<BenchmarkRow> = rows
            .iter()
            .filter(|r| !usable.iter().any(|u| u.id == r.id) || group_of(r) != *g)
            .cloned()
            .collect();
        let mut fitted = fit_calibration_from_bounds(catalog, &train, template);
        let present: std::collections::BTreeSet<String> = usable
            .iter()
            .filter(|r| group_of(r) != *g)
            .filter_map(|r| catalog.gpu(&r.gpu).ok().map(|gpu| family(gpu).to_string()))
            .collect();
        drop_unfitted_families(&mut fitted, &present);
        for r in usable.iter().filter(|r| group_of(r) == *g) {
            if let (Some(e), Some(e0)) = (error(catalog, r, &fitted), error(catalog, r, &full)) {
                detail.push(HeldOutRow {
                    id: r.id.clone(),
                    group: g.clone(),
                    error_pct: e,
                    in_sample_error_pct: e0,
                });
            }
        }
    }
    detail.sort_by(|a, b| b.error_pct.abs().total_cmp(&a.error_pct.abs()));
    summarize_held_out(split, usable.len(), &full, &groups, detail)
}

/// A family without training rows (the held-out family, or one a fold
/// happens to empty) keeps no factors of its own: it falls back to the
/// others' mean, as an uncalibrated family does. `present` names the
/// families the fit had rows of.
fn drop_unfitted_families(fitted: &mut Calibration, present: &std::collections::BTreeSet<String>) {
    fitted.factors.retain(|f| {
        let per_family = f.name.starts_with("compute_efficiency.")
            || f.name.starts_with("bandwidth_efficiency.");
        let fam = f.name.split('.').nth(1).unwrap_or_default();
        !per_family || crate::validate::fitted_by_another_fit(&f.name) || present.contains(fam)
    });
}

/// The held-out and in-sample summaries, overall and per group, of the
/// held-out rows in `detail` (worst first).
fn summarize_held_out(
    split: Split,
    rows: usize,
    full: &Calibration,
    groups: &std::collections::BTreeSet<String>,
    detail: Vec<HeldOutRow>,
) -> CrossValidation {
    let as_rows = |pick: fn(&HeldOutRow) -> f64, only: Option<&str>| -> Vec<ValidationRow> {
        detail
            .iter()
            .filter(|d| only.is_none_or(|g| d.group == g))
            .map(|d| ValidationRow::error_only(&d.id, pick(d)))
            .collect()
    };
    let by_group = groups
        .iter()
        .map(|g| {
            let rows = as_rows(|d| d.error_pct, Some(g));
            (g.clone(), summarize(rows.iter()))
        })
        .collect();
    let held = as_rows(|d| d.error_pct, None);
    let inside = as_rows(|d| d.in_sample_error_pct, None);
    CrossValidation {
        split,
        rows,
        fitted_factors: full
            .factors
            .iter()
            .filter(|f| !crate::validate::fitted_by_another_fit(&f.name))
            .count(),
        held_out: summarize(held.iter()),
        in_sample: summarize(inside.iter()),
        by_group,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_are_stable_and_spread() {
        let ids: Vec<String> = (0..200).map(|i| format!("row-{i}")).collect();
        let mut counts = [0u32; 5];
        for id in &ids {
            let f = fold_of(id, 5);
            assert_eq!(f, fold_of(id, 5));
            counts[f as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (25..=55).contains(&c)), "{counts:?}");
    }
}
