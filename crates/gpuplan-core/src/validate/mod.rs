//! `validate`: predict each published measurement and report the error.

use crate::calibration::Calibration;
use crate::layout::Layout;
use crate::training::{predict_training, predict_training_all, TrainingFactors};
use crate::training_memory::{
    training_memory, FineTuneMethod, Optimizer, PipelineSchedule, Recompute, TrainingMemoryInput,
};
use gpuplan_catalog::{BenchmarkKind, BenchmarkRow, Catalog, Precision};
use serde::Serialize;
use std::collections::BTreeMap;

mod fit;
mod inference;
mod segments;
pub use fit::{
    fit_calibration, fit_calibration_from_bounds, fit_calibration_report, shapes_only_the_harness,
    FactorFit, FactorStatus, FitReport, FIT_STARTS,
};
pub use inference::predict_inference;
pub use segments::{source_key, summarize_by, GroupBy};

/// One row's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationRow {
    /// Benchmark row id.
    pub id: String,
    /// Kind of measurement.
    pub kind: BenchmarkKind,
    /// Model as written in the file.
    pub model: String,
    /// GPU as written in the file.
    pub gpu: String,
    /// Short description of the setup.
    pub setup: String,
    /// Metric.
    pub metric: String,
    /// Measured value.
    pub measured: f64,
    /// Predicted value (None when skipped).
    pub predicted: Option<f64>,
    /// Signed error in percent: (predicted − measured) / measured · 100.
    pub error_pct: Option<f64>,
    /// Why the row was skipped.
    pub skipped: Option<String>,
    /// What limits the predicted figure (inference), if known.
    pub bound: Option<String>,
    /// Family and scenario of a non-LLM row (`diffusion offline`, `encoder server`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The serving engine of an inference row (`engine` column; ROCm vLLM
    /// counts as vLLM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The GPU's architecture family (`Hopper`, `CDNA3` ...), when the
    /// catalog knows the GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// Precision as written in the file (`fp8`, `bf16`, `w4a16` ...).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub precision: String,
    /// The publication the row comes from, shortened to a key
    /// ([`source_key`]): `NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// The benchmark scenario (`offline`, `server`, `burst` ...), when stated.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scenario: String,
}

impl ValidationRow {
    /// A row that carries only an id and an error, for summaries of errors
    /// computed elsewhere (cross-validation).
    pub(crate) fn error_only(id: &str, error_pct: f64) -> ValidationRow {
        ValidationRow {
            id: id.to_string(),
            kind: BenchmarkKind::Inference,
            model: String::new(),
            gpu: String::new(),
            setup: String::new(),
            metric: String::new(),
            measured: f64::NAN,
            predicted: None,
            error_pct: Some(error_pct),
            skipped: None,
            bound: None,
            family: None,
            engine: None,
            architecture: None,
            precision: String::new(),
            source: String::new(),
            scenario: String::new(),
        }
    }
}

/// Error statistics of a group of rows.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ErrorSummary {
    /// Rows predicted.
    pub n_predicted: usize,
    /// Rows skipped (with a reason each).
    pub n_skipped: usize,
    /// Median absolute percentage error, percent.
    pub median_abs_pct_error: Option<f64>,
    /// 90th-percentile absolute percentage error, percent.
    pub p90_abs_pct_error: Option<f64>,
    /// Largest absolute percentage error, percent.
    pub max_abs_pct_error: Option<f64>,
    /// Share of predicted rows within ±25%, a fraction.
    pub within_25pct: Option<f64>,
}

/// Summaries by kind and by GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ValidationSummary {
    /// By kind (inference, training, memory).
    pub by_kind: BTreeMap<String, ErrorSummary>,
    /// By GPU name as written.
    pub by_gpu: BTreeMap<String, ErrorSummary>,
    /// Non-LLM rows by family and scenario (`speech offline`, `diffusion server`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_family: BTreeMap<String, ErrorSummary>,
    /// Inference rows by serving engine.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_engine: BTreeMap<String, ErrorSummary>,
    /// Inference rows by GPU architecture family.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_architecture: BTreeMap<String, ErrorSummary>,
}

