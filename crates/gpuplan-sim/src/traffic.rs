//! Where requests come from: synthetic arrivals (Poisson or Gamma) with
//! token lengths drawn from the workload's distributions, or a recorded trace.

use crate::error::SimError;
use crate::rate::{RateCurve, Rescaler};
use gpuplan_core::limits::{HISTOGRAM_TOKENS, SEQUENCE_TOKENS};
use gpuplan_core::{Bucket, InferenceWorkload, TokenStats};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma, LogNormal};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// z-score of the 99th percentile of a standard normal.
const Z_P99: f64 = 2.326_347_874;

/// ChaCha stream of the inter-arrival gaps; lengths draw from their own
/// stream, so changing one distribution leaves the other's draws as they were.
const GAP_STREAM: u64 = 1;
/// ChaCha stream of the token lengths.
const LENGTH_STREAM: u64 = 2;

/// How inter-arrival times are distributed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalProcess {
    /// Exponential gaps (coefficient of variation 1).
    Poisson,
    /// Gamma gaps with this coefficient of variation (> 1 is burstier than Poisson).
    Gamma {
        /// Standard deviation over mean of the gaps.
        cv: f64,
    },
}

impl ArrivalProcess {
    /// The process of a workload's squared coefficient of variation (1 = Poisson).
    pub fn from_cv2(cv2: f64) -> Self {
        if (cv2 - 1.0).abs() < 1e-12 {
            ArrivalProcess::Poisson
        } else {
            ArrivalProcess::Gamma { cv: cv2.sqrt() }
        }
    }
}

/// A token-length distribution; samples are rounded and clamped to at least 1.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenLengths {
    /// Always this many tokens.
    Fixed(u32),
    /// Lognormal: ln(tokens) ~ N(mu, sigma²).
    LogNormal {
        /// Mean of ln(tokens).
        mu: f64,
        /// Standard deviation of ln(tokens).
        sigma: f64,
    },
    /// Exponential with this mean (rounded up: geometric), for synthetic tests.
    Exponential {
        /// Mean tokens.
        mean: f64,
    },
    /// Buckets of a workload histogram: `tokens[i]` with cumulative weight `cumulative[i]`.
    Histogram {
        /// Token counts, ascending.
        tokens: Vec<u32>,
        /// Running sum of the bucket weights (the last is the total).
        cumulative: Vec<f64>,
    },
}

impl TokenLengths {
    /// The lognormal with this mean and 99th percentile: with
    /// d = ln(p99 / mean), mean = e^(μ+σ²/2) and p99 = e^(μ+z·σ) give
    /// σ²/2 − z·σ + d = 0, so σ = z − √(z² − 2d) (the root below z; a p99
    /// beyond e^(z²/2) ≈ 15× the mean is out of a lognormal's reach and gets σ = z).
    /// `p99 == mean` is a fixed length.
    pub fn fit(stats: TokenStats) -> Self {
        let mean = stats.mean.max(1.0);
        let p99 = stats.p99.max(mean);
        if p99 - mean < 0.5 {
            return TokenLengths::Fixed(mean.round().clamp(1.0, f64::from(u32::MAX)) as u32);
        }
        let d = (p99 / mean).ln();
        let sigma = Z_P99 - (Z_P99 * Z_P99 - 2.0 * d).max(0.0).sqrt();
        TokenLengths::LogNormal {
            mu: mean.ln() - sigma * sigma / 2.0,
            sigma,
        }
    }

    /// The buckets of a workload histogram `[[tokens, weight], ...]`.
    pub fn histogram(buckets: &[Bucket]) -> Result<Self, SimError> {
        let mut sorted: Vec<(u32, f64)> = Vec::with_capacity(buckets.len());
        for b in buckets {
            // The workload's own rule (`limits::HISTOGRAM_TOKENS`): whatever
            // `plan` accepts, the simulator accepts.
            if !HISTOGRAM_TOKENS.contains(b.0) {
                return Err(SimError::invalid(
                    "histogram tokens",
                    b.0,
                    HISTOGRAM_TOKENS.describe(),
                ));
            }
            if !(b.1.is_finite() && b.1 >= 0.0) {
                return Err(SimError::invalid(
                    "histogram weight",
                    b.1,
                    "a finite number >= 0",
                ));
            }
            sorted.push((b.0.round() as u32, b.1));
        }
        sorted.sort_by_key(|b| b.0);
        let mut acc = 0.0;
        let mut tokens = Vec::with_capacity(sorted.len());
        let mut cumulative = Vec::with_capacity(sorted.len());
        for (t, w) in sorted {
            acc += w;
            tokens.push(t);
            cumulative.push(acc);
        }
        if acc <= 0.0 {
            return Err(SimError::invalid(
                "histogram total weight",
                acc,
                "a number > 0",
            ));
        }
        Ok(TokenLengths::Histogram { tokens, cumulative })
    }

