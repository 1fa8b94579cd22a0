//! MLPerf Inference LLM rows of `benchmarks_dev_2.csv`: Offline (maximum
//! throughput over the whole data set) and Server / Interactive (the highest
//! Poisson rate whose p99 TTFT and p99 TPOT meet the benchmark's bounds — the
//! capacity `plan` sizes replicas with, computed by [`crate::replica_capacity`]).
//!
//! Request lengths come from the data set (`data/benchmarks/benchmark_datasets.csv`:
//! the published mean output, the input and output limits). No source gives
//! any data set's mean *input* length, so it is one fitted number per data set
//! (`data/mlperf_input_lengths.csv`, fitted on the Offline rows by
//! `gpuplan validate --set mlperf --fit`); the Server and Interactive rows
//! reuse it and are not fitted on.

use crate::calibration::Calibration;
use crate::engine::Engine;
use crate::layout::Layout;
use crate::perf::Deployment;
use crate::plan::ReplicaCapacity;
use crate::serving::trtllm_bench_throughput;
use crate::validate::Prediction;
use crate::workload::{default_kv_precision, InferenceWorkload, RawWorkload};
use gpuplan_catalog::{BenchmarkRow, Catalog, GpuSpec, ModelArch, Precision};
use serde::Deserialize;
use std::sync::OnceLock;

/// The MLPerf data sets' published facts (a copy of `benchmark_datasets.csv`).
pub const BUNDLED_DATASETS: &str = include_str!("../../../data/benchmarks/benchmark_datasets.csv");

/// The fitted mean input length per data set.
pub const BUNDLED_INPUT_LENGTHS: &str = include_str!("../../../data/mlperf_input_lengths.csv");

/// Prefix of the fitted factors in `data/mlperf_input_lengths.csv`.
pub const INPUT_MEAN_FACTOR: &str = "mlperf_input_mean_tokens";

/// One MLPerf data set, as published.
#[derive(Debug, Clone, Deserialize)]
pub struct MlperfDataset {
    /// Benchmark key (`llama2-70b`).
    pub benchmark: String,
    /// Longest input the data set admits, tokens.
    pub input_max: Option<f64>,
    /// Mean output tokens per sample.
    pub output_mean: Option<f64>,
    /// p99 output tokens, where measured.
    pub output_p99: Option<f64>,
    /// Output limit (max_new_tokens).
    pub output_max: Option<f64>,
}

fn datasets() -> &'static [MlperfDataset] {
    static TABLE: OnceLock<Vec<MlperfDataset>> = OnceLock::new();
    TABLE.get_or_init(|| {
        csv::Reader::from_reader(BUNDLED_DATASETS.as_bytes())
            .deserialize()
            .filter_map(|r| r.ok())
            .collect()
    })
}

/// The published facts of a data set.
pub fn dataset(benchmark: &str) -> Option<&'static MlperfDataset> {
    datasets().iter().find(|d| d.benchmark == benchmark)
}

/// The bundled fitted input means.
pub fn bundled_input_lengths() -> Calibration {
    Calibration::parse_against(
        BUNDLED_INPUT_LENGTHS,
        BUNDLED_INPUT_LENGTHS,
        "data/mlperf_input_lengths.csv",
    )
    .unwrap_or(Calibration {
        factors: Vec::new(),
    })
}

/// The request lengths of a data set: mean and p99 of input and output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DatasetLengths {
    pub input_mean: f64,
    pub input_p99: f64,
    pub output_mean: f64,
    pub output_p99: f64,
}

/// The lengths of `benchmark`: the fitted input mean, the published output
/// mean; as p99s the measured output p99 where published, else the limits
/// (a long-tailed data set reaches them: llama2-70b's outputs run to 851 of
/// 1,024 in 100 samples).
pub fn dataset_lengths(benchmark: &str, lengths: &Calibration) -> Result<DatasetLengths, String> {
    let d = dataset(benchmark)
        .ok_or_else(|| format!("data set `{benchmark}` is not in benchmark_datasets.csv"))?;
    let input_mean = lengths
        .get(&format!("{INPUT_MEAN_FACTOR}.{benchmark}"))
        .ok_or_else(|| {
            format!(
                "the mean input length of `{benchmark}` is not published and fewer than {MIN_FIT_ROWS} Offline TensorRT-LLM rows fit it"
            )
        })?;
    let output_mean = d
        .output_mean
        .ok_or_else(|| format!("`{benchmark}` publishes no mean output length"))?;
    let input_max = d.input_max.unwrap_or(input_mean * 3.0);
    let output_max = d.output_max.unwrap_or(output_mean * 3.0);
    Ok(DatasetLengths {
        input_mean,
        input_p99: input_max.max(input_mean * 1.01),
        output_mean,
        output_p99: d.output_p99.unwrap_or(output_max).max(output_mean * 1.01),
    })
}

