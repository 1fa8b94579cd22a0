//! The event loop: arrivals, routing, and the steps of every replica.

use crate::cost::CostModel;
use crate::engine::{EngineConfig, Replica, Request};
use crate::error::SimError;
use crate::stats::{Latency, Percentiles};
use crate::traffic::{Arrivals, Stop, Traffic};
use gpuplan_core::Slo;
use serde::Serialize;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// How arrivals are spread over replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Router {
    /// To the replica with the fewest requests waiting or running (ties: the lowest index).
    #[default]
    LeastOutstanding,
    /// To each replica in turn.
    RoundRobin,
}

/// Everything a simulation needs besides the cost model and the traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Replicas behind the router.
    pub replicas: u32,
    /// Each replica's engine settings.
    pub engine: EngineConfig,
    /// How arrivals are spread.
    pub router: Router,
    /// Share of the arrivals (by count, or by time with [`Stop::Duration`])
    /// left out of the statistics while the replicas fill up, in [0, 1).
    pub warmup_fraction: f64,
    /// The targets goodput counts against.
    pub slo: Slo,
    /// Price of the whole deployment, USD per hour, for `cost_usd`.
    pub usd_per_hour: Option<f64>,
    /// Seed of the synthetic traffic (ChaCha8).
    pub seed: u64,
}

/// What a simulation measured. Latencies cover the requests that arrived
/// after the warm-up and completed; rates cover the measurement window, from
/// the first measured arrival to the last arrival.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimResult {
    /// Requests that arrived.
    pub arrivals: u64,
    /// Requests that completed.
    pub requests_completed: u64,
    /// Requests still waiting or running when the simulation stopped.
    pub in_flight: u64,
    /// Requests longer than the KV cache can ever hold (the engine refuses them).
    pub rejected: u64,
    /// Arrivals after the warm-up, the population of the statistics and goodput.
    pub measured_requests: u64,
    /// Preemptions by recompute (one request can be preempted several times).
    pub preemptions: u64,
    /// Engine steps simulated, all replicas together.
    pub engine_steps: u64,
    /// Time to first token: arrival to the end of the step that sampled it, ms.
    pub ttft_ms: Percentiles,
    /// Time per output token of each request: (e2e − TTFT) / (output − 1), ms.
    pub tpot_ms: Percentiles,
    /// Inter-token gap: each step's duration, once per decoding stream in it, ms
    /// (a preempted stream's wait is not a step gap; it shows in its TPOT).
    pub itl_ms: Percentiles,
    /// End-to-end latency, ms.
    pub e2e_ms: Percentiles,
    /// Arrival to first admission into the running batch, ms.
    pub queue_ms: Percentiles,
    /// Share of measured requests that completed within every SLO of the workload.
    pub goodput: f64,
    /// Completions per second in the measurement window.
    pub throughput_requests_per_s: f64,
    /// Output tokens sampled per second in the measurement window.
    pub output_tokens_per_s: f64,
    /// Share of replica time spent running steps, in the window.
    pub busy_fraction: f64,
    /// Mean running sequences over `max_num_seqs`, in the window.
    pub slot_utilization: f64,
    /// Simulated time until the last completion (or the drain limit), s.
    pub simulated_s: f64,
    /// Replicas simulated.
    pub replicas: u32,
    /// Replicas × simulated time, hours.
    pub replica_hours: f64,
    /// The deployment's price × simulated time, when a price was given, USD.
    pub cost_usd: Option<f64>,
    /// The seed.
    pub seed: u64,
}

/// A replica's step end, ordered by time (then replica, for determinism).
#[derive(Debug, Clone, Copy, PartialEq)]
struct StepEnd {
    time_s: f64,
    replica: u32,
}

impl Eq for StepEnd {}

