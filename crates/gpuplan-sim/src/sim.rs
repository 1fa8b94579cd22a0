//! The event loop: arrivals, routing, and the steps of every replica.

use crate::config::{check, Router, SimConfig, SimResult};
use crate::cost::CostModel;
use crate::engine::Request;
use crate::error::SimError;
use crate::fleet::{Fleet, Status, TimePoint};
use crate::stats::Latency;
use crate::traffic::{Arrival, Arrivals, Stop, Traffic};
use gpuplan_core::Slo;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// What happens at an event's time. Replica events carry the replica's
/// generation: an event queued for an incarnation since replaced or
/// released is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventKind {
    /// A replica's step ends.
    StepEnd { replica: u32, generation: u32 },
    /// A booting replica starts serving.
    Ready { replica: u32, generation: u32 },
    /// A replica is lost (spot preemption or failure).
    Lost { replica: u32, generation: u32 },
    /// The autoscaler decides.
    Scale,
    /// A time-series sample.
    Sample,
}

/// An event, ordered by time, then by when it was queued (deterministic).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Event {
    time_s: f64,
    order: u64,
    kind: EventKind,
}

impl Eq for Event {}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        self.time_s
            .total_cmp(&other.time_s)
            .then(self.order.cmp(&other.order))
    }
}

/// After the last arrival the replicas drain for at most as long as the
/// arrivals lasted (and at least this long), s.
const MIN_DRAIN_S: f64 = 60.0;

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
    timed_out: u64,
    retried: u64,
    replica_losses: u64,
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
            timed_out: 0,
            retried: 0,
            replica_losses: 0,
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
    let mut run = Run::new(cost, config, traffic)?;
    run.schedule_first_events();
    loop {
        let event_time = run.events.peek().map(|e| e.0.time_s);
        let take_arrival = match (&run.next, event_time) {
            (Some(a), Some(t)) => a.time_s <= t,
            (Some(_), None) => true,
            (None, Some(t)) => {
                if t > run.drain_until_s || run.outstanding() == 0 {
                    break;
                }
                false
            }
            (None, None) => break,
        };
        if take_arrival {
            run.on_arrival(progress)?;
        } else if let Some(Reverse(e)) = run.events.pop() {
            run.now = e.time_s;
            run.on_event(e.kind)?;
        }
    }
    Ok(run.finish())
}

/// The state of one simulation.
struct Run<'a> {
    cost: &'a dyn CostModel,
    config: &'a SimConfig,
    traffic: &'a Traffic,
    arrivals: Arrivals<'a>,
    next: Option<Arrival>,
    fleet: Fleet,
    reqs: Vec<Request>,
    free_ids: Vec<u32>,
    /// Requests that found no replica up, oldest first.
    backlog: VecDeque<u32>,
    events: BinaryHeap<Reverse<Event>>,
    event_order: u64,
    finished: Vec<u32>,
    lost: Vec<u32>,
    tally: Tally,
    failure_rng: ChaCha8Rng,
    turn: usize,
    now: f64,
    arrived: u64,
    warmup_count: Option<u64>,
    warmup_time_s: Option<f64>,
    window_start_s: f64,
    last_arrival_s: f64,
    drain_until_s: f64,
    timeseries: Vec<TimePoint>,
    /// Completions and arrivals at the previous time-series sample.
    sampled: (u64, u64, f64),
}

/// ChaCha stream of the replica losses (the traffic uses streams 1 and 2).
const FAILURE_STREAM: u64 = 3;

impl<'a> Run<'a> {
    fn new(
        cost: &'a dyn CostModel,
        config: &'a SimConfig,
        traffic: &'a Traffic,
    ) -> Result<Self, SimError> {
        let mut arrivals = Arrivals::new(traffic, config.seed)?;
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
        let initial = match config.dynamics.autoscale {
            Some(a) => config.replicas.clamp(a.min_replicas, a.max_replicas),
            None => config.replicas,
        };
        let n = initial as usize;
        let mut failure_rng = ChaCha8Rng::seed_from_u64(config.seed);
        failure_rng.set_stream(FAILURE_STREAM);
        let next = arrivals.next_arrival();
        Ok(Run {
            cost,
            config,
            traffic,
            arrivals,
            next,
            fleet: Fleet::new(config.engine, initial),
            reqs: Vec::with_capacity(n * config.engine.max_num_seqs as usize * 2),
            free_ids: Vec::new(),
            backlog: VecDeque::new(),
            events: BinaryHeap::with_capacity(n * 2 + 4),
            event_order: 0,
            finished: Vec::with_capacity(config.engine.max_num_seqs as usize),
            lost: Vec::new(),
            tally: Tally::new(),
            failure_rng,
            turn: 0,
            now: 0.0,
            arrived: 0,
            warmup_count,
            warmup_time_s,
            window_start_s: f64::INFINITY,
            last_arrival_s: 0.0,
            drain_until_s: f64::INFINITY,
            timeseries: Vec::new(),
            sampled: (0, 0, 0.0),
        })
    }

