//! Published measurements in the benchmark CSV format (header documented in data/SOURCES.md):
//! `id,kind,model,gpu,gpu_count,tp,pp,dp,precision,framework,input_len,output_len,batch_or_concurrency,metric,value,unit,source,notes`.

use crate::error::{CatalogError, Result};
use crate::limits;
use crate::table::{DuplicateCheck, Row, Table};
use serde::Serialize;

/// What a benchmark row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchmarkKind {
    /// Serving measurements.
    Inference,
    /// Training throughput.
    Training,
    /// Memory (peak GiB, parameter counts).
    Memory,
}

impl BenchmarkKind {
    /// The name used in files and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            BenchmarkKind::Inference => "inference",
            BenchmarkKind::Training => "training",
            BenchmarkKind::Memory => "memory",
        }
    }
}

/// One published measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchmarkRow {
    /// Row id.
    pub id: String,
    /// Kind of measurement.
    pub kind: BenchmarkKind,
    /// Model id as written.
    pub model: String,
    /// GPU name as written (may be empty for parameter counts).
    pub gpu: String,
    /// GPUs in the measurement.
    pub gpu_count: Option<u64>,
    /// Tensor-parallel degree.
    pub tp: Option<u64>,
    /// Pipeline-parallel degree.
    pub pp: Option<u64>,
    /// Data-parallel degree.
    pub dp: Option<u64>,
    /// Precision as written.
    pub precision: String,
    /// Framework and version.
    pub framework: String,
    /// Input (prompt) length, or the training sequence length.
    pub input_len: Option<u64>,
    /// Output length.
    pub output_len: Option<u64>,
    /// Concurrency (inference; empty = max-throughput run) or global batch (training).
    pub batch_or_concurrency: Option<u64>,
    /// Metric name.
    pub metric: String,
    /// Measured value.
    pub value: f64,
    /// Unit.
    pub unit: String,
    /// Where it was published.
    pub source: String,
    /// How it was measured.
    pub notes: String,
    /// Data set key (`training:gpt3` ...) where stated.
    pub dataset: String,
    /// Activation recomputation as stated (`full`, `selective`, empty = none stated).
    pub recompute: String,
    /// torch.compile on, where stated.
    pub compile: Option<bool>,
    /// Pipeline schedule as stated (`interleaved`, `1f1b`).
    pub pp_schedule: String,
    /// Asynchronous tensor parallelism on, where stated.
    pub async_tp: Option<bool>,
    /// The value is for the whole system (all GPUs), where stated.
    pub per_system: Option<bool>,
    /// Scenario as stated (`offline`, `server`, `static_batch`, `burst`, ...).
    pub scenario: String,
    /// End-to-end p99 latency bound of a latency-bounded run, ms, where stated.
    pub latency_p99_bound_ms: Option<f64>,
    /// p99 time-to-first-token bound of an SLO-bounded run (MLPerf Server /
    /// Interactive), ms, where stated.
    pub ttft_p99_bound_ms: Option<f64>,
    /// p99 time-per-output-token bound of an SLO-bounded run, ms, where stated.
    pub tpot_p99_bound_ms: Option<f64>,
    /// Serving engine as stated (`trtllm`, `vllm`, `rocm-vllm`, `sglang`, ...), lower case.
    pub engine: String,
    /// How the request lengths are given: `fixed` (input_len/output_len) or
    /// `dataset` (the lengths of the row's data set), lower case.
    pub lengths: String,
    /// Requests in the burst or benchmark run, where stated.
    pub requests: Option<u64>,
    /// Denoising steps per image (diffusion rows), where stated.
    pub steps: Option<u64>,
    /// Image side in pixels (diffusion rows), where stated.
    pub resolution_px: Option<u64>,
    /// Whether classifier-free guidance runs (diffusion rows; empty = the
    /// model's default, guided).
    pub guidance: Option<bool>,
    /// Beam width (speech and beam-search LLM rows), where stated.
    pub beam: Option<u64>,
    /// Seconds of audio transcribed in the run (speech rows), where stated.
    pub audio_s: Option<f64>,
    /// Scale-out network per GPU, Gb/s (training rows), where stated.
    pub network_gbps_per_gpu: Option<f64>,
}

