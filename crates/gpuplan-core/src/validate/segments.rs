//! `validate --by`: accuracy per segment of the rows (GPU, engine, source,
//! precision, metric ...), one summary per segment.

use super::{summarize, ErrorSummary, ValidationRow};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What rows are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// GPU as written in the file.
    Gpu,
    /// GPU architecture family (`Hopper`, `CDNA3` ...).
    Family,
    /// Serving engine (inference rows).
    Engine,
    /// The publication, shortened by [`source_key`].
    Source,
    /// Precision as written.
    Precision,
    /// Metric (`output_tokens_per_s`, `tpot_ms` ...).
    Metric,
    /// Model as written.
    Model,
    /// Benchmark scenario (`offline`, `server`, `burst` ...).
    Scenario,
    /// Row kind (inference, training, memory).
    Kind,
}

impl GroupBy {
    /// Every grouping, in the order the help lists them.
    pub const ALL: [GroupBy; 9] = [
        GroupBy::Gpu,
        GroupBy::Family,
        GroupBy::Engine,
        GroupBy::Source,
        GroupBy::Precision,
        GroupBy::Metric,
        GroupBy::Model,
        GroupBy::Scenario,
        GroupBy::Kind,
    ];

    /// The name used on the command line and as the JSON key.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Gpu => "gpu",
            GroupBy::Family => "family",
            GroupBy::Engine => "engine",
            GroupBy::Source => "source",
            GroupBy::Precision => "precision",
            GroupBy::Metric => "metric",
            GroupBy::Model => "model",
            GroupBy::Scenario => "scenario",
            GroupBy::Kind => "kind",
        }
    }

    /// The grouping named `name` (as [`GroupBy::as_str`] spells it).
    pub fn parse(name: &str) -> Option<GroupBy> {
        GroupBy::ALL.into_iter().find(|g| g.as_str() == name)
    }

    /// The segment of `row`, or None when the row states none.
    fn key(self, row: &ValidationRow) -> Option<String> {
        let text = |s: &str| (!s.is_empty()).then(|| s.to_string());
        match self {
            GroupBy::Gpu => text(&row.gpu),
            GroupBy::Family => row.architecture.clone(),
            GroupBy::Engine => row.engine.clone(),
            GroupBy::Source => text(&row.source),
            GroupBy::Precision => text(&row.precision.to_ascii_lowercase()),
            GroupBy::Metric => text(&row.metric),
            GroupBy::Model => text(&row.model),
            GroupBy::Scenario => text(&row.scenario),
            GroupBy::Kind => Some(row.kind.as_str().to_string()),
        }
    }
}

/// Error summaries of `rows` per segment of `by` (rows without a segment
/// are left out), sorted by segment name.
pub fn summarize_by(rows: &[ValidationRow], by: GroupBy) -> BTreeMap<String, ErrorSummary> {
    let keys: BTreeSet<String> = rows.iter().filter_map(|r| by.key(r)).collect();
    keys.into_iter()
        .map(|k| {
            let group = summarize(rows.iter().filter(|r| by.key(r).as_ref() == Some(&k)));
            (k, group)
        })
        .collect()
}

/// A source column shortened to the publication it names: a URL becomes
/// its host and first two path segments; other text is cut at the first
/// `,`, ` (` or ` @ ` (which start the version, commit or table), at most
/// 80 characters.
pub fn source_key(source: &str) -> String {
    let s = source.trim().trim_start_matches('"');
    if let Some(rest) = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
    {
        let url = rest
            .split(|c: char| c.is_whitespace() || c == '"')
            .next()
            .unwrap_or(rest);
        let url = url.split(['?', '#']).next().unwrap_or(url);
        return url
            .split('/')
            .filter(|p| !p.is_empty())
            .take(3)
            .collect::<Vec<_>>()
            .join("/");
    }
    let mut end = s.len();
    for stop in [",", " (", " @ ", ";"] {
        if let Some(i) = s.find(stop) {
            end = end.min(i);
        }
    }
    s[..end]
        .chars()
        .take(80)
        .collect::<String>()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_shorten_to_the_publication() {
        assert_eq!(
            source_key("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @ commit 00f3 (v1.0-era)"),
            "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md"
        );
        assert_eq!(
            source_key("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, release v0.17 version"),
            "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md"
        );
        assert_eq!(
            source_key("https://buildkite.com/vllm/performance-benchmark/builds/9515 (vLLM CI)"),
            "buildkite.com/vllm/performance-benchmark"
        );
        assert_eq!(
            source_key("https://mlcommons.org/benchmarks/inference-datacenter/?x=1"),
            "mlcommons.org/benchmarks/inference-datacenter"
        );
        assert_eq!(source_key(""), "");
    }

    #[test]
    fn every_grouping_round_trips_its_name() {
        for g in GroupBy::ALL {
            assert_eq!(GroupBy::parse(g.as_str()), Some(g));
        }
        assert_eq!(GroupBy::parse("colour"), None);
    }

    #[test]
    fn rows_group_by_their_segment_and_rows_without_one_are_left_out() {
        let mut a = ValidationRow::error_only("a", 10.0);
        a.precision = "FP8".into();
        let mut b = ValidationRow::error_only("b", -30.0);
        b.precision = "fp8".into();
        let mut c = ValidationRow::error_only("c", 5.0);
        c.precision = "bf16".into();
        let d = ValidationRow::error_only("d", 50.0);
        let groups = summarize_by(&[a, b, c, d], GroupBy::Precision);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups["fp8"].n_predicted, 2);
        assert_eq!(groups["fp8"].max_abs_pct_error, Some(30.0));
        assert_eq!(groups["bf16"].median_abs_pct_error, Some(5.0));
    }
}
