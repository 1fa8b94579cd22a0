//! The LLM efficiency fit: bounded coordinate descent from several starts
//! (explored on a steady-state surrogate, polished on the rows), factors no
//! row constrains left out, and each fitted factor's sensitivity.

use super::{calibration_loss, fitted_by_another_fit, predict_inference, soft_l1};
use crate::calibration::Calibration;
use gpuplan_catalog::{BenchmarkKind, BenchmarkRow, Catalog};
use serde::Serialize;

/// Starting points of the fit: the middle of every bound, then
/// [`FIT_STARTS`] − 1 points of a Halton sequence over the bounds.
pub const FIT_STARTS: usize = 8;

/// Optima whose loss is within this share of the lowest count as ties.
const TIE: f64 = 0.01;

/// A fitted factor this close to a bound (relative) counts as at the bound.
const AT_BOUND: f64 = 1e-3;

/// A factor whose ±20% change moves no prediction by more than this
/// (relative) is not constrained by the rows.
const UNCONSTRAINED: f64 = 1e-9;

/// What the fit did with one factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactorStatus {
    /// Fitted inside its bounds.
    Fitted,
    /// Fitted, and the optimum sits on the lower bound.
    AtLowerBound,
    /// Fitted, and the optimum sits on the upper bound.
    AtUpperBound,
    /// No row's prediction depends on it: left out of the fit. A per-family
    /// factor is dropped (the family falls back to the others' mean and is
    /// flagged uncalibrated); a global factor keeps its given value.
    Unconstrained,
    /// Fitted by another fit on other rows (CDNA3 on ROCm vLLM, engine step times).
    OtherFit,
}

/// One factor of the fit report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactorFit {
    /// Factor name, as in `calibration.csv`.
    pub name: String,
    /// Fitted value (the given one when not fitted here).
    pub value: f64,
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
    /// What the fit did with it.
    pub status: FactorStatus,
    /// The factor shapes only the benchmark harnesses (trtllm-bench's and
    /// the Triton burst's KV capacity), never a plan: fitted on the rows, but
    /// no plan or estimate reads it.
    pub harness_only: bool,
    /// Sensitivity: how much the fit's loss rises, percent, when the factor
    /// moves 10% away from its fitted value in the flatter direction (inside
    /// its bounds). Near 0: the rows barely pin the factor; below 0: the loss
    /// is rough in it (a step function, e.g. through whole KV blocks) and
    /// the descent stopped on a step.
    pub loss_rise_pct: Option<f64>,
}

/// The outcome of [`fit_calibration_report`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitReport {
    /// The fitted table.
    #[serde(skip)]
    pub calibration: Calibration,
    /// Rows the fit used (TensorRT-LLM inference rows the model predicts).
    pub rows: usize,
    /// Factors the fit moved (free parameters).
    pub free_factors: usize,
    /// Starting points tried (the bounds' starts, and the given table).
    pub starts: usize,
    /// The loss on the rows at each start's optimum (before the polish), in
    /// start order, the given table's last (a start that left a row
    /// unpredicted is missing): their spread shows how flat the loss is.
    pub start_losses: Vec<f64>,
    /// The start whose optimum was kept (0: the middle of every bound;
    /// [`FIT_STARTS`]: the given table).
    pub chosen_start: usize,
    /// Soft-L1 loss at the chosen optimum.
    pub loss: f64,
    /// Every factor of the table, in its order.
    pub factors: Vec<FactorFit>,
}

/// Fits the factors named in `template` on the inference rows; see
/// [`fit_calibration_report`].
pub fn fit_calibration(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    template: &Calibration,
) -> Calibration {
    fit_calibration_report(catalog, rows, template).calibration
}

/// Fits the factors named in `template` on the TensorRT-LLM inference rows
/// by bounded coordinate descent (each factor in turn scaled up or down by a
/// step while the loss falls; steps halve until below 0.1%) from
/// [`FIT_STARTS`] deterministic starting points (the middle of every bound,
/// then Halton points), so a local optimum near the middle does not hide a
/// better one. The starts descend on the rows' steady-state surrogate (a
/// trtllm-bench run of N requests priced as its steady state); each
/// optimum, and the given table itself, is then scored on the rows as they
/// are. Optima within 1% of the lowest loss are equally good fits of these
/// rows; among them the given table is kept when it is one (a refit of a
/// fitted table changes nothing, so a fit coupled with another one, like the
/// MLPerf CDNA3 fit, converges instead of flipping between near-tied
/// optima), else the earliest start's. The kept one is polished on the rows
/// as they are. Factors no row constrains are left out (see
/// [`FactorStatus::Unconstrained`]). Deterministic: the bundled
/// `data/calibration.csv` is exactly its output on `benchmarks_dev.csv`.
pub fn fit_calibration_report(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    template: &Calibration,
) -> FitReport {
    fit_report(catalog, rows, template, FromGiven::Yes)
}