/// The compute precision of a TensorRT-LLM MLPerf submission: MLPerf's
/// `weights fp16` records the checkpoint, and NVIDIA's harness quantises to
/// FP8 on GPUs with FP8 tensor cores (`use_fp8` in its configs, e.g.
/// inference_results_v4.1 closed/NVIDIA/configs/llama2-70b/Offline); an
/// explicit FP8 or FP4 stays.
pub fn submission_precision(row: &BenchmarkRow, gpu: &GpuSpec) -> Result<Precision, String> {
    let stated: Precision = row.precision.parse()?;
    Ok(match stated {
        Precision::Fp16 | Precision::Bf16 if gpu.fp8_tflops.is_some() => Precision::Fp8,
        p => p,
    })
}

/// The MLPerf Inference LLM benchmarks (the other data sets of
/// `benchmark_datasets.csv` are image, speech and encoder benchmarks).
pub const LLM_BENCHMARKS: [&str; 7] = [
    "llama2-70b",
    "mixtral-8x7b",
    "llama3.1-405b",
    "llama3.1-8b",
    "llama3.1-8b-edge",
    "gptj",
    "deepseek-r1",
];

/// Whether this module predicts the row: an LLM inference row measured on
/// its data set's lengths.
pub fn is_mlperf_llm_row(row: &BenchmarkRow) -> bool {
    row.lengths == "dataset"
        && matches!(row.scenario.as_str(), "offline" | "server" | "interactive")
        && LLM_BENCHMARKS.contains(&row.dataset.as_str())
        && dataset(&row.dataset).is_some()
}

/// The layouts a submission of `gpus` GPUs may have run: the stated TP/PP,
/// else TP 1–8 (within a node) replicated over the GPUs.
fn candidate_layouts(row: &BenchmarkRow, gpus: u64) -> Vec<Layout> {
    if let Some(tp) = row.tp {
        return vec![Layout {
            tp: tp as u32,
            pp: row.pp.unwrap_or(1) as u32,
        }];
    }
    [1u32, 2, 4, 8]
        .into_iter()
        .filter(|&tp| u64::from(tp) <= gpus && gpus.is_multiple_of(u64::from(tp)))
        .map(|tp| Layout { tp, pp: 1 })
        .collect()
}

/// What an MLPerf row ran.
struct RowInputs<'c> {
    model: ModelArch,
    gpu: &'c GpuSpec,
    /// GPUs in the system.
    gpus: u64,
    precision: Precision,
    /// The data set's lengths.
    lengths: DatasetLengths,
    /// The serving engine.
    engine: Engine,
    /// Beams per sample (GPT-J's reference generates with 4).
    beams: u32,
}

/// Checks that the row is one gpuplan models and returns what it ran.
fn row_inputs<'c>(
    catalog: &'c Catalog,
    row: &BenchmarkRow,
    lengths: &Calibration,
) -> Result<RowInputs<'c>, String> {
    let model = catalog.model(&row.model).map_err(|e| e.to_string())?;
    let gpu = catalog.gpu(&row.gpu).map_err(|e| e.to_string())?;
    // NVIDIA factors are fitted on TensorRT-LLM, CDNA3's on ROCm vLLM; vLLM
    // on NVIDIA runs at the fitted engine step time.
    let engine = match (row.engine.as_str(), gpu.vendor.as_str()) {
        ("trtllm", "NVIDIA") => Engine::Trtllm,
        ("rocm-vllm", "AMD") | ("vllm", "NVIDIA" | "AMD") => Engine::Vllm,
        (engine, vendor) => {
            return Err(format!(
                "engine `{engine}` on {vendor} GPUs is not modelled (TensorRT-LLM and vLLM on NVIDIA, vLLM on AMD are)"
            ))
        }
    };
    let beams = u32::try_from(row.beam.unwrap_or(1)).map_err(|_| "beam width beyond 2^32")?;
    if beams > 1 {
        engine.beam_search()?;
    }
    let gpus = row.gpu_count.ok_or("row has no GPU count")?;
    let precision = submission_precision(row, gpu)?;
    let len = dataset_lengths(&row.dataset, lengths)?;
    Ok(RowInputs {
        model,
        gpu,
        gpus,
        precision,
        lengths: len,
        engine,
        beams,
    })
}

