//! Request counters and a latency histogram, in Prometheus' text format
//! (`GET /metrics`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// Upper bounds of the latency histogram's buckets, seconds.
pub const LATENCY_BUCKETS_S: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// One route's latency histogram.
#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Count per bucket (not cumulative), the last for +Inf.
    buckets: [u64; LATENCY_BUCKETS_S.len() + 1],
    sum_s: f64,
    count: u64,
}

#[derive(Debug, Default)]
struct Inner {
    /// (method, route, status) → requests.
    requests: BTreeMap<(String, String, u16), u64>,
    /// route → latency histogram.
    latency: BTreeMap<String, Histogram>,
}

/// The server's metrics (the only state requests share besides the catalog).
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    /// Records one finished request.
    pub fn record(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let Ok(mut m) = self.inner.lock() else {
            return;
        };
        *m.requests
            .entry((method.to_string(), route.to_string(), status))
            .or_default() += 1;
        let h = m.latency.entry(route.to_string()).or_default();
        let i = LATENCY_BUCKETS_S
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(LATENCY_BUCKETS_S.len());
        h.buckets[i] += 1;
        h.sum_s += seconds;
        h.count += 1;
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let Ok(m) = self.inner.lock() else {
            return String::new();
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP gpuplan_http_requests_total HTTP requests by method, route and status.\n# TYPE gpuplan_http_requests_total counter"
        );
        for ((method, route, status), n) in &m.requests {
            let _ = writeln!(
                out,
                "gpuplan_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        let mut errors: BTreeMap<u16, u64> = BTreeMap::new();
        for ((_, _, status), n) in &m.requests {
            if *status >= 400 {
                *errors.entry(*status).or_default() += n;
            }
        }
        let _ = writeln!(
            out,
            "# HELP gpuplan_http_errors_total HTTP responses with an error status, by status.\n# TYPE gpuplan_http_errors_total counter"
        );
        for (status, n) in &errors {
            let _ = writeln!(out, "gpuplan_http_errors_total{{status=\"{status}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP gpuplan_http_request_duration_seconds Time from request to response, by route.\n# TYPE gpuplan_http_request_duration_seconds histogram"
        );
        for (route, h) in &m.latency {
            let mut cumulative = 0;
            for (i, n) in h.buckets.iter().enumerate() {
                cumulative += n;
                let le = LATENCY_BUCKETS_S
                    .get(i)
                    .map(|b| b.to_string())
                    .unwrap_or_else(|| "+Inf".into());
                let _ = writeln!(
                    out,
                    "gpuplan_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{le}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "gpuplan_http_request_duration_seconds_sum{{route=\"{route}\"}} {}\ngpuplan_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.sum_s, h.count
            );
        }
        out
    }
}

/// The process's resident set size, bytes (Linux: `/proc/self/statm`,
/// assuming 4 KiB pages); `None` elsewhere or when unreadable.
pub fn resident_memory_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    // statm: total program size, then resident pages, ...
    let resident_pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    resident_pages.checked_mul(4096)
}

/// Gauges of memory: resident set (the standard process metric's name) and
/// live heap bytes, each only when known.
pub fn memory_gauges(resident_bytes: Option<u64>, heap_live_bytes: Option<usize>) -> String {
    let mut out = String::new();
    if let Some(rss) = resident_bytes {
        let _ = writeln!(
            out,
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}"
        );
    }
    if let Some(live) = heap_live_bytes {
        let _ = writeln!(
            out,
            "# HELP gpuplan_heap_live_bytes Heap bytes allocated and not yet freed.\n# TYPE gpuplan_heap_live_bytes gauge\ngpuplan_heap_live_bytes {live}"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_gauges_appear_only_when_known() {
        assert_eq!(memory_gauges(None, None), "");
        let text = memory_gauges(Some(50 << 20), Some(12_345));
        assert!(
            text.contains("process_resident_memory_bytes 52428800\n"),
            "{text}"
        );
        assert!(text.contains("gpuplan_heap_live_bytes 12345\n"), "{text}");
        assert!(
            text.contains("# TYPE gpuplan_heap_live_bytes gauge"),
            "{text}"
        );
        #[cfg(target_os = "linux")]
        assert!(resident_memory_bytes().is_some_and(|b| b > 0));
    }

    #[test]
    fn histogram_is_cumulative_and_counts_errors() {
        let m = Metrics::default();
        m.record("POST", "/v1/plan", 200, 0.02);
        m.record("POST", "/v1/plan", 400, 0.003);
        m.record("POST", "/v1/plan", 200, 100.0);
        let text = m.render();
        // 0.003 s falls in the first bucket; 0.02 s by 0.025; 100 s only in +Inf.
        assert!(text.contains(
            "gpuplan_http_request_duration_seconds_bucket{route=\"/v1/plan\",le=\"0.005\"} 1"
        ));
        assert!(text.contains(
            "gpuplan_http_request_duration_seconds_bucket{route=\"/v1/plan\",le=\"0.025\"} 2"
        ));
        assert!(text.contains(
            "gpuplan_http_request_duration_seconds_bucket{route=\"/v1/plan\",le=\"30\"} 2"
        ));
        assert!(text.contains(
            "gpuplan_http_request_duration_seconds_bucket{route=\"/v1/plan\",le=\"+Inf\"} 3"
        ));
        assert!(text.contains("gpuplan_http_request_duration_seconds_count{route=\"/v1/plan\"} 3"));
        assert!(text.contains("gpuplan_http_errors_total{status=\"400\"} 1"));
        assert!(text.contains(
            "gpuplan_http_requests_total{method=\"POST\",route=\"/v1/plan\",status=\"200\"} 2"
        ));
    }
}