/// The whole report: rows sorted worst first (skipped last) and summaries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationReport {
    /// Every row, predicted or skipped.
    pub rows: Vec<ValidationRow>,
    /// Statistics.
    pub summary: ValidationSummary,
    /// With `--fit`: how the LLM efficiency fit went (free factors, starts,
    /// each factor's status and sensitivity).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitReport>,
    /// With `--by`: the rows' errors per segment, keyed by what they are
    /// grouped by (`source`, `precision` ...), then by the segment.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by: BTreeMap<String, BTreeMap<String, ErrorSummary>>,
}

/// Percentile by linear interpolation between closest ranks (`q` in 0..=1).
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// Summarises rows.
pub fn summarize<'a>(rows: impl Iterator<Item = &'a ValidationRow>) -> ErrorSummary {
    let mut errors = Vec::new();
    let mut skipped = 0;
    for r in rows {
        match r.error_pct {
            Some(e) => errors.push(e.abs()),
            None => skipped += 1,
        }
    }
    errors.sort_by(f64::total_cmp);
    let within = errors.iter().filter(|e| **e <= 25.0).count();
    ErrorSummary {
        n_predicted: errors.len(),
        n_skipped: skipped,
        median_abs_pct_error: percentile(&errors, 0.5),
        p90_abs_pct_error: percentile(&errors, 0.9),
        max_abs_pct_error: errors.last().copied(),
        within_25pct: (!errors.is_empty()).then(|| within as f64 / errors.len() as f64),
    }
}

/// A prediction (value and what bounds it) or the reason there is none.
pub type Prediction = Result<(f64, Option<String>), String>;

/// Predicts every row with the given calibration and the bundled training factors.
pub fn validate(catalog: &Catalog, rows: &[BenchmarkRow], cal: &Calibration) -> ValidationReport {
    validate_with(catalog, rows, cal, &TrainingFactors::bundled())
}

/// Predicts every row with the given inference and training factors.
pub fn validate_with(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &Calibration,
    training: &TrainingFactors,
) -> ValidationReport {
    validate_all(
        catalog,
        rows,
        cal,
        training,
        &crate::nonllm::bundled_factors(),
        &crate::mlperf_inference::bundled_input_lengths(),
    )
}

/// Predicts every row with the given inference, training and non-LLM
/// (`data/nonllm_calibration.csv`) factors and MLPerf data-set input means
/// (`data/mlperf_input_lengths.csv`).
pub fn validate_all(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &Calibration,
    training: &TrainingFactors,
    nonllm_factors: &Calibration,
    input_lengths: &Calibration,
) -> ValidationReport {
    let nonllm = gpuplan_catalog::NonLlmCatalog::embedded().ok();
    let factors = Factors {
        cal,
        training,
        nonllm_factors,
        input_lengths,
    };
    let mut out: Vec<ValidationRow> = rows
        .iter()
        .map(|row| validation_row(catalog, nonllm.as_ref(), row, &factors))
        .collect();
    out.sort_by(|a, b| match (a.error_pct, b.error_pct) {
        (Some(x), Some(y)) => y.abs().total_cmp(&x.abs()),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.id.cmp(&b.id),
    });
    let mut by_kind = BTreeMap::new();
    for kind in [
        BenchmarkKind::Inference,
        BenchmarkKind::Training,
        BenchmarkKind::Memory,
    ] {
        if out.iter().any(|r| r.kind == kind) {
            by_kind.insert(
                kind.as_str().to_string(),
                summarize(out.iter().filter(|r| r.kind == kind)),
            );
        }
    }
    let mut by_gpu = BTreeMap::new();
    let gpus: std::collections::BTreeSet<&str> = out
        .iter()
        .filter(|r| !r.gpu.is_empty())
        .map(|r| r.gpu.as_str())
        .collect();
    for g in gpus {
        by_gpu.insert(g.to_string(), summarize(out.iter().filter(|r| r.gpu == g)));
    }
    let mut by_family = BTreeMap::new();
    let families: std::collections::BTreeSet<&str> =
        out.iter().filter_map(|r| r.family.as_deref()).collect();
    for f in families {
        by_family.insert(
            f.to_string(),
            summarize(out.iter().filter(|r| r.family.as_deref() == Some(f))),
        );
    }
    let by_engine = group_inference(&out, |r| r.engine.as_deref());
    let by_architecture = group_inference(&out, |r| r.architecture.as_deref());
    ValidationReport {
        fit: None,
        by: BTreeMap::new(),
        rows: out,
        summary: ValidationSummary {
            by_kind,
            by_gpu,
            by_family,
            by_engine,
            by_architecture,
        },
    }
}