/// Predicts an MLPerf LLM row: output tokens/s of the whole system.
pub fn predict_mlperf_llm(
    catalog: &Catalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    lengths: &Calibration,
) -> Prediction {
    if row.scenario != "offline" {
        let setup = server_setup(catalog, row, cal, lengths)?;
        let c = setup.capacity;
        return Ok((
            setup.system_tokens_per_s(c.capacity_rps),
            Some(format!(
                "TP{} ×{} {}; {:.2} req/s per replica at cap {}, p99 TPOT {:.0} ms",
                setup.layout.tp,
                setup.replicas,
                setup.precision,
                c.capacity_rps,
                c.batch_cap,
                c.tpot_p99_ms
            )),
        ));
    }
    let inputs = row_inputs(catalog, row, lengths)?;
    let (gpus, precision) = (inputs.gpus, inputs.precision);
    let mut best: Option<(f64, String)> = None;
    let mut last_err = String::from("no layout divides the GPUs");
    for layout in candidate_layouts(row, gpus) {
        let replicas = (gpus / u64::from(layout.gpus())) as f64;
        match offline(&inputs, layout, cal) {
            Ok((per_replica, why)) => {
                let value = per_replica * replicas;
                if best.as_ref().is_none_or(|(v, _)| value > *v) {
                    let label = format!("TP{} ×{} {precision}; {why}", layout.tp, replicas);
                    best = Some((value, label));
                }
            }
            Err(e) => last_err = e,
        }
    }
    let (value, label) = best.ok_or(last_err)?;
    Ok((value, Some(label)))
}

/// A Server / Interactive row set up as gpuplan plans it: the benchmark as a
/// workload, and the layout whose replicas give the system the most
/// capacity within the p99 bounds.
#[derive(Debug, Clone)]
pub struct ServerSetup {
    /// Poisson arrivals, the data set's lengths, the bounds as SLOs.
    pub workload: InferenceWorkload,
    /// The engine the submission ran.
    pub engine: Engine,
    /// The GPU.
    pub gpu: GpuSpec,
    /// Compute precision.
    pub precision: Precision,
    /// One replica's layout.
    pub layout: Layout,
    /// Replicas in the system (GPUs / GPUs per replica).
    pub replicas: u64,
    /// One replica's analytical capacity.
    pub capacity: ReplicaCapacity,
    /// Mean output tokens per request (MLPerf counts completed output tokens).
    pub output_mean: f64,
}

impl ServerSetup {
    /// Output tokens/s of the whole system at `per_replica_rps` per replica.
    pub fn system_tokens_per_s(&self, per_replica_rps: f64) -> f64 {
        per_replica_rps * self.replicas as f64 * self.output_mean
    }
}

/// The setup of a Server / Interactive row (see [`ServerSetup`]).
pub fn server_setup(
    catalog: &Catalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    lengths: &Calibration,
) -> Result<ServerSetup, String> {
    let inputs = row_inputs(catalog, row, lengths)?;
    let RowInputs {
        gpu,
        gpus,
        precision,
        engine,
        ..
    } = inputs;
    let bounds = Bounds::of(row)?;
    let w = workload(catalog, &inputs, bounds)?;
    let mut best: Option<ServerSetup> = None;
    let mut last_err = String::from("no layout divides the GPUs");
    for layout in candidate_layouts(row, gpus) {
        let replicas = gpus / u64::from(layout.gpus());
        match crate::plan::replica_capacity(
            catalog,
            &w,
            &crate::plan::ReplicaConfig {
                gpu,
                precision,
                layout,
                engine,
            },
            cal,
            true,
        ) {
            Ok(capacity) => {
                let setup = ServerSetup {
                    workload: w.clone(),
                    engine,
                    gpu: gpu.clone(),
                    precision,
                    layout,
                    replicas,
                    capacity,
                    output_mean: inputs.lengths.output_mean,
                };
                let value = setup.system_tokens_per_s(capacity.capacity_rps);
                if best
                    .as_ref()
                    .is_none_or(|b| value > b.system_tokens_per_s(b.capacity.capacity_rps))
                {
                    best = Some(setup);
                }
            }
            Err(e) => last_err = e,
        }
    }
    best.ok_or(last_err)
}