    /// The workload's histogram when it gives one, else the lognormal fitted to its mean and p99.
    pub fn from_workload(
        stats: TokenStats,
        histogram: Option<&[Bucket]>,
    ) -> Result<Self, SimError> {
        match histogram {
            Some(h) => TokenLengths::histogram(h),
            None => Ok(TokenLengths::fit(stats)),
        }
    }

    /// Checks the parameters (finite, positive).
    fn check(&self, field: &str) -> Result<(), SimError> {
        let ok = match self {
            TokenLengths::Fixed(n) => *n >= 1,
            TokenLengths::LogNormal { mu, sigma } => {
                mu.is_finite() && sigma.is_finite() && *sigma >= 0.0
            }
            TokenLengths::Exponential { mean } => mean.is_finite() && *mean > 0.0,
            TokenLengths::Histogram { tokens, cumulative } => {
                !tokens.is_empty()
                    && tokens.len() == cumulative.len()
                    && cumulative.last().is_some_and(|t| *t > 0.0 && t.is_finite())
            }
        };
        if ok {
            Ok(())
        } else {
            Err(SimError::invalid(
                field,
                format!("{self:?}"),
                "a distribution with finite, positive parameters",
            ))
        }
    }

    /// One draw, in tokens, before clamping.
    fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        match self {
            TokenLengths::Fixed(n) => f64::from(*n),
            TokenLengths::LogNormal { mu, sigma } => LogNormal::new(*mu, *sigma)
                .map(|d| d.sample(rng).round())
                .unwrap_or_else(|_| mu.exp()),
            TokenLengths::Exponential { mean } => Exp::new(1.0 / mean)
                .map(|d| d.sample(rng).ceil())
                .unwrap_or(*mean),
            TokenLengths::Histogram { tokens, cumulative } => {
                let total = cumulative.last().copied().unwrap_or(1.0);
                let u = rng.random::<f64>() * total;
                // The first bucket whose running weight exceeds u.
                let i = cumulative
                    .partition_point(|c| *c <= u)
                    .min(tokens.len() - 1);
                f64::from(tokens[i])
            }
        }
    }
}

/// A fixed population of users, each sending a request, waiting for its
/// answer, thinking, and sending the next (a benchmark at fixed concurrency
/// is `think_time_s = 0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosedLoop {
    /// Users (requests in flight at most).
    pub users: u32,
    /// Mean think time between an answer and the user's next request
    /// (exponential), s; 0 sends the next request at once.
    pub think_time_s: f64,
}

/// When synthetic arrivals stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// After this many requests.
    Requests(u64),
    /// At this simulated time, seconds.
    Duration(f64),
}

/// Synthetic open-loop traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticTraffic {
    /// Mean arrival rate over the whole deployment, requests/s (unused
    /// when `rate_curve` is given).
    pub requests_per_s: f64,
    /// An arrival rate that changes over time, instead of `requests_per_s`.
    pub rate_curve: Option<RateCurve>,
    /// Closed-loop clients instead of open-loop arrivals: the rate, the
    /// arrival process and the rate curve are then unused.
    pub clients: Option<ClosedLoop>,
    /// Inter-arrival distribution.
    pub arrival: ArrivalProcess,
    /// Prompt lengths.
    pub input_tokens: TokenLengths,
    /// Output lengths.
    pub output_tokens: TokenLengths,
    /// Longest sequence (prompt + output) a request may have: the model's context.
    pub max_context_tokens: u32,
    /// When arrivals stop.
    pub stop: Stop,
}

/// Refuses a workload the simulator cannot replay: beam search (its
/// per-beam KV blocks are not simulated; `plan` sizes it analytically).
pub fn check_simulable(w: &InferenceWorkload) -> Result<(), SimError> {
    if w.beam_width > 1 {
        return Err(SimError::Invalid {
            field: "traffic.beam_width".into(),
            value: w.beam_width.to_string(),
            expected: "1: the simulator does not model beam search (plan and estimate size it analytically)".into(),
        });
    }
    Ok(())
}