impl PartialOrd for StepEnd {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for StepEnd {
    fn cmp(&self, other: &Self) -> Ordering {
        self.time_s
            .total_cmp(&other.time_s)
            .then(self.replica.cmp(&other.replica))
    }
}

/// After the last arrival the replicas drain for at most as long as the
/// arrivals lasted (and at least this long), s.
const MIN_DRAIN_S: f64 = 60.0;

fn check(config: &SimConfig) -> Result<(), SimError> {
    let e = &config.engine;
    if config.replicas == 0 {
        return Err(SimError::invalid("replicas", 0, "at least 1"));
    }
    if e.max_num_seqs == 0 {
        return Err(SimError::invalid("max_num_seqs", 0, "at least 1"));
    }
    if e.max_batched_tokens < e.max_num_seqs {
        // vLLM refuses this too: every running sequence needs a token of the budget.
        return Err(SimError::invalid(
            "max_batched_tokens",
            e.max_batched_tokens,
            format!("at least max_num_seqs ({})", e.max_num_seqs),
        ));
    }
    if e.block_tokens == 0 || e.kv_cache_tokens < u64::from(e.block_tokens) {
        return Err(SimError::invalid(
            "kv_cache_tokens",
            e.kv_cache_tokens,
            format!("at least one block of {} tokens", e.block_tokens),
        ));
    }
    if !(0.0..1.0).contains(&config.warmup_fraction) {
        return Err(SimError::invalid(
            "warmup",
            config.warmup_fraction,
            "a fraction in [0, 1)",
        ));
    }
    if let Some(p) = config.usd_per_hour {
        if !(p.is_finite() && p >= 0.0) {
            return Err(SimError::invalid("usd_per_hour", p, "a number >= 0"));
        }
    }
    Ok(())
}

/// Running totals of the measurement window and the measured requests.
struct Tally {
    ttft: Latency,
    tpot: Latency,
    itl: Latency,
    e2e: Latency,
    queue: Latency,
    measured: u64,
    good: u64,
    completed: u64,
    rejected: u64,
    window_completions: u64,
    window_tokens: u64,
    window_busy_s: f64,
    window_slot_s: f64,
}

impl Tally {
    fn new() -> Self {
        Tally {
            ttft: Latency::new(),
            tpot: Latency::new(),
            itl: Latency::new(),
            e2e: Latency::new(),
            queue: Latency::new(),
            measured: 0,
            good: 0,
            completed: 0,
            rejected: 0,
            window_completions: 0,
            window_tokens: 0,
            window_busy_s: 0.0,
            window_slot_s: 0.0,
        }
    }

    /// Records a finished request's latencies and whether it met the SLO.
    fn record(&mut self, r: &Request, now: f64, slo: &Slo) {
        let ttft_s = r.first_token_s - r.arrival_s;
        let e2e_s = now - r.arrival_s;
        self.ttft.record_s(ttft_s, 1);
        self.e2e.record_s(e2e_s, 1);
        self.queue.record_s(r.first_scheduled_s - r.arrival_s, 1);
        let tpot_s =
            (r.output_tokens > 1).then(|| (e2e_s - ttft_s) / f64::from(r.output_tokens - 1));
        if let Some(t) = tpot_s {
            self.tpot.record_s(t, 1);
        }
        let within =
            |limit_ms: Option<f64>, value_s: f64| limit_ms.is_none_or(|l| value_s * 1e3 <= l);
        if within(slo.ttft_ms_p99, ttft_s)
            && within(slo.e2e_ms_p99, e2e_s)
            && tpot_s.is_none_or(|t| within(slo.tpot_ms_p99, t))
        {
            self.good += 1;
        }
    }
}

/// Picks the replica for the next arrival.
fn route(router: Router, replicas: &[Replica], turn: &mut usize) -> usize {
    match router {
        Router::RoundRobin => {
            let r = *turn % replicas.len();
            *turn = (r + 1) % replicas.len();
            r
        }
        Router::LeastOutstanding => {
            let mut best = 0;
            let mut load = usize::MAX;
            for (i, rep) in replicas.iter().enumerate() {
                let o = rep.outstanding();
                if o < load {
                    best = i;
                    load = o;
                }
            }
            best
        }
    }
}

/// How far a simulation is, for progress bars.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Requests arrived so far.
    pub arrivals: u64,
    /// Requests that will arrive, when known up front (a request count or a trace).
    pub total_arrivals: Option<u64>,
    /// Simulated time, s.
    pub simulated_s: f64,
}