/// The fit of [`fit_calibration_report`] from the bounds' starts only: the
/// result depends on the rows and the bounds, never on the values of
/// `template`. Cross-validation fits this way, so no fold starts from a
/// table fitted on the rows it holds out.
pub fn fit_calibration_from_bounds(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    template: &Calibration,
) -> Calibration {
    fit_report(catalog, rows, template, FromGiven::No).calibration
}

/// Whether the fit also descends from the given table's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FromGiven {
    Yes,
    No,
}

fn fit_report(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    template: &Calibration,
    from_given: FromGiven,
) -> FitReport {
    // The factors stand for TensorRT-LLM: other engines' rows fit their
    // own step-time factor (`fit_engine_factors`).
    let inference: Vec<&BenchmarkRow> = rows
        .iter()
        .filter(|r| r.kind == BenchmarkKind::Inference && r.engine == "trtllm")
        .collect();
    let (_, n_rows) = calibration_loss(catalog, &inference, template);
    if n_rows == 0 {
        // Nothing to fit on (e.g. only variable-length MLPerf rows): keep the template.
        return report_without_fit(template);
    }
    // The starts explore on the steady-state surrogate of the rows (a
    // trtllm-bench run of N requests priced as its steady state, tens of
    // times cheaper than the run), and each start's optimum is then scored
    // on the rows as they are. A factor moves a run exactly when it moves
    // its steady state, so the surrogate also tells which factors the rows pin.
    let surrogate_rows = steady_state_surrogate(&inference);
    let surrogate: Vec<&BenchmarkRow> = surrogate_rows.iter().collect();
    let status = constrained_status(catalog, &surrogate, template);
    let free: Vec<usize> = (0..template.factors.len())
        .filter(|&i| status[i] == FactorStatus::Fitted)
        .collect();
    let (_, n_surrogate) = calibration_loss(catalog, &surrogate, template);
    let mut optima: Vec<(usize, f64, Calibration)> = Vec::new();
    for start in 0..FIT_STARTS {
        let mut cal = template.clone();
        for (j, &i) in free.iter().enumerate() {
            let f = &mut cal.factors[i];
            f.value = start_value(f.min, f.max, start, j);
        }
        if descend(
            catalog,
            &surrogate,
            &mut cal,
            &free,
            n_surrogate,
            FIRST_STEP,
        )
        .is_none()
        {
            continue;
        }
        let (loss, n) = calibration_loss(catalog, &inference, &cal);
        if n == n_rows {
            optima.push((start, loss, cal));
        }
    }
    // The given table, as its own start (numbered after the bounds' starts),
    // scored as it is: at an optimum already, the polish below keeps it.
    let mut given_optimum = None;
    if from_given == FromGiven::Yes {
        let (loss, n) = calibration_loss(catalog, &inference, template);
        if n == n_rows {
            given_optimum = Some((FIT_STARTS, loss, template.clone()));
        }
    }
    let starts = FIT_STARTS + usize::from(from_given == FromGiven::Yes);
    let start_losses: Vec<f64> = optima
        .iter()
        .chain(given_optimum.iter())
        .map(|(_, l, _)| *l)
        .collect();
    let Some(lowest) = start_losses.iter().copied().reduce(f64::min) else {
        return report_without_fit(template);
    };
    // Optima within TIE of the lowest are equally good fits of these rows:
    // keep the given table's when it is one, else the earliest start's (the
    // middle of the bounds first), so noise-level differences in loss do not
    // swap the bundled table for another.
    let tied = |(_, l, _): &(usize, f64, Calibration)| *l <= lowest * (1.0 + TIE);
    let Some((chosen_start, loss, mut cal)) = given_optimum
        .filter(tied)
        .or_else(|| optima.into_iter().find(tied))
    else {
        return report_without_fit(template);
    };
    // Polish the kept optimum on the rows as they are, from small steps and
    // until a pass moves nothing (coupled factors leave room after a descent).
    let loss = polish(catalog, &inference, &mut cal, &free, n_rows).unwrap_or(loss);
    let factors = factor_report(catalog, &inference, &cal, &status, loss);
    // Per-family factors no row pins fall back to the other families' mean.
    cal.factors.retain(|f| {
        let i = template.factors.iter().position(|t| t.name == f.name);
        !(i.is_some_and(|i| status[i] == FactorStatus::Unconstrained) && is_per_family(&f.name))
    });
    FitReport {
        calibration: cal,
        rows: n_rows,
        free_factors: free.len(),
        starts,
        start_losses,
        chosen_start,
        loss,
        factors,
    }
}