impl SyntheticTraffic {
    /// A workload's peak traffic: its rate, burstiness and length distributions
    /// (`input_histogram`/`output_histogram`: the raw histograms when the workload gives them).
    pub fn from_workload(
        w: &InferenceWorkload,
        input_histogram: Option<&[Bucket]>,
        output_histogram: Option<&[Bucket]>,
        stop: Stop,
    ) -> Result<Self, SimError> {
        check_simulable(w)?;
        Ok(SyntheticTraffic {
            requests_per_s: w.peak_requests_per_s,
            rate_curve: None,
            clients: None,
            arrival: ArrivalProcess::from_cv2(w.arrival_cv2),
            input_tokens: TokenLengths::from_workload(w.input_tokens, input_histogram)?,
            output_tokens: TokenLengths::from_workload(w.output_tokens, output_histogram)?,
            max_context_tokens: u32::try_from(w.model.max_position_embeddings)
                .unwrap_or(u32::MAX)
                .max(2),
            stop,
        })
    }

    fn check(&self) -> Result<(), SimError> {
        if !(self.requests_per_s.is_finite() && self.requests_per_s > 0.0) {
            return Err(SimError::invalid(
                "requests_per_s",
                self.requests_per_s,
                "a number > 0",
            ));
        }
        if let Some(c) = self.clients {
            if c.users == 0 || c.users > 10_000_000 {
                return Err(SimError::invalid("users", c.users, "from 1 to 10^7"));
            }
            if !(c.think_time_s.is_finite() && c.think_time_s >= 0.0) {
                return Err(SimError::invalid(
                    "think_time_s",
                    c.think_time_s,
                    "a number of seconds >= 0",
                ));
            }
        }
        if let ArrivalProcess::Gamma { cv } = self.arrival {
            if !(cv.is_finite() && cv > 0.0) {
                return Err(SimError::invalid("arrival cv", cv, "a number > 0"));
            }
        }
        self.input_tokens.check("input_tokens")?;
        self.output_tokens.check("output_tokens")?;
        if self.max_context_tokens < 2 {
            return Err(SimError::invalid(
                "max_context_tokens",
                self.max_context_tokens,
                "at least 2 (one prompt and one output token)",
            ));
        }
        match self.stop {
            Stop::Requests(0) => Err(SimError::invalid("requests", 0, "at least 1")),
            Stop::Duration(s) if !(s.is_finite() && s > 0.0) => {
                Err(SimError::invalid("duration_s", s, "a number > 0"))
            }
            _ => Ok(()),
        }
    }
}

/// One request of a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRow {
    /// Arrival time, seconds (the simulation starts at the first row's).
    pub timestamp_s: f64,
    /// Prompt tokens.
    pub input_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
}

/// A recorded trace: rows of `timestamp_s,input_tokens,output_tokens`, sorted by time.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    name: String,
    rows: Vec<TraceRow>,
}

/// The trace's header, optional as its first line.
const TRACE_HEADER: [&str; 3] = ["timestamp_s", "input_tokens", "output_tokens"];

impl Trace {
    /// Parses a trace's text; `name` (its path) names it in errors. Blank
    /// lines are skipped; the header line is optional. A malformed row,
    /// a timestamp before the previous row's, or no rows at all is an error.
    pub fn parse(name: &str, text: &str) -> Result<Trace, SimError> {
        let mut rows: Vec<TraceRow> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if rows.is_empty() && fields == TRACE_HEADER {
                continue;
            }
            let row_error = |field: &str, message: String| SimError::TraceRow {
                file: name.to_string(),
                line: line_no,
                field: field.to_string(),
                message,
            };
            if fields.len() != 3 {
                return Err(row_error(
                    "row",
                    format!(
                        "{} fields, expected 3: timestamp_s,input_tokens,output_tokens",
                        fields.len()
                    ),
                ));
            }
            let timestamp_s = fields[0]
                .parse::<f64>()
                .ok()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| {
                    row_error(
                        TRACE_HEADER[0],
                        format!("`{}`: expected a number of seconds >= 0", fields[0]),
                    )
                })?;
            let tokens = |k: usize| {
                fields[k]
                    .parse::<u64>()
                    .ok()
                    .filter(|t| SEQUENCE_TOKENS.contains(*t))
                    .and_then(|t| u32::try_from(t).ok())
                    .ok_or_else(|| {
                        row_error(
                            TRACE_HEADER[k],
                            format!("`{}`: expected {}", fields[k], SEQUENCE_TOKENS.describe()),
                        )
                    })
            };
            let input_tokens = tokens(1)?;
            let output_tokens = tokens(2)?;
            if let Some(prev) = rows.last() {
                if timestamp_s < prev.timestamp_s {
                    return Err(row_error(
                        TRACE_HEADER[0],
                        format!(
                            "{timestamp_s} is before the previous row's {}: rows must be sorted by time",
                            prev.timestamp_s
                        ),
                    ));
                }
            }
            rows.push(TraceRow {
                timestamp_s,
                input_tokens,
                output_tokens,
            });
        }
        if rows.is_empty() {
            return Err(SimError::EmptyTrace {
                file: name.to_string(),
            });
        }
        Ok(Trace {
            name: name.to_string(),
            rows,
        })
    }

    /// The trace's name (its path).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The rows, sorted by time.
    pub fn rows(&self) -> &[TraceRow] {
        &self.rows
    }
}