/// Parses a benchmark file. Every number must be in its range of
/// [`crate::limits`]: a measured value of 0, a parallel degree of 0 or a
/// length of 0 is rejected with the file, line and field (empty cells mean
/// "not stated").
pub fn parse_benchmarks(file: &str, text: &str) -> Result<Vec<BenchmarkRow>> {
    let table = Table::parse(file, text)?;
    table.require(&[
        "id",
        "kind",
        "model",
        "gpu",
        "gpu_count",
        "tp",
        "pp",
        "dp",
        "precision",
        "framework",
        "input_len",
        "output_len",
        "batch_or_concurrency",
        "metric",
        "value",
        "unit",
    ])?;
    let mut dups = DuplicateCheck::new();
    let mut out = Vec::new();
    for row in table.rows() {
        let id = row.string("id")?;
        dups.check(&row, "id", &id)?;
        out.push(benchmark_row(&row, id)?);
    }
    Ok(out)
}

/// One row of the benchmark file, its id already checked.
fn benchmark_row(row: &Row<'_>, id: String) -> Result<BenchmarkRow> {
    let kind = match row.text("kind").to_ascii_lowercase().as_str() {
        "inference" => BenchmarkKind::Inference,
        "training" => BenchmarkKind::Training,
        "memory" => BenchmarkKind::Memory,
        other => {
            return Err(row.error(CatalogError::invalid(
                "kind",
                other,
                "inference, training or memory",
            )))
        }
    };
    let value = row.span("value", limits::BENCH_VALUE)?;
    let degree = |column: &str| row.opt_count(column, limits::BENCH_PARALLEL_DEGREE);
    let tokens = |column: &str| row.opt_count(column, limits::BENCH_TOKENS);
    Ok(BenchmarkRow {
        kind,
        model: row.string("model")?,
        gpu: row.text("gpu").to_string(),
        gpu_count: row.opt_count("gpu_count", limits::BENCH_GPU_COUNT)?,
        tp: degree("tp")?,
        pp: degree("pp")?,
        dp: degree("dp")?,
        precision: row.text("precision").to_string(),
        framework: row.text("framework").to_string(),
        input_len: tokens("input_len")?,
        output_len: tokens("output_len")?,
        batch_or_concurrency: row.opt_count("batch_or_concurrency", limits::BENCH_BATCH)?,
        metric: row.string("metric")?,
        value,
        unit: row.text("unit").to_string(),
        source: row.text("source").to_string(),
        notes: row.text("notes").to_string(),
        dataset: row.text("dataset").to_string(),
        recompute: row.text("recompute").to_ascii_lowercase(),
        compile: flag(row, "compile")?,
        pp_schedule: row.text("pp_schedule").to_ascii_lowercase(),
        async_tp: flag(row, "async_tp")?,
        per_system: flag(row, "per_system")?,
        scenario: row.text("scenario").to_ascii_lowercase(),
        latency_p99_bound_ms: row.opt_span("latency_p99_bound_ms", limits::BENCH_LATENCY_MS)?,
        ttft_p99_bound_ms: row.opt_span("ttft_p99_bound_ms", limits::BENCH_LATENCY_MS)?,
        tpot_p99_bound_ms: row.opt_span("tpot_p99_bound_ms", limits::BENCH_LATENCY_MS)?,
        engine: row.text("engine").to_ascii_lowercase(),
        lengths: row.text("lengths").to_ascii_lowercase(),
        requests: row.opt_count("requests", limits::BENCH_REQUESTS)?,
        steps: row.opt_count("steps", limits::BENCH_STEPS)?,
        resolution_px: row.opt_count("resolution_px", limits::BENCH_RESOLUTION_PX)?,
        guidance: flag(row, "guidance")?,
        beam: row.opt_count("beam", limits::BENCH_BEAM)?,
        audio_s: row.opt_span("audio_s", limits::BENCH_AUDIO_S)?,
        network_gbps_per_gpu: row.opt_span("network_gbps_per_gpu", limits::BENCH_NETWORK_GBPS)?,
        id,
    })
}