/// Arrivals between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 14;

/// Runs a simulation: `traffic` routed over `config.replicas` replicas whose
/// steps cost what `cost` says. Deterministic for a given seed.
///
/// `cost` is a trait object so the event loop is compiled (and optimised)
/// here once, not in every caller; its one call per step is cheap.
pub fn simulate(
    cost: &dyn CostModel,
    config: &SimConfig,
    traffic: &Traffic,
) -> Result<SimResult, SimError> {
    simulate_with_progress(cost, config, traffic, &mut |_| {})
}

/// [`simulate`], calling `progress` every 16,384 arrivals (the result does not depend on it).
pub fn simulate_with_progress(
    cost: &dyn CostModel,
    config: &SimConfig,
    traffic: &Traffic,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimResult, SimError> {
    check(config)?;
    traffic.check()?;
    let mut arrivals = Arrivals::new(traffic, config.seed)?;
    let n_replicas = config.replicas as usize;
    let mut replicas: Vec<Replica> = (0..n_replicas)
        .map(|_| Replica::new(&config.engine))
        .collect();
    // Warm-up: the first share of the arrivals by count, or by time.
    let warmup_count = arrivals
        .total()
        .map(|n| (config.warmup_fraction * n as f64).ceil() as u64);
    let warmup_time_s = match traffic {
        Traffic::Synthetic(s) => match s.stop {
            Stop::Duration(d) => Some(config.warmup_fraction * d),
            Stop::Requests(_) => None,
        },
        Traffic::Trace(_) => None,
    };
    let mut reqs: Vec<Request> =
        Vec::with_capacity(n_replicas * config.engine.max_num_seqs as usize * 2);
    let mut free_slots: Vec<u32> = Vec::new();
    let mut events: BinaryHeap<Reverse<StepEnd>> = BinaryHeap::with_capacity(n_replicas);
    let mut finished: Vec<u32> = Vec::with_capacity(config.engine.max_num_seqs as usize);
    let mut tally = Tally::new();
    let mut turn = 0usize;
    let mut arrived = 0u64;
    let mut window_start_s = f64::INFINITY;
    let mut last_arrival_s = 0.0f64;
    let mut now = 0.0f64;
    let mut next = arrivals.next_arrival();
    let mut drain_until_s = f64::INFINITY;
    loop {
        let step_end = events.peek().map(|e| e.0);
        let take_arrival = match (&next, step_end) {
            (Some(a), Some(e)) => a.time_s <= e.time_s,
            (Some(_), None) => true,
            (None, Some(e)) => {
                if e.time_s > drain_until_s {
                    break;
                }
                false
            }
            (None, None) => break,
        };
        if take_arrival {
            let Some(a) = next else { break };
            now = a.time_s;
            let index = arrived;
            arrived += 1;
            last_arrival_s = now;
            let measured = match (warmup_count, warmup_time_s) {
                (_, Some(t)) => now >= t,
                (Some(n), None) => index >= n,
                (None, None) => true,
            };
            if measured {
                tally.measured += 1;
                window_start_s = window_start_s.min(now);
            }
            next = arrivals.next_arrival();
            if arrived.is_multiple_of(PROGRESS_EVERY) {
                progress(Progress {
                    arrivals: arrived,
                    total_arrivals: arrivals.total(),
                    simulated_s: now,
                });
            }
            if next.is_none() {
                drain_until_s = now + now.max(MIN_DRAIN_S);
            }
            let total = u64::from(a.input_tokens) + u64::from(a.output_tokens);
            if !replicas[0].fits(total) {
                tally.rejected += 1;
                continue;
            }
            let request = Request::new(now, a.input_tokens, a.output_tokens, measured);
            let id = match free_slots.pop() {
                Some(id) => {
                    // Keep the epoch climbing so stale heap entries never match a reused slot.
                    let epoch = reqs[id as usize].epoch.wrapping_add(1);
                    reqs[id as usize] = Request { epoch, ..request };
                    id
                }
                None => {
                    reqs.push(request);
                    (reqs.len() - 1) as u32
                }
            };
            let r = route(config.router, &replicas, &mut turn);
            replicas[r].enqueue(id);
            if !replicas[r].busy {
                start_step(&mut replicas[r], r, &mut reqs, now, cost, &mut events)?;
            }
        } else {
            let Some(Reverse(e)) = events.pop() else {
                break;
            };
            now = e.time_s;
            let r = e.replica as usize;
            let rep = &mut replicas[r];
            let step_s = rep.step_s;
            let running = rep.step_running();
            finished.clear();
            let outcome = rep.complete(&mut reqs, now, &mut finished);
            // Events run in time order: the window closes with the last arrival.
            let in_window = now >= window_start_s && next.is_some();
            if in_window {
                tally.window_tokens += outcome.tokens;
                tally.window_busy_s += step_s;
                tally.window_slot_s += step_s * running as f64;
            }
            if now >= window_start_s {
                tally.itl.record_s(step_s, outcome.decode_streams);
            }
            for &id in &finished {
                let req = reqs[id as usize];
                tally.completed += 1;
                if in_window {
                    tally.window_completions += 1;
                }
                if req.measured {
                    tally.record(&req, now, &config.slo);
                }
                free_slots.push(id);
            }
            start_step(&mut replicas[r], r, &mut reqs, now, cost, &mut events)?;
        }
    }
    let simulated_s = now;
    let window_s = last_arrival_s - window_start_s;
    let per_window = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
    let in_flight = arrived - tally.completed - tally.rejected;
    let hours = simulated_s / 3600.0;
    Ok(SimResult {
        arrivals: arrived,
        requests_completed: tally.completed,
        in_flight,
        rejected: tally.rejected,
        measured_requests: tally.measured,
        preemptions: replicas.iter().map(|r| r.preemptions).sum(),
        engine_steps: replicas.iter().map(|r| r.steps()).sum(),
        ttft_ms: tally.ttft.summary(),
        tpot_ms: tally.tpot.summary(),
        itl_ms: tally.itl.summary(),
        e2e_ms: tally.e2e.summary(),
        queue_ms: tally.queue.summary(),
        goodput: if tally.measured > 0 {
            tally.good as f64 / tally.measured as f64
        } else {
            0.0
        },
        throughput_requests_per_s: per_window(tally.window_completions as f64),
        output_tokens_per_s: per_window(tally.window_tokens as f64),
        busy_fraction: per_window(tally.window_busy_s) / f64::from(config.replicas),
        slot_utilization: per_window(tally.window_slot_s)
            / (f64::from(config.replicas) * f64::from(config.engine.max_num_seqs)),
        simulated_s,
        replicas: config.replicas,
        replica_hours: f64::from(config.replicas) * hours,
        cost_usd: config.usd_per_hour.map(|p| p * hours),
        seed: config.seed,
    })
}

/// Plans replica `r`'s next step at `now` and queues its end.
fn start_step(
    replica: &mut Replica,
    r: usize,
    reqs: &mut [Request],
    now: f64,
    cost: &dyn CostModel,
    events: &mut BinaryHeap<Reverse<StepEnd>>,
) -> Result<(), SimError> {
    if let Some(step_s) = replica.schedule(reqs, now, cost) {
        if !(step_s.is_finite() && step_s >= 0.0) {
            return Err(SimError::invalid(
                "iteration time",
                step_s,
                "a finite number of seconds >= 0 from the cost model",
            ));
        }
        events.push(Reverse(StepEnd {
            time_s: now + step_s,
            replica: r as u32,
        }));
    }
    Ok(())
}