/// The report of a fit that had no rows: every factor as given.
fn report_without_fit(template: &Calibration) -> FitReport {
    FitReport {
        calibration: template.clone(),
        rows: 0,
        free_factors: 0,
        starts: 0,
        start_losses: Vec::new(),
        chosen_start: 0,
        loss: 0.0,
        factors: template
            .factors
            .iter()
            .map(|f| FactorFit {
                name: f.name.clone(),
                value: f.value,
                min: f.min,
                max: f.max,
                status: if fitted_by_another_fit(&f.name) {
                    FactorStatus::OtherFit
                } else {
                    FactorStatus::Unconstrained
                },
                harness_only: shapes_only_the_harness(&f.name),
                loss_rise_pct: None,
            })
            .collect(),
    }
}

/// Factors only the benchmark harnesses read: TensorRT-LLM's runtime
/// reserve sizes trtllm-bench's and the Triton burst's KV cache; plans size
/// the KV cache from the memory model and the engine's memory share.
pub fn shapes_only_the_harness(name: &str) -> bool {
    name == "trtllm_runtime_reserve_gib"
}

/// Efficiency factors keyed by GPU family (`compute_efficiency.Hopper.8`).
fn is_per_family(name: &str) -> bool {
    name.starts_with("compute_efficiency.") || name.starts_with("bandwidth_efficiency.")
}

/// Whether each factor is fitted here, fitted elsewhere, or pinned by no
/// row: a factor is unconstrained when a 20% change moves no prediction.
fn constrained_status(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    template: &Calibration,
) -> Vec<FactorStatus> {
    let predictions = |cal: &Calibration| -> Vec<Option<f64>> {
        rows.iter()
            .map(|r| predict_inference(catalog, r, cal).ok().map(|(p, _)| p))
            .collect()
    };
    let base = predictions(template);
    (0..template.factors.len())
        .map(|i| {
            let f = &template.factors[i];
            if fitted_by_another_fit(&f.name) {
                return FactorStatus::OtherFit;
            }
            let mut moved = template.clone();
            moved.factors[i].value = perturbed(f.value, f.min, f.max, 0.2);
            let changed = base
                .iter()
                .zip(predictions(&moved))
                .any(|(a, b)| match (a, b) {
                    (Some(a), Some(b)) => ((b - a) / a).abs() > UNCONSTRAINED,
                    (None, None) => false,
                    _ => true,
                });
            if changed {
                FactorStatus::Fitted
            } else {
                FactorStatus::Unconstrained
            }
        })
        .collect()
}

/// `value` moved by the share `by` up, or down where up leaves the bounds.
fn perturbed(value: f64, min: f64, max: f64, by: f64) -> f64 {
    if value <= 0.0 {
        return min + by * (max - min);
    }
    if value * (1.0 + by) <= max {
        value * (1.0 + by)
    } else {
        (value * (1.0 - by)).max(min)
    }
}

/// The starting value of the `j`-th free factor at start `start`: the
/// middle of its bounds for start 0, else the Halton point (base: the
/// `j`-th prime), on a log scale where both bounds are positive.
fn start_value(min: f64, max: f64, start: usize, j: usize) -> f64 {
    let u = if start == 0 {
        return 0.5 * (min + max);
    } else {
        halton(start, PRIMES[j % PRIMES.len()])
    };
    if min > 0.0 {
        (min.ln() + u * (max.ln() - min.ln())).exp()
    } else {
        min + u * (max - min)
    }
}

const PRIMES: [usize; 24] = [
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89,
];