    fn push(&mut self, time_s: f64, kind: EventKind) {
        self.event_order += 1;
        self.events.push(Reverse(Event {
            time_s,
            order: self.event_order,
            kind,
        }));
    }

    /// Losses of the initial replicas, the first scaling decision and sample.
    fn schedule_first_events(&mut self) {
        for i in 0..self.fleet.slots.len() {
            self.schedule_loss(i);
        }
        if let Some(a) = self.config.dynamics.autoscale {
            self.push(a.interval_s, EventKind::Scale);
        }
        if self.config.dynamics.sample_every_s.is_some() {
            self.push(0.0, EventKind::Sample);
        }
    }

    /// Requests arrived and not yet completed, rejected or timed out.
    fn outstanding(&self) -> u64 {
        self.arrived - self.tally.completed - self.tally.rejected - self.tally.timed_out
    }

    fn on_arrival(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        let Some(a) = self.next else {
            return Ok(());
        };
        self.now = a.time_s;
        let index = self.arrived;
        self.arrived += 1;
        self.last_arrival_s = self.now;
        let measured = match (self.warmup_count, self.warmup_time_s) {
            (_, Some(t)) => self.now >= t,
            (Some(n), None) => index >= n,
            (None, None) => true,
        };
        if measured {
            self.tally.measured += 1;
            self.window_start_s = self.window_start_s.min(self.now);
        }
        self.next = self.arrivals.next_arrival();
        if self.arrived.is_multiple_of(PROGRESS_EVERY) {
            progress(Progress {
                arrivals: self.arrived,
                total_arrivals: self.arrivals.total(),
                simulated_s: self.now,
            });
        }
        self.note_end_of_arrivals();
        let total = u64::from(a.input_tokens) + u64::from(a.output_tokens);
        if !self.fleet.fits(total) {
            // A closed-loop user whose request can never be served leaves.
            self.tally.rejected += 1;
            return Ok(());
        }
        let request = Request::new(self.now, a.input_tokens, a.output_tokens, measured);
        let id = match self.free_ids.pop() {
            Some(id) => {
                // Keep the epoch climbing so stale heap entries never match a reused slot.
                let epoch = self.reqs[id as usize].epoch.wrapping_add(1);
                self.reqs[id as usize] = Request { epoch, ..request };
                id
            }
            None => {
                self.reqs.push(request);
                (self.reqs.len() - 1) as u32
            }
        };
        self.dispatch(id)
    }

    /// Arrivals are over: the replicas drain for at most as long as they lasted.
    fn note_end_of_arrivals(&mut self) {
        if self.next.is_none() && !self.arrivals.closed_loop_active(self.now) {
            self.drain_until_s = self.drain_until_s.min(self.now + self.now.max(MIN_DRAIN_S));
        }
    }

    /// Whether requests may still arrive (the measurement window is open).
    fn arrivals_open(&self) -> bool {
        self.next.is_some() || self.arrivals.closed_loop_active(self.now)
    }

    /// A request left (completed or timed out): its closed-loop user thinks
    /// and sends the next one, which may now be the earliest arrival.
    fn user_free(&mut self) {
        if !self.arrivals.is_closed_loop() {
            return;
        }
        self.arrivals.user_free(self.now);
        if let Some(a) = self.next.take() {
            self.arrivals.put_back(a);
        }
        self.next = self.arrivals.next_arrival();
        self.note_end_of_arrivals();
    }

    /// Sends a request to a serving replica, or to the backlog when none is up.
    fn dispatch(&mut self, id: u32) -> Result<(), SimError> {
        match self.route() {
            Some(r) => {
                self.fleet.slots[r].engine.enqueue(id);
                if !self.fleet.slots[r].engine.busy {
                    self.start_step(r)?;
                }
            }
            None => self.backlog.push_back(id),
        }
        Ok(())
    }

