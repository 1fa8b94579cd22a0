//! `validate`: predictions against the bundled published measurements.

use crate::error::AppResult;
use gpuplan_catalog::{
    parse_benchmarks, BenchmarkKind, Catalog, BUNDLED_BENCHMARKS_DEV, BUNDLED_BENCHMARKS_DEV_2,
    BUNDLED_BENCHMARKS_HOLDOUT,
};
use gpuplan_core::training::TrainingFactors;
use gpuplan_core::{summarize_by, validate_with, Calibration, GroupBy, ValidationReport};
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
    /// data/benchmarks/benchmarks_holdout.csv: published measurements no
    /// factor is fitted on (TensorRT-LLM v0.15's perf table).
    Holdout,
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
            BenchmarkSet::Holdout => (
                "<bundled>/data/benchmarks/benchmarks_holdout.csv",
                BUNDLED_BENCHMARKS_HOLDOUT,
            ),
        }
    }

    /// Whether factors may be fitted on the set: never on the held-out set.
    pub fn fit_allowed(self) -> bool {
        self != BenchmarkSet::Holdout
    }
}

/// Predicts every row of a benchmark CSV (optionally one kind of row),
/// with the accuracy per segment of each grouping in `by` (`report.by`).
pub fn validate_text(
    catalog: &Catalog,
    cal: &Calibration,
    training: &TrainingFactors,
    (name, text): (&str, &str),
    kind: Option<BenchmarkKind>,
    by: &[GroupBy],
) -> AppResult<ValidationReport> {
    let mut rows = parse_benchmarks(name, text)?;
    if let Some(k) = kind {
        rows.retain(|r| r.kind == k);
    }
    let mut report = validate_with(catalog, &rows, cal, training);
    for g in by {
        report
            .by
            .insert(g.as_str().to_string(), summarize_by(&report.rows, *g));
    }
    Ok(report)
}

/// Parses a comma-separated list of groupings (`source,precision`), as
/// `validate --by` takes it.
pub fn parse_groupings(list: &str) -> AppResult<Vec<GroupBy>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            GroupBy::parse(&name.to_ascii_lowercase()).ok_or_else(|| {
                let names: Vec<&str> = GroupBy::ALL.iter().map(|g| g.as_str()).collect();
                crate::error::AppError::bad_field(
                    "by",
                    format!("expected one of {}; got `{name}`", names.join(", ")),
                )
            })
        })
        .collect()
}