/// Every factor table a prediction may read.
struct Factors<'a> {
    cal: &'a Calibration,
    training: &'a TrainingFactors,
    nonllm_factors: &'a Calibration,
    input_lengths: &'a Calibration,
}

/// One row predicted through the path its kind, model and scenario take.
fn predict_row(
    catalog: &Catalog,
    nonllm: Option<&gpuplan_catalog::NonLlmCatalog>,
    row: &BenchmarkRow,
    f: &Factors<'_>,
) -> Prediction {
    let other = nonllm
        .and_then(|n| crate::nonllm::predict_nonllm(catalog, n, row, f.cal, f.nonllm_factors));
    match (other, row.kind) {
        (Some(p), _) => p,
        (None, BenchmarkKind::Memory) => predict_memory(catalog, row),
        (None, BenchmarkKind::Inference) if crate::mlperf_inference::is_mlperf_llm_row(row) => {
            crate::mlperf_inference::predict_mlperf_llm(catalog, row, f.cal, f.input_lengths)
        }
        (None, BenchmarkKind::Inference) => predict_inference(catalog, row, f.cal),
        (None, BenchmarkKind::Training) => {
            predict_training_all(catalog, row, f.cal, f.training, f.nonllm_factors)
        }
    }
}

/// A row's prediction and error, and the groups it is summarised in.
fn validation_row(
    catalog: &Catalog,
    nonllm: Option<&gpuplan_catalog::NonLlmCatalog>,
    row: &BenchmarkRow,
    f: &Factors<'_>,
) -> ValidationRow {
    let (predicted, error_pct, skipped, bound) = match predict_row(catalog, nonllm, row, f) {
        Ok((p, bound)) => (
            Some(p),
            Some((p - row.value) / row.value * 100.0),
            None,
            bound,
        ),
        Err(reason) => (None, None, Some(reason), None),
    };
    let inference = row.kind == BenchmarkKind::Inference;
    ValidationRow {
        id: row.id.clone(),
        kind: row.kind,
        model: row.model.clone(),
        gpu: row.gpu.clone(),
        setup: setup(row),
        metric: row.metric.clone(),
        measured: row.value,
        predicted,
        error_pct,
        skipped,
        bound,
        family: nonllm
            .and_then(|n| n.model(&row.model))
            .filter(|_| row.kind != BenchmarkKind::Training)
            .map(|m| format!("{} {}", m.family.as_str(), row.scenario))
            .or_else(|| {
                (inference && crate::mlperf_inference::is_mlperf_llm_row(row))
                    .then(|| format!("llm {}", row.scenario))
            }),
        // ROCm vLLM counts as vLLM.
        engine: (inference && !row.engine.is_empty()).then(|| match row.engine.as_str() {
            "rocm-vllm" => "vllm".to_string(),
            other => other.to_string(),
        }),
        architecture: catalog
            .gpu(&row.gpu)
            .ok()
            .map(|g| crate::calibration::family(g).to_string()),
        precision: row.precision.clone(),
        source: source_key(&row.source),
        scenario: row.scenario.clone(),
    }
}

/// Summaries of the inference rows grouped by `key` (rows without one left out).
fn group_inference(
    rows: &[ValidationRow],
    key: impl Fn(&ValidationRow) -> Option<&str>,
) -> BTreeMap<String, ErrorSummary> {
    let inference = || rows.iter().filter(|r| r.kind == BenchmarkKind::Inference);
    let keys: std::collections::BTreeSet<&str> = inference().filter_map(&key).collect();
    keys.into_iter()
        .map(|k| {
            let group = summarize(inference().filter(|r| key(r) == Some(k)));
            (k.to_string(), group)
        })
        .collect()
}

