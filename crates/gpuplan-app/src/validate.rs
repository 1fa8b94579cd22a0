//! `validate`: predictions against the bundled published measurements.

use crate::error::AppResult;
use gpuplan_catalog::{
    parse_benchmarks, BenchmarkKind, Catalog, BUNDLED_BENCHMARKS_DEV, BUNDLED_BENCHMARKS_DEV_2,
};
use gpuplan_core::training::TrainingFactors;
use gpuplan_core::{validate_with, Calibration, ValidationReport};
use serde::Deserialize;

/// A bundled benchmark set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchmarkSet {
    /// data/benchmarks/benchmarks_dev.csv: vendor perf tables, Megatron/torchtitan training.
    #[default]
    Dev,
    /// data/benchmarks/benchmarks_dev_2.csv: MLPerf results and engine runs.
    Mlperf,
}

impl BenchmarkSet {
    /// The set's name (as errors cite it) and its CSV text.
    pub fn source(self) -> (&'static str, &'static str) {
        match self {
            BenchmarkSet::Dev => (
                "<bundled>/data/benchmarks/benchmarks_dev.csv",
                BUNDLED_BENCHMARKS_DEV,
            ),
            BenchmarkSet::Mlperf => (
                "<bundled>/data/benchmarks/benchmarks_dev_2.csv",
                BUNDLED_BENCHMARKS_DEV_2,
            ),
        }
    }
}

/// Predicts every row of a benchmark CSV (optionally one kind of row).
pub fn validate_text(
    catalog: &Catalog,
    cal: &Calibration,
    training: &TrainingFactors,
    (name, text): (&str, &str),
    kind: Option<BenchmarkKind>,
) -> AppResult<ValidationReport> {
    let mut rows = parse_benchmarks(name, text)?;
    if let Some(k) = kind {
        rows.retain(|r| r.kind == k);
    }
    Ok(validate_with(catalog, &rows, cal, training))
}