/// The `index`-th element of the van der Corput sequence in `base`, in (0, 1).
fn halton(index: usize, base: usize) -> f64 {
    let (mut i, mut f, mut r) = (index, 1.0, 0.0);
    while i > 0 {
        f /= base as f64;
        r += f * (i % base) as f64;
        i /= base;
    }
    r
}

/// Bounded coordinate descent over the `free` factors of `cal`, in place.
/// Returns the final loss, or None when the start leaves some row unpredicted.
///
/// Each row's loss term is kept; a move of one factor re-predicts only the
/// rows it can change ([`moved_rows`]): a family's own efficiencies leave
/// the other families' rows alone. The loss is summed in row order, so it
/// does not depend on how the rows were spread over threads.
fn descend(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &mut Calibration,
    free: &[usize],
    n_rows: usize,
    first_step: f64,
) -> Option<f64> {
    descent(catalog, rows, cal, free, n_rows, first_step, false)
}

/// [`descend`] from steps of [`POLISH_STEP`], restarting the steps while a
/// pass still lowers the loss.
fn polish(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &mut Calibration,
    free: &[usize],
    n_rows: usize,
) -> Option<f64> {
    descent(catalog, rows, cal, free, n_rows, POLISH_STEP, true)
}

/// First relative step of a descent from a start.
const FIRST_STEP: f64 = 0.2;

/// Relative step a polish starts from (and restarts at).
const POLISH_STEP: f64 = 0.05;

fn descent(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &mut Calibration,
    free: &[usize],
    n_rows: usize,
    first_step: f64,
    polish: bool,
) -> Option<f64> {
    let all: Vec<usize> = (0..rows.len()).collect();
    let mut terms = loss_terms(catalog, rows, cal, &all);
    if terms.iter().flatten().count() != n_rows {
        return None;
    }
    let total = |terms: &[Option<f64>]| terms.iter().flatten().sum::<f64>();
    let mut best = total(&terms);
    let moved_by: Vec<Vec<usize>> = free
        .iter()
        .map(|&i| moved_rows(catalog, rows, cal, &cal.factors[i].name))
        .collect();
    let mut steps: Vec<f64> = vec![first_step; free.len()];
    // Loss at the last reset of the steps: a pass that ends below it moved
    // some factor, which may have opened room for another one (coupled
    // factors), so the steps start again until a pass finds nothing.
    let mut reset_at = best;
    for _sweep in 0..1000 {
        let mut improved = false;
        for (k, &i) in free.iter().enumerate() {
            if steps[k] < 1e-3 {
                continue;
            }
            let mut moved = false;
            for direction in [1.0, -1.0] {
                let f = &cal.factors[i];
                let candidate = (f.value * (1.0 + direction * steps[k])).clamp(f.min, f.max);
                if (candidate - f.value).abs() < 1e-12 {
                    continue;
                }
                let old = f.value;
                cal.factors[i].value = candidate;
                let mut trial = terms.clone();
                for (&r, term) in
                    moved_by[k]
                        .iter()
                        .zip(loss_terms(catalog, rows, cal, &moved_by[k]))
                {
                    trial[r] = term;
                }
                let loss = total(&trial);
                if trial.iter().flatten().count() == n_rows && loss < best - 1e-12 {
                    best = loss;
                    terms = trial;
                    moved = true;
                    improved = true;
                    break;
                }
                cal.factors[i].value = old;
            }
            if !moved {
                steps[k] /= 2.0;
            }
        }
        if !improved && steps.iter().all(|s| *s < 1e-3) {
            if !polish || best >= reset_at * (1.0 - 1e-6) {
                break;
            }
            reset_at = best;
            steps.iter_mut().for_each(|s| *s = POLISH_STEP);
        }
    }
    Some(best)
}

/// The rows with every trtllm-bench run of N requests priced as its steady
/// state (the `requests` cell of an offline row dropped): the fit's starts
/// explore on these.
fn steady_state_surrogate(rows: &[&BenchmarkRow]) -> Vec<BenchmarkRow> {
    rows.iter()
        .map(|&r| {
            let mut r = r.clone();
            if r.scenario == "offline" {
                r.requests = None;
            }
            r
        })
        .collect()
}