/// Offline: trtllm-bench's maximum throughput at the data set's mean lengths.
fn offline(
    inputs: &RowInputs<'_>,
    layout: Layout,
    cal: &Calibration,
) -> Result<(f64, String), String> {
    let RowInputs {
        model,
        gpu,
        precision,
        engine,
        lengths: len,
        ..
    } = inputs;
    let dep = Deployment::new(
        model,
        gpu,
        layout,
        *precision,
        default_kv_precision(*precision),
        cal,
    )
    .and_then(|d| d.on_engine(*engine, gpu, cal))
    .map_err(|e| e.to_string())?
    .with_beams(inputs.beams);
    let input = len.input_mean.round().max(1.0) as u64;
    let output = len.output_mean.round().max(1.0) as u64;
    let (state, limit) =
        trtllm_bench_throughput(model, gpu, &dep, cal, input, output).map_err(|e| e.to_string())?;
    Ok((
        state.output_tokens_per_s,
        format!(
            "{}, {} by {}",
            state.decode_bound.label(),
            state.concurrency as u64,
            limit.label()
        ),
    ))
}

/// A Server row's latency bounds: p99 TTFT and TPOT (the LLM benchmarks
/// since llama2-70b), or p99 end-to-end latency per sample (GPT-J).
#[derive(Debug, Clone, Copy)]
struct Bounds {
    ttft_ms: Option<f64>,
    tpot_ms: Option<f64>,
    e2e_ms: Option<f64>,
}

impl Bounds {
    fn of(row: &BenchmarkRow) -> Result<Bounds, String> {
        let b = Bounds {
            ttft_ms: row.ttft_p99_bound_ms,
            tpot_ms: row.tpot_p99_bound_ms,
            e2e_ms: row.latency_p99_bound_ms,
        };
        match (b.ttft_ms, b.tpot_ms, b.e2e_ms) {
            (Some(_), Some(_), _) | (None, None, Some(_)) => Ok(b),
            _ => Err("row states neither p99 TTFT and TPOT bounds nor a p99 latency bound".into()),
        }
    }

    /// The bounds as a workload's `[slo]` lines.
    fn slo_lines(&self) -> String {
        [
            ("ttft_ms_p99", self.ttft_ms),
            ("tpot_ms_p99", self.tpot_ms),
            ("e2e_ms_p99", self.e2e_ms),
        ]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k} = {v}\n")))
        .collect()
    }
}

/// The benchmark as a workload: Poisson arrivals, the data set's lengths,
/// the p99 bounds as SLOs, the submission's beams and engine, and the
/// highest utilisation the planner allows (MLPerf reports the highest rate
/// that still meets the bounds). The peak is far above any replica's
/// capacity, so the batch cap the search prefers (fewest replicas for the
/// peak) is the one with the most capacity.
fn workload(
    catalog: &Catalog,
    inputs: &RowInputs<'_>,
    bounds: Bounds,
) -> Result<InferenceWorkload, String> {
    let len = &inputs.lengths;
    // MLPerf runs the chat release where there is one (llama2-70b-chat,
    // Mixtral-Instruct, Llama-3.1-Instruct); GPT-J's is a fine-tune of the base.
    let instruct = catalog
        .checkpoints()
        .iter()
        .any(|k| k.model == inputs.model.id && k.variant == gpuplan_catalog::Variant::Instruct);
    let text = format!(
        r#"
kind = "inference"
engine = "{engine}"
[model]
id = "{id}"
variant = "{variant}"
precisions = ["{precision}"]
[traffic]
requests_per_s = 1000000
input_tokens = {{ mean = {im}, p99 = {ip} }}
output_tokens = {{ mean = {om}, p99 = {op} }}
beam_width = {beams}
[slo]
{slo}
[constraints]
max_utilization = {u}
"#,
        engine = inputs.engine,
        id = inputs.model.id,
        variant = if instruct { "instruct" } else { "base" },
        precision = inputs.precision,
        im = len.input_mean,
        ip = len.input_p99,
        om = len.output_mean,
        op = len.output_p99,
        beams = inputs.beams,
        slo = bounds.slo_lines(),
        u = crate::limits::MAX_UTILIZATION.max,
    );
    let raw: RawWorkload = toml::from_str(&text).map_err(|e| e.to_string())?;
    raw.validate(catalog, Some(inputs.model.clone()))
        .map_err(|e| e.to_string())
}