/// An optional true/false cell.
fn flag(row: &Row<'_>, column: &str) -> Result<Option<bool>> {
    match row.text(column).to_ascii_lowercase().as_str() {
        "" => Ok(None),
        "true" => Ok(Some(true)),
        "false" => Ok(Some(false)),
        other => Err(row.error(CatalogError::invalid(column, other, "true, false or empty"))),
    }
}

/// The development benchmark set bundled for calibration and `validate`.
pub const BUNDLED_BENCHMARKS_DEV: &str =
    include_str!("../../../data/benchmarks/benchmarks_dev.csv");

/// The second development set bundled for `validate --set mlperf`: MLPerf
/// Inference/Training results and engine runs, one source per row.
pub const BUNDLED_BENCHMARKS_DEV_2: &str =
    include_str!("../../../data/benchmarks/benchmarks_dev_2.csv");

/// Published measurements bundled for `validate --set holdout` that no
/// factor is ever fitted on: TensorRT-LLM v0.15's perf-overview throughput
/// table (the development set holds v0.14, v0.17 and v1.0's tables of the
/// same harness), one source per row.
pub const BUNDLED_BENCHMARKS_HOLDOUT: &str =
    include_str!("../../../data/benchmarks/benchmarks_holdout.csv");

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "id,kind,model,gpu,gpu_count,tp,pp,dp,precision,framework,input_len,output_len,batch_or_concurrency,metric,value,unit\n";

    #[test]
    fn zero_values_degrees_and_lengths_are_rejected_with_location() {
        for (row, field) in [
            (
                "a,inference,m,H100,1,1,1,1,fp8,vllm,100,100,,output_tokens_per_s,0,tok/s",
                "value",
            ),
            (
                "a,inference,m,H100,1,0,1,1,fp8,vllm,100,100,,output_tokens_per_s,5,tok/s",
                "tp",
            ),
            (
                "a,inference,m,H100,1,1,1,1,fp8,vllm,0,100,,output_tokens_per_s,5,tok/s",
                "input_len",
            ),
            (
                "a,inference,m,H100,1,1,1,1,fp8,vllm,100,100,,output_tokens_per_s,1e300,tok/s",
                "value",
            ),
        ] {
            let err = parse_benchmarks("b.csv", &format!("{HEADER}{row}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("b.csv, line 2") && err.contains(&format!("field `{field}`")),
                "{err}"
            );
        }
    }

    #[test]
    fn bundled_set_parses() {
        assert!(
            parse_benchmarks("dev", BUNDLED_BENCHMARKS_DEV)
                .unwrap()
                .len()
                > 100
        );
    }

    /// The held-out set is TensorRT-LLM v0.15's table: every row a
    /// trtllm-bench run that states its request count, and none of its
    /// measurements in the development set.
    #[test]
    fn the_held_out_set_is_disjoint_from_the_development_set() {
        let held = parse_benchmarks("holdout", BUNDLED_BENCHMARKS_HOLDOUT).unwrap();
        assert!(held.len() > 400, "{} rows", held.len());
        let dev = parse_benchmarks("dev", BUNDLED_BENCHMARKS_DEV).unwrap();
        for r in &held {
            assert!(
                r.engine == "trtllm" && r.framework.contains("v0.15"),
                "{}",
                r.id
            );
            assert!(r.requests.is_some() && r.scenario == "offline", "{}", r.id);
            assert!(
                !dev.iter().any(|d| d.id == r.id || d.source == r.source),
                "{} also in the development set",
                r.id
            );
        }
    }
}
