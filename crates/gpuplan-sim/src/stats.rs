//! Streaming latency statistics: HDR histograms in microseconds, so memory
//! stays flat however many requests are simulated.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Largest latency a histogram records, µs (10^13 µs ≈ 116 days; longer
/// values are recorded at this bound).
const MAX_RECORDED_US: u64 = 10_000_000_000_000;

/// Significant decimal digits the histograms keep (0.1 % resolution).
const SIGNIFICANT_DIGITS: u8 = 3;

/// Mean and percentiles of one latency, ms.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Percentiles {
    /// Samples recorded.
    pub count: u64,
    /// Mean, ms.
    pub mean: f64,
    /// Median, ms.
    pub p50: f64,
    /// 90th percentile, ms.
    pub p90: f64,
    /// 99th percentile, ms.
    pub p99: f64,
    /// 99.9th percentile, ms.
    pub p999: f64,
}

/// One streaming latency histogram.
#[derive(Debug, Clone)]
pub(crate) struct Latency {
    histogram: Histogram<u64>,
}

impl Latency {
    pub fn new() -> Self {
        // Bounds 1..=MAX_RECORDED_US with 3 digits are valid by construction.
        let histogram = Histogram::new_with_bounds(1, MAX_RECORDED_US, SIGNIFICANT_DIGITS)
            .unwrap_or_else(|_| {
                Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits are valid")
            });
        Latency { histogram }
    }

    /// Records `count` samples of `seconds`.
    pub fn record_s(&mut self, seconds: f64, count: u64) {
        if count == 0 {
            return;
        }
        let us = (seconds.max(0.0) * 1e6).round().min(MAX_RECORDED_US as f64) as u64;
        self.histogram.saturating_record_n(us, count);
    }

    pub fn summary(&self) -> Percentiles {
        let h = &self.histogram;
        if h.is_empty() {
            return Percentiles::default();
        }
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        Percentiles {
            count: h.len(),
            mean: h.mean() / 1e3,
            p50: ms(0.50),
            p90: ms(0.90),
            p99: ms(0.99),
            p999: ms(0.999),
        }
    }
}