/// Loss over MLPerf LLM rows (soft-L1 on the log error, as every fit); a
/// row the factors make unpredictable costs as much as a 10× error, so the
/// fit cannot escape into them.
fn offline_loss(
    catalog: &Catalog,
    rows: &[&BenchmarkRow],
    cal: &Calibration,
    lengths: &Calibration,
) -> f64 {
    use rayon::prelude::*;
    // Rows in parallel, summed in row order (the fit stays deterministic).
    let losses: Vec<f64> = rows
        .par_iter()
        .map(|row| match predict_mlperf_llm(catalog, row, cal, lengths) {
            Ok((p, _)) if p > 0.0 && p.is_finite() => {
                crate::validate::soft_l1((p / row.value).ln())
            }
            _ => crate::validate::soft_l1(10f64.ln()),
        })
        .collect();
    losses.iter().sum()
}

/// Offline rows a data set's input mean is fitted on: fewer than this and
/// the mean stays unknown (its rows are skipped, saying so).
pub const MIN_FIT_ROWS: usize = 2;

/// The Offline rows of `benchmark` that TensorRT-LLM ran (the engine the
/// efficiencies are fitted for).
fn offline_rows<'a>(rows: &'a [BenchmarkRow], benchmark: &str) -> Vec<&'a BenchmarkRow> {
    rows.iter()
        .filter(|r| {
            is_mlperf_llm_row(r)
                && r.scenario == "offline"
                && r.engine == "trtllm"
                && r.dataset == benchmark
        })
        .collect()
}

/// GPU families whose factors no fixed-length row of `benchmarks_dev.csv`
/// identifies: they are fitted on the MLPerf Offline and Interactive rows of
/// their own engine (`rocm-vllm` for CDNA3) by [`fit_family_factors`], and
/// [`crate::fit_calibration`] leaves them as they are. Offline throughput
/// pins the compute rate, Interactive capacity (p99 TPOT ≤ 40 ms) the
/// bandwidth; Offline alone leaves a valley between the two (tried: compute
/// 0.99 with bandwidth 0.13 fits it as well as 0.53 with 0.37). The Server
/// rows stay held out.
pub const MLPERF_FITTED_FAMILIES: [&str; 1] = ["CDNA3"];

/// Whether a calibration factor belongs to a family of [`MLPERF_FITTED_FAMILIES`].
pub fn fitted_on_mlperf(factor: &str) -> bool {
    factor == crate::calibration::POWER_CLOCK_EXPONENT
        || factor
            .split('.')
            .nth(1)
            .is_some_and(|family| MLPERF_FITTED_FAMILIES.contains(&family))
}

/// The MLPerf Offline and Interactive rows a family's factors are fitted on:
/// that family's GPUs, the engine its factors stand for (ROCm vLLM on CDNA3).
fn family_offline_rows<'a>(
    catalog: &Catalog,
    rows: &'a [BenchmarkRow],
    family: &str,
) -> Vec<&'a BenchmarkRow> {
    rows.iter()
        .filter(|r| {
            is_mlperf_llm_row(r)
                && matches!(r.scenario.as_str(), "offline" | "interactive")
                && r.engine == "rocm-vllm"
        })
        .filter(|r| {
            catalog
                .gpu(&r.gpu)
                .is_ok_and(|g| crate::calibration::family(g) == family)
        })
        .collect()
}

/// Fits the factors of [`MLPERF_FITTED_FAMILIES`] in `cal` on their Offline
/// and Interactive rows: from the middle of each factor's bounds (so the result depends only
/// on the rows and the bounds), golden-section search on each factor in turn
/// (log scale) until no factor moves by 1e-4, 4 decimals as the file holds
/// them. The Server rows of those GPUs are not fitted on and stay held out.
pub fn fit_family_factors(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &Calibration,
    lengths: &Calibration,
) -> Calibration {
    let mut fitted = cal.clone();
    for family in MLPERF_FITTED_FAMILIES {
        let mine = family_offline_rows(catalog, rows, family);
        if mine.len() < MIN_FIT_ROWS {
            continue;
        }
        // The family's factors, and the power exponent its parts' power
        // ratio identifies (MI300X and MI325X share silicon and peaks).
        let indices: Vec<usize> = (0..fitted.factors.len())
            .filter(|&i| {
                let name = &fitted.factors[i].name;
                name.split('.').nth(1) == Some(family)
                    || name == crate::calibration::POWER_CLOCK_EXPONENT
            })
            .collect();
        for &i in &indices {
            let f = &mut fitted.factors[i];
            f.value = (f.min * f.max).sqrt();
        }
        for round in 0..20 {
            let mut moved = 0.0f64;
            for &i in &indices {
                let before = fitted.factors[i].value;
                let (min, max) = (fitted.factors[i].min, fitted.factors[i].max);
                // The whole range first, then ±30% around the current value.
                let (lo, hi) = if round == 0 {
                    (min, max)
                } else {
                    ((before / 1.3).max(min), (before * 1.3).min(max))
                };
                let mut loss_at = |v: f64| {
                    fitted.factors[i].value = v;
                    offline_loss(catalog, &mine, &fitted, lengths)
                };
                let v = crate::validate::golden_section_log(lo, hi, 24, &mut loss_at);
                fitted.factors[i].value = ((v * 1e4).round() / 1e4).clamp(min, max);
                moved = moved.max((fitted.factors[i].value - before).abs());
            }
            if moved < 1e-4 {
                break;
            }
        }
    }
    fitted
}