fn setup(row: &BenchmarkRow) -> String {
    let mut parts = Vec::new();
    if let Some(n) = row.gpu_count {
        parts.push(format!("x{n}"));
    }
    let par: Vec<String> = [("TP", row.tp), ("PP", row.pp), ("DP", row.dp)]
        .iter()
        .filter_map(|(k, v)| v.filter(|x| *x > 1).map(|x| format!("{k}{x}")))
        .collect();
    if !par.is_empty() {
        parts.push(par.join("·"));
    }
    if !row.precision.is_empty() {
        parts.push(row.precision.clone());
    }
    if let (Some(i), Some(o)) = (row.input_len, row.output_len) {
        parts.push(format!("{i}/{o}"));
    } else if let Some(i) = row.input_len {
        parts.push(format!("seq {i}"));
    }
    if let Some(c) = row.batch_or_concurrency {
        parts.push(format!("c{c}"));
    }
    parts.join(" ")
}

/// Memory rows: parameter counts and peak training memory.
fn predict_memory(catalog: &Catalog, row: &BenchmarkRow) -> Prediction {
    let model = catalog.model(&row.model).map_err(|e| e.to_string())?;
    match row.metric.as_str() {
        "param_count" => Ok((model.params().total() as f64, None)),
        "peak_memory_gib" => {
            let gpu = catalog.gpu(&row.gpu).map_err(|e| e.to_string())?;
            let tp = row.tp.unwrap_or(1) as u32;
            let pp = row.pp.unwrap_or(1) as u32;
            let dp = row.dp.unwrap_or(1) as u32;
            // batch_or_concurrency is the global batch: one DP rank's share.
            let local_batch = row
                .batch_or_concurrency
                .ok_or("row states no global batch (batch_or_concurrency)")?
                / u64::from(dp);
            // With PP, torchtitan splits the local batch into PP micro-batches.
            let micro_batches = if pp > 1 { u64::from(pp) } else { 1 };
            let recompute = match row.recompute.as_str() {
                "full" => Recompute::Full,
                "selective" => Recompute::Selective,
                _ => Recompute::None,
            };
            let precision = if row.precision.to_ascii_lowercase().starts_with("fp8") {
                Precision::Fp8
            } else {
                Precision::Bf16
            };
            let schedule = if row.pp_schedule == "interleaved" {
                // torchtitan's default for interleaved schedules: 2 model chunks per rank.
                PipelineSchedule::Interleaved(2)
            } else {
                PipelineSchedule::OneFOneB
            };
            // torchtitan compiles the loss together with the model since its 2025
            // releases (the Dec 2024 trainer left it eager: "compiling loss function
            // causes CUDA errors").
            let fused_loss = row.compile == Some(true) && row.framework.contains("2025");
            let seq_len = row.input_len.ok_or("row has no sequence length")?;
            let mem = training_memory(&TrainingMemoryInput {
                model: &model,
                gpu,
                layout: Layout { tp, pp },
                dp,
                // torchtitan shards with FSDP (data_parallel_shard_degree -1).
                zero: if row.engine == "torchtitan"
                    || row.framework.to_ascii_lowercase().contains("fsdp")
                {
                    3
                } else {
                    0
                },
                micro_batch: (local_batch / micro_batches).max(1),
                seq_len,
                micro_batches,
                schedule,
                recompute,
                precision,
                method: FineTuneMethod::Full,
                optimizer: Optimizer::Adam,
                fused_loss,
                async_tp: row.async_tp == Some(true),
            })
            .map_err(|e| e.to_string())?;
            Ok((
                mem.reserved_peak_gib,
                Some(format!("peak at {}", mem.peak_phase)),
            ))
        }
        other => Err(format!("memory metric `{other}` is not predicted")),
    }
}

/// The minimiser of `loss` over `[lo, hi]` (both > 0) by golden-section
/// search on the logarithm (Kiefer 1953), `steps` narrowings: the
/// one-dimensional fit of the data-set lengths and per-family factors.
pub(crate) fn golden_section_log(
    lo: f64,
    hi: f64,
    steps: u32,
    mut loss: impl FnMut(f64) -> f64,
) -> f64 {
    let (mut a, mut b) = (lo.ln(), hi.ln());
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..steps {
        let c = b - g * (b - a);
        let d = a + g * (b - a);
        if loss(c.exp()) <= loss(d.exp()) {
            b = d;
        } else {
            a = c;
        }
    }
    (0.5 * (a + b)).exp()
}

