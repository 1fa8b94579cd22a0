//! Arrival rates that change over time: a daily curve built from the
//! workload's peak and mean, or a `time_s,requests_per_s` CSV.
//!
//! Arrivals follow the curve by time rescaling: the arrival process runs at
//! rate 1 in "operational time" s = Λ(t) = ∫₀ᵗ rate(u) du, and each arrival
//! is mapped back to t = Λ⁻¹(s). Poisson arrivals become the
//! non-homogeneous Poisson process of the curve; gamma arrivals keep their
//! burstiness relative to the local rate.

use crate::error::SimError;

/// Seconds in a day: the period of [`RateCurve::diurnal`].
pub const DAY_S: f64 = 86_400.0;

/// Steps of the built-in daily curve (one per minute).
const DIURNAL_STEPS: usize = 1440;

/// Hour of the day at which the built-in daily curve peaks (local afternoon).
const DIURNAL_PEAK_HOUR: f64 = 14.0;

/// A piecewise-constant arrival rate: `rates[i]` from `starts_s[i]` until
/// the next start; the last rate holds until `period_s` (when periodic, the
/// curve then repeats) or forever.
#[derive(Debug, Clone, PartialEq)]
pub struct RateCurve {
    starts_s: Vec<f64>,
    rates: Vec<f64>,
    /// Repeat after this many seconds (`None`: the last rate holds forever).
    period_s: Option<f64>,
}

impl RateCurve {
    /// A daily curve peaking at `peak` requests/s at 14:00 whose mean over
    /// the day is `mean`: rate(t) = peak · ((1 + cos(2π(t − t_peak)/day))/2)^k,
    /// with the exponent k found so the daily mean is exactly `mean` (k = 1 is
    /// the plain cosine with mean peak/2; larger k, a sharper peak). One step
    /// per minute.
    pub fn diurnal(peak: f64, mean: f64) -> Result<Self, SimError> {
        if !(peak.is_finite() && peak > 0.0) {
            return Err(SimError::invalid("requests_per_s", peak, "a number > 0"));
        }
        if !(mean.is_finite() && mean > 0.0 && mean <= peak) {
            return Err(SimError::invalid(
                "mean_requests_per_s",
                mean,
                format!("a number > 0 and at most the peak ({peak})"),
            ));
        }
        let shape = |minute: usize| {
            let t_s = (minute as f64 + 0.5) * 60.0;
            let phase = std::f64::consts::TAU * (t_s - DIURNAL_PEAK_HOUR * 3600.0) / DAY_S;
            (1.0 + phase.cos()) / 2.0
        };
        let mean_of = |k: f64| {
            (0..DIURNAL_STEPS).map(|m| shape(m).powf(k)).sum::<f64>() / DIURNAL_STEPS as f64
        };
        let target = mean / peak;
        // The daily mean of shape^k falls from 1 (k = 0) towards 0 as k grows:
        // bisection on ln k over [2^-20, 2^20].
        let (mut lo, mut hi) = (-20.0f64, 20.0f64);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if mean_of(mid.exp2()) > target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let k = (0.5 * (lo + hi)).exp2();
        let starts_s = (0..DIURNAL_STEPS).map(|m| m as f64 * 60.0).collect();
        let rates = (0..DIURNAL_STEPS)
            .map(|m| peak * shape(m).powf(k))
            .collect();
        Ok(RateCurve {
            starts_s,
            rates,
            period_s: Some(DAY_S),
        })
    }

    /// A curve from CSV rows `time_s,requests_per_s` (a header row is
    /// allowed): times start at 0 and increase; each rate holds until the
    /// next row's time, the last one until the simulation ends. Errors name
    /// the file, line and field.
    pub fn parse(name: &str, text: &str) -> Result<Self, SimError> {
        let mut starts_s = Vec::new();
        let mut rates = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let row = raw.trim();
            if row.is_empty() || row.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = row.split(',').map(str::trim).collect();
            if starts_s.is_empty() && rates.is_empty() && fields[0].parse::<f64>().is_err() {
                // A header.
                continue;
            }
            let bad = |field: &str, value: &str, expected: &str| SimError::TraceRow {
                file: name.to_string(),
                line,
                field: field.to_string(),
                message: format!("`{value}` is not {expected}"),
            };
            if fields.len() != 2 {
                return Err(bad("row", row, "two fields: time_s,requests_per_s"));
            }
            let time_s: f64 = fields[0]
                .parse()
                .ok()
                .filter(|t: &f64| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| bad("time_s", fields[0], "a number of seconds >= 0"))?;
            let rate: f64 = fields[1]
                .parse()
                .ok()
                .filter(|r: &f64| r.is_finite() && *r >= 0.0 && *r <= 1e7)
                .ok_or_else(|| bad("requests_per_s", fields[1], "a number from 0 to 10^7"))?;
            match starts_s.last() {
                None if time_s != 0.0 => {
                    return Err(bad("time_s", fields[0], "0 on the first row"));
                }
                Some(&prev) if time_s <= prev => {
                    return Err(bad(
                        "time_s",
                        fields[0],
                        "later than the previous row's time",
                    ));
                }
                _ => {}
            }
            starts_s.push(time_s);
            rates.push(rate);
        }
        if rates.is_empty() {
            return Err(SimError::invalid(
                "rate curve",
                name,
                "at least one row time_s,requests_per_s",
            ));
        }
        if rates.iter().all(|r| *r == 0.0) {
            return Err(SimError::invalid(
                "rate curve",
                name,
                "a rate above 0 somewhere (every rate is 0: nothing would arrive)",
            ));
        }
        Ok(RateCurve {
            starts_s,
            rates,
            period_s: None,
        })
    }

    /// The highest rate of the curve, requests/s.
    pub fn peak(&self) -> f64 {
        self.rates.iter().copied().fold(0.0, f64::max)
    }

    /// The rate at time `t_s`, requests/s.
    pub fn rate_at(&self, t_s: f64) -> f64 {
        let t = match self.period_s {
            Some(p) => t_s.rem_euclid(p),
            None => t_s,
        };
        let i = self.starts_s.partition_point(|s| *s <= t).saturating_sub(1);
        self.rates[i]
    }

    /// End of segment `i` within one period (or forever for the last
    /// segment of an aperiodic curve).
    fn segment_end(&self, i: usize) -> f64 {
        match (self.starts_s.get(i + 1), self.period_s) {
            (Some(next), _) => *next,
            (None, Some(p)) => p,
            (None, None) => f64::INFINITY,
        }
    }
}

