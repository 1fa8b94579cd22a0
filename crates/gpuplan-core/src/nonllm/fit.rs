//! Fitting the per-family factors on the non-LLM development rows: each
//! factor touches only its family's rows, so each is a one-dimensional fit
//! (golden-section search on the robust loss within the factor's bounds).

use super::cost::EIGHT_BIT_FACTOR;
use super::validate::predict_nonllm;
use crate::calibration::Calibration;
use crate::validate::soft_l1;
use gpuplan_catalog::{BenchmarkRow, Catalog, NonLlmCatalog};

/// Robust loss (soft-L1 on the log error, as the LLM fit) of the factors over
/// the given rows that are non-LLM rows, and how many were predicted.
pub fn nonllm_loss(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &Calibration,
    factors: &Calibration,
) -> (f64, usize) {
    let Ok(nonllm) = NonLlmCatalog::embedded() else {
        return (0.0, 0);
    };
    rows.iter()
        .filter_map(|row| {
            predict_nonllm(catalog, &nonllm, row, cal, factors)?
                .ok()
                .map(|(p, _)| (p, row.value))
        })
        .filter(|(p, m)| *p > 0.0 && *m > 0.0 && p.is_finite())
        .map(|(p, m)| (soft_l1((p / m).ln()), 1usize))
        .fold((0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// Fits every factor of `template` (`nonllm_efficiency.<family>`) on the rows
/// of its family, independent of the starting values: deterministic, so the
/// bundled `data/nonllm_calibration.csv` equals its output on `benchmarks_dev_2.csv`.
pub fn fit_nonllm_factors(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &Calibration,
    template: &Calibration,
) -> Calibration {
    let Ok(nonllm) = NonLlmCatalog::embedded() else {
        return template.clone();
    };
    let mut fitted = template.clone();
    // Start in the middle of each bound, then alternate one-dimensional fits
    // (the BERT length and the encoder factor share the encoder rows).
    // A factor whose family has no row keeps the template's value.
    for f in &mut fitted.factors {
        let family = family_of(&f.name);
        if rows.iter().any(|r| {
            nonllm
                .model(&r.model)
                .is_some_and(|m| m.family.as_str() == family)
        }) {
            f.value = (f.min * f.max).sqrt();
        }
    }
    for _round in 0..4 {
        for i in 0..fitted.factors.len() {
            fit_one(catalog, rows, cal, &nonllm, &mut fitted, i);
        }
    }
    fitted
}

/// The family a factor belongs to (`nonllm_efficiency.<family>`,
/// `nonllm_8bit_efficiency.<family>`; the BERT data-set length belongs to
/// the encoders).
fn family_of(name: &str) -> &str {
    match name {
        "mlperf_bert_mean_tokens" => "encoder",
        other => other
            .trim_start_matches("nonllm_efficiency.")
            .trim_start_matches(EIGHT_BIT_FACTOR)
            .trim_start_matches('.'),
    }
}

fn fit_one(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &Calibration,
    nonllm: &NonLlmCatalog,
    fitted: &mut Calibration,
    i: usize,
) {
    let family = family_of(&fitted.factors[i].name).to_string();
    let mine: Vec<&BenchmarkRow> = rows
        .iter()
        .filter(|r| {
            nonllm
                .model(&r.model)
                .is_some_and(|m| m.family.as_str() == family)
        })
        .collect();
    if mine.is_empty() {
        return;
    }
    let (lo, hi) = (fitted.factors[i].min, fitted.factors[i].max);
    let mut loss_at = |v: f64| {
        fitted.factors[i].value = v;
        nonllm_loss(catalog, &mine, cal, fitted).0
    };
    let v = crate::validate::golden_section_log(lo, hi, 60, &mut loss_at);
    // Four decimals, as the file holds them.
    fitted.factors[i].value = ((v * 1e4).round() / 1e4).clamp(lo, hi);
}