/// Fits each data set's mean input length on its Offline TensorRT-LLM rows
/// (golden-section search on the log of the length within its bounds);
/// a data set with fewer than [`MIN_FIT_ROWS`] keeps the template's value.
pub fn fit_input_lengths(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &Calibration,
    template: &Calibration,
) -> Calibration {
    let mut fitted = template.clone();
    for i in 0..fitted.factors.len() {
        let benchmark = fitted.factors[i]
            .name
            .trim_start_matches(INPUT_MEAN_FACTOR)
            .trim_start_matches('.')
            .to_string();
        let mine = offline_rows(rows, &benchmark);
        if mine.len() < MIN_FIT_ROWS {
            continue;
        }
        let (lo, hi) = (fitted.factors[i].min, fitted.factors[i].max);
        let mut loss_at = |v: f64| {
            fitted.factors[i].value = v;
            offline_loss(catalog, &mine, cal, &fitted)
        };
        let v = crate::validate::golden_section_log(lo, hi, 40, &mut loss_at);
        // Whole tokens, as the file holds them.
        fitted.factors[i].value = v.round().clamp(lo, hi);
    }
    fitted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_sets_give_their_published_lengths_and_the_fitted_input() {
        let lengths = bundled_input_lengths();
        let l = dataset_lengths("llama2-70b", &lengths).unwrap();
        // OpenOrca: 294.45 reference output tokens, limits 1,023 in and 1,024 out.
        assert_eq!(l.output_mean, 294.45);
        assert_eq!((l.input_p99, l.output_p99), (1023.0, 1024.0));
        assert!(l.input_mean > 16.0 && l.input_mean < 1023.0);
        // deepseek-r1 publishes its output p99 (20,000) but no input mean.
        assert!(dataset_lengths("deepseek-r1", &lengths)
            .unwrap_err()
            .contains("not published"));
        assert!(dataset_lengths("no-such-set", &lengths).is_err());
        for b in LLM_BENCHMARKS {
            assert!(dataset(b).is_some(), "{b}");
        }
    }

    #[test]
    fn tensorrt_llm_submissions_quantise_sixteen_bit_checkpoints_to_fp8() {
        let catalog = Catalog::embedded().unwrap();
        let rows = gpuplan_catalog::parse_benchmarks(
            "benchmarks_dev_2.csv",
            gpuplan_catalog::BUNDLED_BENCHMARKS_DEV_2,
        )
        .unwrap();
        let row = rows
            .iter()
            .find(|r| r.id == "mlperf41-llama2-70b-009")
            .unwrap();
        assert_eq!(row.precision, "fp16");
        let h100 = catalog.gpu("H100-SXM-80GB").unwrap();
        assert_eq!(submission_precision(row, h100).unwrap(), Precision::Fp8);
        let l40s = catalog.gpu("L40S-48GB").unwrap();
        assert_eq!(submission_precision(row, l40s).unwrap(), Precision::Fp8);
        let a100 = catalog.gpu("A100-SXM-80GB").unwrap();
        assert_eq!(submission_precision(row, a100).unwrap(), Precision::Fp16);
        // A stated TP is the only layout; else every TP dividing the GPUs.
        assert_eq!(candidate_layouts(row, 8).len(), 4);
        let mut stated = row.clone();
        stated.tp = Some(2);
        assert_eq!(candidate_layouts(&stated, 8), vec![Layout { tp: 2, pp: 1 }]);
        assert_eq!(candidate_layouts(row, 6).len(), 2);
    }
}