/// The soft-L1 loss term of each row in `which` (None: not predicted), in
/// that order; the rows are predicted in parallel.
fn loss_terms(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &Calibration,
    which: &[usize],
) -> Vec<Option<f64>> {
    use rayon::prelude::*;
    which
        .par_iter()
        .map(|&r| {
            let row = rows[r];
            predict_inference(catalog, row, cal)
                .ok()
                .map(|(p, _)| p)
                .filter(|p| *p > 0.0 && row.value > 0.0 && p.is_finite())
                .map(|p| soft_l1((p / row.value).ln()))
        })
        .collect()
}

/// The rows whose prediction factor `name` can change: for a family's own
/// efficiency (`compute_efficiency.Hopper.8`, `bandwidth_efficiency.Ampere`),
/// the rows of that family and of families without such factors of their
/// own (they fall back to the fitted families' mean); for any other factor,
/// every row.
fn moved_rows(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &Calibration,
    name: &str,
) -> Vec<usize> {
    let mut parts = name.split('.');
    let kind = parts.next().unwrap_or_default();
    let factor_family = parts.next();
    (0..rows.len())
        .filter(|&r| {
            let (Some(factor_family), true) = (factor_family, is_per_family(name)) else {
                return true;
            };
            let Ok(gpu) = catalog.gpu(&rows[r].gpu) else {
                return true;
            };
            let row_family = crate::calibration::family(gpu);
            row_family == factor_family || cal.mean_of(&format!("{kind}.{row_family}.")).is_none()
        })
        .collect()
}

/// Each factor's status at the optimum and its sensitivity.
fn factor_report(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &Calibration,
    status: &[FactorStatus],
    loss: f64,
) -> Vec<FactorFit> {
    cal.factors
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut st = status[i];
            let mut loss_rise_pct = None;
            if st == FactorStatus::Fitted {
                if f.value <= f.min * (1.0 + AT_BOUND) {
                    st = FactorStatus::AtLowerBound;
                } else if f.value >= f.max * (1.0 - AT_BOUND) {
                    st = FactorStatus::AtUpperBound;
                }
                loss_rise_pct = sensitivity(catalog, rows, cal, i, loss);
            }
            FactorFit {
                name: f.name.clone(),
                value: f.value,
                min: f.min,
                max: f.max,
                status: st,
                harness_only: shapes_only_the_harness(&f.name),
                loss_rise_pct,
            }
        })
        .collect()
}

/// The smaller rise of the loss, percent, over a ±10% move of factor `i`
/// (each side clamped into the bounds; a side the bound blocks is skipped).
fn sensitivity(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &Calibration,
    i: usize,
    loss: f64,
) -> Option<f64> {
    let f = &cal.factors[i];
    let mut rises = Vec::new();
    for scale in [0.9, 1.1] {
        let value = (f.value * scale).clamp(f.min, f.max);
        if (value - f.value).abs() < 1e-12 {
            continue;
        }
        let mut moved = cal.clone();
        moved.factors[i].value = value;
        let (l, _) = calibration_loss(catalog, rows, &moved);
        rises.push((l - loss) / loss.max(1e-300) * 100.0);
    }
    rises.into_iter().reduce(f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halton_points_are_the_van_der_corput_sequence() {
        assert_eq!(halton(1, 2), 0.5);
        assert_eq!(halton(2, 2), 0.25);
        assert_eq!(halton(3, 2), 0.75);
        assert!((halton(1, 3) - 1.0 / 3.0).abs() < 1e-15);
        assert!((halton(4, 3) - 4.0 / 9.0).abs() < 1e-15);
    }

    #[test]
    fn starts_stay_inside_the_bounds() {
        for start in 0..FIT_STARTS {
            for j in 0..30 {
                for (min, max) in [(0.05, 1.0), (0.0, 3.0), (0.5, 12.0)] {
                    let v = start_value(min, max, start, j);
                    assert!((min..=max).contains(&v), "{v} outside [{min}, {max}]");
                }
            }
        }
        assert_eq!(start_value(0.0, 3.0, 0, 0), 1.5);
    }

    #[test]
    fn perturbation_stays_inside_the_bounds_and_moves() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // At the upper bound it moves down; inside, up; from zero, by a share of the range.
        assert!(close(perturbed(3.0, 0.0, 3.0, 0.2), 2.4));
        assert!(close(perturbed(1.0, 0.5, 2.0, 0.2), 1.2));
        assert!(close(perturbed(0.0, 0.0, 3.0, 0.2), 0.6));
        // Never below the lower bound.
        assert!(close(perturbed(0.55, 0.5, 0.6, 0.2), 0.5));
    }
}