    /// Picks the serving replica for the next request.
    fn route(&mut self) -> Option<usize> {
        let slots = &self.fleet.slots;
        let up = |i: &usize| slots[*i].status == Status::Up;
        match self.config.router {
            Router::RoundRobin => {
                let n = slots.len();
                let r = (0..n).map(|k| (self.turn + k) % n).find(up)?;
                self.turn = (r + 1) % n;
                Some(r)
            }
            Router::LeastOutstanding => (0..slots.len())
                .filter(up)
                .min_by_key(|&i| (slots[i].engine.outstanding(), i)),
            Router::LeastKv => (0..slots.len()).filter(up).min_by(|&a, &b| {
                let key = |i: usize| {
                    (
                        slots[i].engine.kv_used_share(),
                        slots[i].engine.outstanding(),
                    )
                };
                let (ka, kb) = (key(a), key(b));
                ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1)).then(a.cmp(&b))
            }),
        }
    }

    fn on_event(&mut self, kind: EventKind) -> Result<(), SimError> {
        let current = |fleet: &Fleet, replica: u32, generation: u32| {
            fleet.slots[replica as usize].generation == generation
        };
        match kind {
            EventKind::StepEnd {
                replica,
                generation,
            } if current(&self.fleet, replica, generation) => self.on_step_end(replica as usize),
            EventKind::Ready {
                replica,
                generation,
            } if current(&self.fleet, replica, generation) => self.on_ready(replica as usize),
            EventKind::Lost {
                replica,
                generation,
            } if current(&self.fleet, replica, generation) => self.on_lost(replica as usize),
            EventKind::Scale => self.on_scale(),
            EventKind::Sample => {
                self.on_sample();
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn on_step_end(&mut self, r: usize) -> Result<(), SimError> {
        let now = self.now;
        let rep = &mut self.fleet.slots[r].engine;
        let step_s = rep.step_s;
        let running = rep.step_running();
        self.finished.clear();
        let outcome = rep.complete(&mut self.reqs, now, &mut self.finished);
        // Events run in time order: the window closes with the last arrival.
        let in_window = now >= self.window_start_s && self.arrivals_open();
        if in_window {
            self.tally.window_tokens += outcome.tokens;
            self.tally.window_busy_s += step_s;
            self.tally.window_slot_s += step_s * running as f64;
        }
        if now >= self.window_start_s {
            self.tally
                .itl
                .record_s(step_s + outcome.paused_s, outcome.decode_streams);
        }
        for k in 0..self.finished.len() {
            let id = self.finished[k];
            let req = self.reqs[id as usize];
            self.tally.completed += 1;
            if in_window {
                self.tally.window_completions += 1;
            }
            if req.measured {
                self.tally.record(&req, now, &self.config.slo);
            }
            self.free_ids.push(id);
            self.user_free();
        }
        self.start_step(r)?;
        let slot = &self.fleet.slots[r];
        if slot.status == Status::Draining && !slot.engine.busy && slot.engine.outstanding() == 0 {
            self.fleet.release(r, now);
        }
        Ok(())
    }

    /// A booting replica serves: it takes the backlog (oldest first) while
    /// it is the least loaded, and its own loss clock starts.
    fn on_ready(&mut self, r: usize) -> Result<(), SimError> {
        if self.fleet.slots[r].status != Status::Booting {
            return Ok(());
        }
        self.fleet.slots[r].status = Status::Up;
        self.schedule_loss(r);
        self.flush_backlog()
    }

    /// Re-dispatches the backlog; requests that waited past the timeout give up.
    fn flush_backlog(&mut self) -> Result<(), SimError> {
        while let Some(id) = self.backlog.pop_front() {
            if self.timed_out(id) {
                continue;
            }
            if self.route().is_none() {
                self.backlog.push_front(id);
                break;
            }
            self.dispatch(id)?;
        }
        Ok(())
    }

    /// Whether a backlogged request has waited past the timeout (and counts it).
    fn timed_out(&mut self, id: u32) -> bool {
        let Some(limit) = self.config.dynamics.request_timeout_s else {
            return false;
        };
        if self.now - self.reqs[id as usize].arrival_s <= limit {
            return false;
        }
        self.tally.timed_out += 1;
        self.free_ids.push(id);
        self.user_free();
        true
    }

    /// The next loss of replica `r`, when losses are simulated.
    fn schedule_loss(&mut self, r: usize) {
        let Some(f) = self.config.dynamics.failures else {
            return;
        };
        if f.per_replica_per_hour <= 0.0 {
            return;
        }
        let Ok(gap) = Exp::new(f.per_replica_per_hour / 3600.0) else {
            return;
        };
        let at = self.now + gap.sample(&mut self.failure_rng);
        let generation = self.fleet.slots[r].generation;
        self.push(
            at,
            EventKind::Lost {
                replica: r as u32,
                generation,
            },
        );
    }

    /// Replica `r` is lost: what it held starts over elsewhere (retried), and
    /// a replacement boots unless the replica was being drained anyway.
    fn on_lost(&mut self, r: usize) -> Result<(), SimError> {
        let status = self.fleet.slots[r].status;
        if !matches!(status, Status::Up | Status::Draining) {
            return Ok(());
        }
        self.tally.replica_losses += 1;
        self.lost.clear();
        self.fleet.slots[r]
            .engine
            .lose_all(&mut self.reqs, &mut self.lost);
        self.tally.retried += self.lost.len() as u64;
        let delay = self
            .config
            .dynamics
            .failures
            .map_or(0.0, |f| f.replacement_delay_s);
        if status == Status::Draining {
            self.fleet.release(r, self.now);
        } else {
            self.fleet.replace(r);
            let generation = self.fleet.slots[r].generation;
            self.push(
                self.now + delay,
                EventKind::Ready {
                    replica: r as u32,
                    generation,
                },
            );
        }
        let lost = std::mem::take(&mut self.lost);
        for &id in &lost {
            self.dispatch(id)?;
        }
        self.lost = lost;
        Ok(())
    }

    /// Target tracking: replicas = ⌈outstanding / target⌉ within [min, max];
    /// up at once (after the boot delay), down only after the cooldown,
    /// draining the least loaded.
    fn on_scale(&mut self) -> Result<(), SimError> {
        let Some(a) = self.config.dynamics.autoscale else {
            return Ok(());
        };
        self.push(self.now + a.interval_s, EventKind::Scale);
        let load: usize = self
            .fleet
            .slots
            .iter()
            .filter(|s| matches!(s.status, Status::Up | Status::Draining))
            .map(|s| s.engine.outstanding())
            .sum::<usize>()
            + self.backlog.len();
        let desired = ((load as f64 / a.target_outstanding).ceil() as u32)
            .clamp(a.min_replicas, a.max_replicas);
        let up = self.fleet.count(Status::Up);
        let mut provisioned = up + self.fleet.count(Status::Booting);
        if desired > provisioned {
            // Keep draining replicas first: they serve at once.
            for i in 0..self.fleet.slots.len() {
                if provisioned < desired && self.fleet.slots[i].status == Status::Draining {
                    self.fleet.slots[i].status = Status::Up;
                    provisioned += 1;
                }
            }
            while provisioned < desired {
                let r = self.fleet.provision(self.now);
                let generation = self.fleet.slots[r].generation;
                self.push(
                    self.now + a.scale_up_delay_s,
                    EventKind::Ready {
                        replica: r as u32,
                        generation,
                    },
                );
                provisioned += 1;
            }
            self.fleet.last_scaled_s = self.now;
            return self.flush_backlog();
        }
        if desired < up && self.now - self.fleet.last_scaled_s >= a.cooldown_s {
            self.drain(up - desired);
            self.fleet.last_scaled_s = self.now;
        }
        Ok(())
    }

    /// Stops routing to the `n` least loaded serving replicas; idle ones are released now.
    fn drain(&mut self, n: u32) {
        let mut up: Vec<usize> = (0..self.fleet.slots.len())
            .filter(|&i| self.fleet.slots[i].status == Status::Up)
            .collect();
        up.sort_by_key(|&i| {
            (
                self.fleet.slots[i].engine.outstanding(),
                std::cmp::Reverse(i),
            )
        });
        for &i in up.iter().take(n as usize) {
            let slot = &mut self.fleet.slots[i];
            if !slot.engine.busy && slot.engine.outstanding() == 0 {
                self.fleet.release(i, self.now);
            } else {
                slot.status = Status::Draining;
            }
        }
    }

    /// Records one time-series row and queues the next.
    fn on_sample(&mut self) {
        let Some(every) = self.config.dynamics.sample_every_s else {
            return;
        };
        if self.arrivals_open() || self.outstanding() > 0 {
            self.push(self.now + every, EventKind::Sample);
        }
        let serving = self
            .fleet
            .slots
            .iter()
            .filter(|s| matches!(s.status, Status::Up | Status::Draining));
        let (mut waiting, mut running, mut kv, mut n) = (self.backlog.len() as u64, 0, 0.0, 0.0);
        for s in serving {
            waiting += s.engine.waiting_len() as u64;
            running += s.engine.running_len() as u64;
            kv += s.engine.kv_used_share();
            n += 1.0;
        }
        let (completed_before, arrived_before, t_before) = self.sampled;
        let dt = self.now - t_before;
        let per_s = |x: u64| if dt > 0.0 { x as f64 / dt } else { 0.0 };
        let arrival_rate = match self.traffic {
            Traffic::Synthetic(s) => s
                .rate_curve
                .as_ref()
                .map_or(s.requests_per_s, |c| c.rate_at(self.now)),
            Traffic::Trace(_) => per_s(self.arrived - arrived_before),
        };
        self.timeseries.push(TimePoint {
            time_s: self.now,
            arrival_rate,
            replicas_up: self.fleet.count(Status::Up),
            replicas_booting: self.fleet.count(Status::Booting),
            replicas_draining: self.fleet.count(Status::Draining),
            waiting,
            running,
            kv_used_share: if n > 0.0 { kv / n } else { 0.0 },
            completed_per_s: per_s(self.tally.completed - completed_before),
            ttft_ms_p99_so_far: self.tally.ttft.summary().p99,
        });
        self.sampled = (self.tally.completed, self.arrived, self.now);
    }

    /// Plans replica `r`'s next step at `now` and queues its end.
    fn start_step(&mut self, r: usize) -> Result<(), SimError> {
        let slot = &mut self.fleet.slots[r];
        if let Some(step_s) = slot.engine.schedule(&mut self.reqs, self.now, self.cost) {
            if !(step_s.is_finite() && step_s >= 0.0) {
                return Err(SimError::invalid(
                    "iteration time",
                    step_s,
                    "a finite number of seconds >= 0 from the cost model",
                ));
            }
            let generation = slot.generation;
            self.push(
                self.now + step_s,
                EventKind::StepEnd {
                    replica: r as u32,
                    generation,
                },
            );
        }
        Ok(())
    }

    fn finish(mut self) -> SimResult {
        let simulated_s = self.now;
        let window_s = self.last_arrival_s - self.window_start_s;
        let per_window = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
        let in_flight = self.outstanding();
        let billed_s = self.fleet.billed_seconds(simulated_s);
        let mean_replicas = if simulated_s > 0.0 {
            billed_s / simulated_s
        } else {
            f64::from(self.fleet.billed())
        };
        let slots = &self.fleet.slots;
        let t = &self.tally;
        let config = self.config;
        SimResult {
            arrivals: self.arrived,
            requests_completed: t.completed,
            in_flight,
            rejected: t.rejected,
            timed_out: t.timed_out,
            retried: t.retried,
            replica_losses: t.replica_losses,
            measured_requests: t.measured,
            preemptions: slots.iter().map(|s| s.engine.preemptions).sum(),
            engine_steps: slots.iter().map(|s| s.engine.steps()).sum(),
            ttft_ms: t.ttft.summary(),
            tpot_ms: t.tpot.summary(),
            itl_ms: t.itl.summary(),
            e2e_ms: t.e2e.summary(),
            queue_ms: t.queue.summary(),
            goodput: if t.measured > 0 {
                t.good as f64 / t.measured as f64
            } else {
                0.0
            },
            throughput_requests_per_s: per_window(t.window_completions as f64),
            output_tokens_per_s: per_window(t.window_tokens as f64),
            busy_fraction: (per_window(t.window_busy_s) / mean_replicas).min(1.0),
            slot_utilization: per_window(t.window_slot_s)
                / (mean_replicas * f64::from(config.engine.max_num_seqs)),
            simulated_s,
            replicas: config.replicas,
            mean_replicas,
            peak_replicas: self.fleet.peak_billed,
            replica_hours: billed_s / 3600.0,
            // The deployment's price is for `config.replicas` replicas.
            cost_usd: config
                .usd_per_hour
                .map(|p| p / f64::from(config.replicas) * billed_s / 3600.0),
            seed: config.seed,
            timeseries: std::mem::take(&mut self.timeseries),
        }
    }
}