/// What drives a simulation.
#[derive(Debug, Clone, PartialEq)]
pub enum Traffic {
    /// Synthetic arrivals, deterministic per seed.
    Synthetic(SyntheticTraffic),
    /// A recorded trace, replayed as is.
    Trace(Trace),
}

impl Traffic {
    pub(crate) fn check(&self) -> Result<(), SimError> {
        match self {
            Traffic::Synthetic(s) => s.check(),
            Traffic::Trace(_) => Ok(()),
        }
    }
}

/// One arriving request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Arrival {
    pub time_s: f64,
    pub input_tokens: u32,
    pub output_tokens: u32,
}

/// Inter-arrival gap sampler.
pub(crate) enum Gap {
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
}

/// Yields the arrivals of a [`Traffic`] in time order, one at a time
/// (memory flat in the number of requests). One per simulation, so the
/// size of the ChaCha states in the synthetic variant does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Arrivals<'a> {
    Synthetic {
        traffic: &'a SyntheticTraffic,
        gap: Gap,
        gap_rng: ChaCha8Rng,
        length_rng: ChaCha8Rng,
        /// Time of the last arrival: real time, or operational time when
        /// `rescaler` maps it along a rate curve.
        time_s: f64,
        rescaler: Option<Rescaler<'a>>,
        emitted: u64,
    },
    Trace {
        rows: &'a [TraceRow],
        next: usize,
    },
    Closed {
        traffic: &'a SyntheticTraffic,
        clients: ClosedLoop,
        /// Requests users will send, earliest first (lengths already drawn).
        pending: BinaryHeap<Reverse<Pending>>,
        think_rng: ChaCha8Rng,
        length_rng: ChaCha8Rng,
        emitted: u64,
        /// Requests drawn so far (a stable tie-break for equal times).
        drawn: u64,
    },
}

/// A closed-loop user's next request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pending {
    arrival: Arrival,
    order: u64,
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.arrival
            .time_s
            .total_cmp(&other.arrival.time_s)
            .then(self.order.cmp(&other.order))
    }
}

/// Prompt and output lengths of one request, within the model's context.
fn draw_lengths(traffic: &SyntheticTraffic, rng: &mut ChaCha8Rng) -> (u32, u32) {
    let max = f64::from(traffic.max_context_tokens);
    // A prompt leaves room for one output token; the output fills at most the rest of the context.
    let input = traffic.input_tokens.sample(rng).clamp(1.0, max - 1.0);
    let output = traffic.output_tokens.sample(rng).clamp(1.0, max - input);
    (input as u32, output as u32)
}