/// Maps operational time (arrivals at rate 1) to real time along a curve,
/// walking forward only: O(1) amortised per arrival.
#[derive(Debug, Clone)]
pub(crate) struct Rescaler<'a> {
    curve: &'a RateCurve,
    /// Current segment and the period it is in.
    segment: usize,
    period_index: f64,
    /// Operational time at the start of the current segment.
    op_at_segment_start: f64,
}

impl<'a> Rescaler<'a> {
    pub fn new(curve: &'a RateCurve) -> Self {
        Rescaler {
            curve,
            segment: 0,
            period_index: 0.0,
            op_at_segment_start: 0.0,
        }
    }

    /// Real time of operational time `op` (non-decreasing between calls);
    /// `None` when the curve never reaches it (an aperiodic curve ending at 0).
    pub fn real_time(&mut self, op: f64) -> Option<f64> {
        let c = self.curve;
        let offset = |me: &Self| me.period_index * c.period_s.unwrap_or(0.0);
        loop {
            let start = c.starts_s[self.segment];
            let end = c.segment_end(self.segment);
            let rate = c.rates[self.segment];
            let op_at_end = self.op_at_segment_start + rate * (end - start);
            if op <= op_at_end && rate > 0.0 {
                return Some(offset(self) + start + (op - self.op_at_segment_start) / rate);
            }
            if end.is_infinite() {
                return None;
            }
            self.op_at_segment_start = op_at_end;
            self.segment += 1;
            if self.segment == c.starts_s.len() {
                self.segment = 0;
                self.period_index += 1.0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daily_curve_has_the_asked_peak_and_mean() {
        for (peak, mean) in [(10.0, 5.0), (10.0, 2.0), (10.0, 9.0)] {
            let c = RateCurve::diurnal(peak, mean).unwrap();
            let avg = c.rates.iter().sum::<f64>() / c.rates.len() as f64;
            assert!((avg / mean - 1.0).abs() < 1e-6, "{avg} vs {mean}");
            assert!((c.peak() / peak - 1.0).abs() < 1e-3);
            // Peak in the afternoon, trough at night.
            assert!(c.rate_at(14.0 * 3600.0) > c.rate_at(2.0 * 3600.0));
            assert_eq!(c.rate_at(14.0 * 3600.0), c.rate_at(DAY_S + 14.0 * 3600.0));
        }
        assert!(RateCurve::diurnal(10.0, 11.0).is_err());
    }

    #[test]
    fn rescaling_follows_the_curve() {
        // 0–10 s at 2/s, 10–20 s at 0, then 1/s forever.
        let c = RateCurve::parse("r.csv", "time_s,requests_per_s\n0,2\n10,0\n20,1\n").unwrap();
        let mut r = Rescaler::new(&c);
        assert_eq!(r.real_time(10.0), Some(5.0));
        assert_eq!(r.real_time(20.0), Some(10.0));
        assert_eq!(r.real_time(21.0), Some(21.0));
        assert_eq!(r.real_time(30.0), Some(30.0));
    }

    #[test]
    fn bad_curves_name_the_line() {
        for (text, line) in [
            ("0,1\n5,x\n", 2),
            ("1,1\n", 1),
            ("0,1\n0,2\n", 2),
            ("0,-1\n", 1),
            ("0,1,2\n", 1),
        ] {
            match RateCurve::parse("c.csv", text) {
                Err(SimError::TraceRow { line: l, .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(RateCurve::parse("c.csv", "time_s,requests_per_s\n").is_err());
        assert!(RateCurve::parse("c.csv", "0,0\n").is_err());
    }
}
