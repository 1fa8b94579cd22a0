//! Published measurements in the benchmark CSV format (header documented in data/SOURCES.md):
//! `id,kind,model,gpu,gpu_count,tp,pp,dp,precision,framework,input_len,output_len,batch_or_concurrency,metric,value,unit,source,notes`.

use crate::error::{CatalogError, Result};
use crate::table::{DuplicateCheck, Table};
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
}

/// Parses a benchmark file.
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
        let value = row
            .opt_f64("value", 0.0)?
            .ok_or_else(|| row.error(CatalogError::invalid("value", "", "a number >= 0")))?;
        out.push(BenchmarkRow {
            kind,
            model: row.string("model")?,
            gpu: row.text("gpu").to_string(),
            gpu_count: row.opt_u64("gpu_count")?,
            tp: row.opt_u64("tp")?,
            pp: row.opt_u64("pp")?,
            dp: row.opt_u64("dp")?,
            precision: row.text("precision").to_string(),
            framework: row.text("framework").to_string(),
            input_len: row.opt_u64("input_len")?,
            output_len: row.opt_u64("output_len")?,
            batch_or_concurrency: row.opt_u64("batch_or_concurrency")?,
            metric: row.string("metric")?,
            value,
            unit: row.text("unit").to_string(),
            source: row.text("source").to_string(),
            notes: row.text("notes").to_string(),
            id,
        });
    }
    Ok(out)
}

/// The development benchmark set bundled for calibration and `validate`.
pub const BUNDLED_BENCHMARKS_DEV: &str =
    include_str!("../../../data/benchmarks/benchmarks_dev.csv");