/// Robust loss of one row: soft-L1 on the log error with scale 0.1
/// (quadratic below ~10% error, linear beyond, so a few odd rows cannot
/// dominate the fit).
pub(crate) fn soft_l1(log_error: f64) -> f64 {
    const SCALE: f64 = 0.1;
    let z = (log_error / SCALE).powi(2);
    2.0 * ((1.0 + z).sqrt() - 1.0) * SCALE * SCALE
}

/// Total loss of a calibration over the predictable inference rows.
pub fn calibration_loss(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &Calibration,
) -> (f64, usize) {
    use rayon::prelude::*;
    rows.par_iter()
        .filter_map(|row| {
            predict_inference(catalog, row, cal)
                .ok()
                .map(|(p, _)| (p, row.value))
        })
        .filter(|(p, m)| *p > 0.0 && *m > 0.0 && p.is_finite())
        .map(|(p, m)| (soft_l1((p / m).ln()), 1usize))
        .reduce(|| (0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// Factors the TensorRT-LLM fit leaves alone: families fitted on MLPerf rows
/// of another engine, and the engine step-time factors (fitted on their
/// engine's rows by [`fit_engine_factors`](crate::fit_engine_factors)).
pub(crate) fn fitted_by_another_fit(name: &str) -> bool {
    crate::mlperf_inference::fitted_on_mlperf(name) || name.starts_with("engine_step_time.")
}

/// Total soft-L1 loss of the training factors over the training
/// throughput rows (tokens/s/GPU, TFLOP/s/GPU), and how many were predicted.
pub fn training_loss(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &Calibration,
    training: &TrainingFactors,
) -> (f64, usize) {
    rows.iter()
        .filter_map(|row| {
            predict_training(catalog, row, cal, training)
                .ok()
                .map(|(p, _)| (p, row.value))
        })
        .filter(|(p, m)| *p > 0.0 && *m > 0.0 && p.is_finite())
        .map(|(p, m)| (soft_l1((p / m).ln()), 1usize))
        .fold((0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// Fits the training factors on the training throughput rows only (never
/// on time-to-train rows, which stay a held-out check), by the same bounded
/// coordinate descent as [`fit_calibration`], from the middle of each bound.
pub fn fit_training_calibration(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &Calibration,
    template: &TrainingFactors,
) -> TrainingFactors {
    let throughput: Vec<&BenchmarkRow> = rows
        .iter()
        .filter(|r| {
            r.kind == BenchmarkKind::Training
                && matches!(r.metric.as_str(), "tokens_per_s_per_gpu" | "tflops_per_gpu")
        })
        .collect();
    let mut fitted = template.clone();
    for f in &mut fitted.table.factors {
        f.value = 0.5 * (f.min + f.max);
    }
    let (mut best, n_rows) = training_loss(catalog, &throughput, cal, &fitted);
    if n_rows == 0 {
        return fitted;
    }
    let mut steps: Vec<f64> = vec![0.2; fitted.table.factors.len()];
    for _sweep in 0..400 {
        let mut improved = false;
        #[allow(clippy::needless_range_loop)] // steps[i] and factors[i] move together
        for i in 0..steps.len() {
            if steps[i] < 1e-3 {
                continue;
            }
            let mut moved = false;
            for direction in [1.0, -1.0] {
                let f = &fitted.table.factors[i];
                let candidate = (f.value * (1.0 + direction * steps[i])).clamp(f.min, f.max);
                if (candidate - f.value).abs() < 1e-12 {
                    continue;
                }
                let old = f.value;
                fitted.table.factors[i].value = candidate;
                let (loss, n) = training_loss(catalog, &throughput, cal, &fitted);
                if n == n_rows && loss < best - 1e-12 {
                    best = loss;
                    moved = true;
                    improved = true;
                    break;
                }
                fitted.table.factors[i].value = old;
            }
            if !moved {
                steps[i] /= 2.0;
            }
        }
        if !improved && steps.iter().all(|s| *s < 1e-3) {
            break;
        }
    }
    fitted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_interpolates() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), Some(2.5));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 1.0), Some(4.0));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