impl<'a> Arrivals<'a> {
    pub fn new(traffic: &'a Traffic, seed: u64) -> Result<Self, SimError> {
        let stream = |n: u64| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(n);
            rng
        };
        Ok(match traffic {
            Traffic::Synthetic(s) if s.clients.is_some() => {
                let clients = s.clients.unwrap_or(ClosedLoop {
                    users: 1,
                    think_time_s: 0.0,
                });
                let mut arrivals = Arrivals::Closed {
                    traffic: s,
                    clients,
                    pending: BinaryHeap::with_capacity(clients.users as usize),
                    think_rng: stream(GAP_STREAM),
                    length_rng: stream(LENGTH_STREAM),
                    emitted: 0,
                    drawn: 0,
                };
                // Every user starts thinking at time 0.
                for _ in 0..clients.users {
                    arrivals.user_free(0.0);
                }
                arrivals
            }
            Traffic::Synthetic(s) => {
                // Along a rate curve the process runs at rate 1 in operational time.
                let rate = if s.rate_curve.is_some() {
                    1.0
                } else {
                    s.requests_per_s
                };
                let mean_gap_s = 1.0 / rate;
                let gap = match s.arrival {
                    ArrivalProcess::Poisson => Exp::new(rate).map(Gap::Exp).ok(),
                    // Gamma(shape k = 1/cv², scale θ = mean·cv²): mean kθ, cv 1/√k.
                    ArrivalProcess::Gamma { cv } => {
                        Gamma::new(1.0 / (cv * cv), mean_gap_s * cv * cv)
                            .map(Gap::Gamma)
                            .ok()
                    }
                }
                .ok_or_else(|| {
                    SimError::invalid("arrival", format!("{:?}", s.arrival), "a valid process")
                })?;
                Arrivals::Synthetic {
                    traffic: s,
                    gap,
                    gap_rng: stream(GAP_STREAM),
                    length_rng: stream(LENGTH_STREAM),
                    time_s: 0.0,
                    rescaler: s.rate_curve.as_ref().map(Rescaler::new),
                    emitted: 0,
                }
            }
            Traffic::Trace(t) => Arrivals::Trace {
                rows: t.rows(),
                next: 0,
            },
        })
    }

    /// How many arrivals there will be, when known up front.
    pub fn total(&self) -> Option<u64> {
        match self {
            Arrivals::Synthetic { traffic, .. } | Arrivals::Closed { traffic, .. } => {
                match traffic.stop {
                    Stop::Requests(n) => Some(n),
                    Stop::Duration(_) => None,
                }
            }
            Arrivals::Trace { rows, .. } => Some(rows.len() as u64),
        }
    }

    /// A closed-loop user got its answer (or gave up) at `now`: it thinks
    /// and sends its next request. No effect on open-loop traffic.
    pub fn user_free(&mut self, now: f64) {
        if let Arrivals::Closed {
            traffic,
            clients,
            pending,
            think_rng,
            length_rng,
            drawn,
            ..
        } = self
        {
            let think = match Exp::new(1.0 / clients.think_time_s) {
                Ok(d) if clients.think_time_s > 0.0 => d.sample(think_rng),
                _ => 0.0,
            };
            let (input_tokens, output_tokens) = draw_lengths(traffic, length_rng);
            *drawn += 1;
            pending.push(Reverse(Pending {
                arrival: Arrival {
                    time_s: now + think,
                    input_tokens,
                    output_tokens,
                },
                order: *drawn,
            }));
        }
    }

    /// Puts back an arrival taken by [`Self::next_arrival`] but not yet due
    /// (a closed-loop user may now send earlier). No effect on open-loop traffic.
    pub fn put_back(&mut self, arrival: Arrival) {
        if let Arrivals::Closed {
            pending,
            emitted,
            drawn,
            ..
        } = self
        {
            *emitted -= 1;
            *drawn += 1;
            pending.push(Reverse(Pending {
                arrival,
                order: *drawn,
            }));
        }
    }

    /// Whether this is closed-loop traffic whose users may still send
    /// requests at `now` (a user freed later can send again). Open-loop
    /// traffic: never (its arrivals end when `next_arrival` says so).
    pub fn closed_loop_active(&self, now: f64) -> bool {
        match self {
            Arrivals::Closed {
                traffic, emitted, ..
            } => match traffic.stop {
                Stop::Requests(n) => *emitted < n,
                Stop::Duration(end) => now < end,
            },
            _ => false,
        }
    }

    /// Whether this is closed-loop traffic.
    pub fn is_closed_loop(&self) -> bool {
        matches!(self, Arrivals::Closed { .. })
    }

    pub fn next_arrival(&mut self) -> Option<Arrival> {
        match self {
            Arrivals::Synthetic {
                traffic,
                gap,
                gap_rng,
                length_rng,
                time_s,
                rescaler,
                emitted,
            } => {
                if let Stop::Requests(n) = traffic.stop {
                    if *emitted >= n {
                        return None;
                    }
                }
                let dt = match gap {
                    Gap::Exp(d) => d.sample(gap_rng),
                    Gap::Gamma(d) => d.sample(gap_rng),
                };
                *time_s += dt;
                let t = match rescaler {
                    Some(r) => r.real_time(*time_s)?,
                    None => *time_s,
                };
                if let Stop::Duration(end) = traffic.stop {
                    if t >= end {
                        return None;
                    }
                }
                *emitted += 1;
                let (input_tokens, output_tokens) = draw_lengths(traffic, length_rng);
                Some(Arrival {
                    time_s: t,
                    input_tokens,
                    output_tokens,
                })
            }
            Arrivals::Closed {
                traffic,
                pending,
                emitted,
                ..
            } => {
                if let Stop::Requests(n) = traffic.stop {
                    if *emitted >= n {
                        return None;
                    }
                }
                let Reverse(next) = *pending.peek()?;
                if let Stop::Duration(end) = traffic.stop {
                    if next.arrival.time_s >= end {
                        return None;
                    }
                }
                pending.pop();
                *emitted += 1;
                Some(next.arrival)
            }
            Arrivals::Trace { rows, next } => {
                let first = rows.first()?.timestamp_s;
                let row = rows.get(*next)?;
                *next += 1;
                Some(Arrival {
                    time_s: row.timestamp_s - first,
                    input_tokens: row.input_tokens,
                    output_tokens: row.output_tokens,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean and 99th percentile of `n` draws.
    fn moments(lengths: &TokenLengths, n: usize) -> (f64, f64) {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut draws: Vec<f64> = (0..n).map(|_| lengths.sample(&mut rng)).collect();
        draws.sort_by(f64::total_cmp);
        let mean = draws.iter().sum::<f64>() / n as f64;
        (mean, draws[n * 99 / 100])
    }

    #[test]
    fn the_fitted_lognormal_has_the_workloads_mean_and_p99() {
        // mean 1500, p99 6000: d = ln 4 = 1.386, σ = 2.326 − √(5.412 − 2.773) = 0.702.
        let fit = TokenLengths::fit(TokenStats {
            mean: 1500.0,
            p99: 6000.0,
        });
        let TokenLengths::LogNormal { sigma, .. } = fit else {
            panic!("{fit:?}")
        };
        assert!((sigma - 0.702).abs() < 1e-3, "{sigma}");
        let (mean, p99) = moments(&fit, 200_000);
        assert!((mean / 1500.0 - 1.0).abs() < 0.01, "{mean}");
        assert!((p99 / 6000.0 - 1.0).abs() < 0.03, "{p99}");
        // p99 = mean: a fixed length.
        let fixed = TokenLengths::fit(TokenStats {
            mean: 60.0,
            p99: 60.0,
        });
        assert_eq!(fixed, TokenLengths::Fixed(60));
    }

    #[test]
    fn histograms_are_sampled_by_weight() {
        // 100 tokens with weight 3, 1000 with weight 1: mean 325.
        let h = TokenLengths::histogram(&[Bucket(1000.0, 1.0), Bucket(100.0, 3.0)]).unwrap();
        let (mean, _) = moments(&h, 100_000);
        assert!((mean / 325.0 - 1.0).abs() < 0.02, "{mean}");
        assert!(TokenLengths::histogram(&[Bucket(10.0, 0.0)]).is_err());
    }

    #[test]
    fn gamma_gaps_have_the_asked_mean_and_cv() {
        let t = Traffic::Synthetic(SyntheticTraffic {
            requests_per_s: 10.0,
            rate_curve: None,
            clients: None,
            arrival: ArrivalProcess::Gamma { cv: 3.0 },
            input_tokens: TokenLengths::Fixed(10),
            output_tokens: TokenLengths::Fixed(10),
            max_context_tokens: 100,
            stop: Stop::Requests(200_000),
        });
        let mut arrivals = Arrivals::new(&t, 1).unwrap();
        let (mut last, mut sum, mut sum2, mut n) = (0.0, 0.0, 0.0, 0.0);
        while let Some(a) = arrivals.next_arrival() {
            let gap = a.time_s - last;
            last = a.time_s;
            sum += gap;
            sum2 += gap * gap;
            n += 1.0;
        }
        let mean = sum / n;
        let cv = (sum2 / n - mean * mean).sqrt() / mean;
        assert!((mean / 0.1 - 1.0).abs() < 0.03, "{mean}");
        assert!((cv / 3.0 - 1.0).abs() < 0.05, "{cv}");
    }
}
