//! Fitting an engine's step time relative to TensorRT-LLM
//! (`engine_step_time.*` in `data/calibration.csv`) on that engine's
//! published rows on NVIDIA GPUs, whose families' factors stand for
//! TensorRT-LLM. Rows on families fitted on the same engine (CDNA3 under
//! ROCm vLLM) say nothing about the ratio and are left out.

use crate::calibration::Calibration;
use crate::engine::Engine;
use crate::mlperf_inference::{is_mlperf_llm_row, predict_mlperf_llm};
use crate::validate::{predict_inference, Prediction};
use gpuplan_catalog::{BenchmarkKind, BenchmarkRow, Catalog};

/// Fewest rows that may set an engine's factor.
pub const MIN_ENGINE_ROWS: usize = 3;

/// The engines whose step-time factor is fitted, with the `engine` column
/// value their rows carry.
const FITTED: [(Engine, &str); 1] = [(Engine::Vllm, "vllm")];

/// A row's prediction through the path `validate` takes for it.
fn predict(
    catalog: &Catalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    lengths: &Calibration,
) -> Prediction {
    if is_mlperf_llm_row(row) {
        predict_mlperf_llm(catalog, row, cal, lengths)
    } else {
        predict_inference(catalog, row, cal)
    }
}

/// The LLM inference rows of `engine` on GPUs whose factors stand for
/// another engine (so the rows constrain the ratio), that the model predicts.
pub fn engine_rows<'a>(
    catalog: &Catalog,
    rows: &'a [BenchmarkRow],
    engine_column: &str,
    cal: &Calibration,
    lengths: &Calibration,
) -> Vec<&'a BenchmarkRow> {
    rows.iter()
        .filter(|r| r.kind == BenchmarkKind::Inference && r.engine == engine_column)
        .filter(|r| {
            catalog
                .gpu(&r.gpu)
                .is_ok_and(|g| Engine::reference_for(g) == Engine::Trtllm)
        })
        .filter(|r| predict(catalog, r, cal, lengths).is_ok())
        .collect()
}

/// Mean absolute log error of `rows` (an L1 loss: one far-off submission
/// cannot drag the factor the way a squared loss would).
pub fn engine_loss(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &Calibration,
    lengths: &Calibration,
) -> f64 {
    let errors: Vec<f64> = rows
        .iter()
        .filter_map(|r| {
            predict(catalog, r, cal, lengths)
                .ok()
                .map(|(p, _)| (p / r.value).ln().abs())
        })
        .collect();
    errors.iter().sum::<f64>() / errors.len().max(1) as f64
}

/// Fits each fitted engine factor (vLLM's) with at least [`MIN_ENGINE_ROWS`]
/// rows: golden-section search on its log over the factor's bounds, 4
/// decimals as the file holds them. Other factors are untouched.
pub fn fit_engine_factors(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &Calibration,
    lengths: &Calibration,
) -> Calibration {
    let mut fitted = cal.clone();
    for (engine, column) in FITTED {
        let Some(name) = engine.step_time_factor_name() else {
            continue;
        };
        let Some(i) = fitted.factors.iter().position(|f| f.name == name) else {
            continue;
        };
        let mine = engine_rows(catalog, rows, column, &fitted, lengths);
        if mine.len() < MIN_ENGINE_ROWS {
            continue;
        }
        let (min, max) = (fitted.factors[i].min, fitted.factors[i].max);
        let mut loss_at = |v: f64| {
            fitted.factors[i].value = v;
            engine_loss(catalog, &mine, &fitted, lengths)
        };
        let best = golden_log(min, max, &mut loss_at);
        fitted.factors[i].value = (best * 1e4).round() / 1e4;
    }
    fitted
}

/// The minimiser of `f` on [lo, hi] by golden-section search on ln x
/// (60 steps: far below the 4 decimals kept).
fn golden_log(lo: f64, hi: f64, f: &mut impl FnMut(f64) -> f64) -> f64 {
    const INV_PHI: f64 = 0.618_033_988_749_894_9;
    let (mut a, mut b) = (lo.ln(), hi.ln());
    let mut c = b - INV_PHI * (b - a);
    let mut d = a + INV_PHI * (b - a);
    let (mut fc, mut fd) = (f(c.exp()), f(d.exp()));
    for _ in 0..60 {
        if fc <= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - INV_PHI * (b - a);
            fc = f(c.exp());
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + INV_PHI * (b - a);
            fd = f(d.exp());
        }
    }
    (0.5 * (a + b)).exp()
}
