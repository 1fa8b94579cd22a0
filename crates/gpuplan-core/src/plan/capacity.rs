//! Step 2 of the search: one replica configuration (GPU × precision ×
//! layout) — does it fit, and which engine batch cap gives the most requests
//! per second within the SLO?

use super::candidates::ReplicaKey;
use super::rejections::{Miss, RejectReason};
use crate::calibration::Calibration;
use crate::check::{CheckedReplica, ReplicaSpec, Spelling, Violation};
use crate::engine::ServingChoice;
use crate::layout::{weight_bytes_per_gpu, Layout};
use crate::memory::{inference_memory, EngineLimits, InferenceMemory, GIB};
use crate::perf::{Bound, Deployment};
use crate::serving::{block_tokens, steady_state};
use crate::tails::{lognormal_cv2, TailInputs, TailModel, Tails};
use crate::workload::{default_kv_precision, InferenceWorkload};
use gpuplan_catalog::{GpuSpec, Precision};

/// Batch caps (vLLM `--max-num-seqs`) the coarse search tries; the exact
/// best cap is then searched for between the best one's neighbours.
pub const BATCH_CAPS: [u64; 8] = [8, 16, 32, 64, 128, 256, 512, 1024];

/// Largest batch cap considered: the memory model reserves engine workspace
/// for this many sequences.
const MAX_BATCH_CAP: u64 = 1024;

/// The per-replica result of the performance side for one configuration.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaChoice {
    pub dep: Deployment,
    /// The checkpoint, kernel and engine settings that realise the replica.
    pub serving: ServingChoice,
    pub memory: InferenceMemory,
    /// Sequences of mean length the KV cache holds.
    pub kv_sequences: u64,
    /// The best batch cap and its performance.
    pub cap: CapChoice,
    /// Replicas the peak needs behind the router, on demand and on spot.
    pub peak_replicas: PeakReplicas,
}

/// Replicas the peak needs: sized first on one replica's own capacity, then
/// the fewest whose tails, with the router pooling their slots and spreading
/// their prompts, still meet every SLO at their share of the peak.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PeakReplicas {
    /// Replicas the peak needs at one replica's own capacity (a real number).
    pub alone: f64,
    /// The fewest replicas that meet the SLO together, on demand.
    pub pooled: f64,
    /// The same with the spot capacity loss taken out of each replica.
    pub pooled_spot: f64,
}

/// Performance of a replica at one batch cap.
#[derive(Debug, Clone)]
pub(crate) struct CapChoice {
    pub batch: u64,
    pub capacity_rps: f64,
    pub service_s: f64,
    pub max_rps: f64,
    /// p99 TPOT at the capacity arrival rate, ms.
    pub tpot_at_capacity_ms: f64,
    pub iteration_full_s: f64,
    pub prefill_bound: Bound,
    pub decode_bound: Bound,
}

/// A rejected replica configuration: reason, example, and how near it came.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaRejection {
    pub reason: RejectReason,
    pub example: String,
    pub miss: Option<Miss>,
}

impl ReplicaRejection {
    fn new(reason: RejectReason, example: String, miss: Option<Miss>) -> Self {
        ReplicaRejection {
            reason,
            example,
            miss,
        }
    }
}

/// The outcome of one replica configuration and the batch caps it tried.
pub(crate) type ReplicaOutcome = (Result<Box<ReplicaChoice>, ReplicaRejection>, usize);

/// Workload-wide inputs of the capacity search.
pub(crate) struct CapacityContext<'a> {
    pub workload: &'a InferenceWorkload,
    pub cal: &'a Calibration,
    /// Squared coefficient of variation of inter-arrival times.
    pub ca2: f64,
    /// Squared coefficient of variation of service times.
    pub cs2: f64,
    /// The engine is built offline from the checkpoint (TensorRT-LLM), so no
    /// replica loads 16-bit weights before quantising them (vLLM's online FP8).
    pub prebuilt_engine: bool,
}

/// Longest sequence the p99 request reaches (prompt + output), tokens.
pub(crate) fn context_p99(w: &InferenceWorkload) -> u64 {
    (w.input_tokens.p99 + w.output_tokens.p99).ceil() as u64
}

impl CapacityContext<'_> {
    /// The tail model of a replica at batch cap `batch` whose requests hold a
    /// slot `service_s` seconds.
    pub fn tail_model<'d>(&self, dep: &'d Deployment, batch: u64, service_s: f64) -> TailModel<'d> {
        self.tail_model_of_one_in(dep, batch, service_s, 1)
    }

    /// The tail model of one of `replicas` replicas behind a
    /// least-outstanding-requests router (what the simulator and real
    /// gateways run). The router sends an arrival to a replica with a free
    /// batch slot whenever one has one, so the slots of all replicas form one
    /// pool: a request waits for a slot only when every replica is full
    /// (G/G/(n·c) on the whole stream). It balances sequences, not prompt
    /// tokens, so a burst of prompts still lands on few replicas: each
    /// replica's prefill queue keeps the stream's burstiness.
    pub fn tail_model_of_one_in<'d>(
        &self,
        dep: &'d Deployment,
        batch: u64,
        service_s: f64,
        replicas: u32,
    ) -> TailModel<'d> {
        let w = self.workload;
        TailModel::new(
            dep,
            TailInputs {
                input_mean: w.input_tokens.mean,
                input_p99: w.input_tokens.p99,
                output_mean: w.output_tokens.mean,
                output_p99: w.output_tokens.p99,
                batch: batch as f64,
                max_batched_tokens: w.max_batched_tokens as f64,
                service_s,
                ca2: self.ca2,
                slot_pool_replicas: f64::from(replicas.max(1)),
                cs2: self.cs2,
            },
        )
    }

    /// The tails of one of `replicas` replicas at `lambda` requests/s each:
    /// the pooled model's ([`Self::tail_model_of_one_in`]), unless they miss
    /// an SLO that the replica alone meets at the same rate. A
    /// least-outstanding router never serves a replica worse than splitting
    /// the stream blindly, so where the two approximations disagree at an
    /// SLO's edge the replica alone stands (without this a plan sized on one
    /// replica's capacity could fail its own fleet check by 0.01 %, and a
    /// bigger GPU whose cap search landed on that edge lose its plan).
    pub(crate) fn fleet_tails(
        &self,
        dep: &Deployment,
        batch: u64,
        service_s: f64,
        replicas: u32,
        lambda: f64,
    ) -> Tails {
        let pooled = self
            .tail_model_of_one_in(dep, batch, service_s, replicas)
            .at(lambda);
        if replicas <= 1 || meets_slo(self.workload, &pooled) {
            return pooled;
        }
        let alone = self.tail_model(dep, batch, service_s).at(lambda);
        if meets_slo(self.workload, &alone) {
            alone
        } else {
            pooled
        }
    }

    /// Whether one of `replicas` replicas meets every SLO at `lambda`
    /// requests/s each: [`Self::fleet_tails`] without computing tails a
    /// verdict does not need.
    fn fleet_passes(
        &self,
        dep: &Deployment,
        batch: u64,
        service_s: f64,
        replicas: u32,
        lambda: f64,
    ) -> bool {
        let w = self.workload;
        let passes =
            |model: TailModel<'_>| model.passes(lambda, w.slo.tpot_ms_p99, |t| meets_slo(w, t));
        passes(self.tail_model_of_one_in(dep, batch, service_s, replicas))
            || (replicas > 1 && passes(self.tail_model(dep, batch, service_s)))
    }

    /// Longest sequence the p99 request reaches (prompt + output), tokens.
    pub fn context_p99(&self) -> u64 {
        context_p99(self.workload)
    }
}

fn label(gpu: &GpuSpec, key: &ReplicaKey) -> String {
    format!(
        "{} × {} (TP{} PP{}), {} on {}",
        gpu.name,
        key.layout.gpus(),
        key.layout.tp,
        key.layout.pp,
        key.precision,
        key.engine
    )
}

/// The replica configuration of a key, as the validation layer checks it.
pub(crate) fn replica_spec<'a>(
    w: &'a InferenceWorkload,
    gpu: &'a GpuSpec,
    key: &ReplicaKey,
) -> ReplicaSpec<'a> {
    ReplicaSpec {
        model: &w.model,
        gpu,
        precision: key.precision,
        kv_precision: w
            .kv_precision
            .unwrap_or(default_kv_precision(key.precision)),
        layout: key.layout,
        limits: EngineLimits {
            memory_utilization: w.memory_utilization,
            max_batched_tokens: w.max_batched_tokens,
            // vLLM requires max_num_batched_tokens ≥ max_num_seqs.
            max_num_seqs: MAX_BATCH_CAP.min(w.max_batched_tokens),
        },
        context_len: context_p99(w),
        engine: key.engine,
        spelling: Spelling::WORKLOAD,
    }
}

impl ReplicaRejection {
    /// The rejection for a configuration the validation layer refused: the
    /// first violation, under its reason.
    pub(crate) fn from_violations(
        gpu: &GpuSpec,
        key: &ReplicaKey,
        violations: &[Violation],
    ) -> Self {
        let label = label(gpu, key);
        let first = violations.first();
        let reason = first
            .and_then(Violation::reject_reason)
            .unwrap_or(RejectReason::PrecisionUnsupported);
        let text = first.map(ToString::to_string).unwrap_or_default();
        ReplicaRejection::new(reason, format!("{label}: {text}"), None)
    }
}

/// Evaluates one checked replica configuration: memory (also while loading
/// an online-quantised checkpoint), then the batch cap with the highest
/// capacity within the SLO.
pub(crate) fn evaluate_replica(
    cx: &CapacityContext<'_>,
    key: &ReplicaKey,
    checked: &CheckedReplica<'_>,
) -> ReplicaOutcome {
    let (precision, layout) = (key.precision, key.layout);
    let gpu = checked.spec.gpu;
    let w = cx.workload;
    let label = label(gpu, key);
    let serving = &checked.serving;
    // A benchmark's engine is built from its own quantised weights; a plan's
    // engine must load the catalog's checkpoint as it is.
    if !cx.prebuilt_engine {
        if let Err(why) = key.engine.loads(serving) {
            let r = ReplicaRejection::new(
                RejectReason::EngineUnsupported,
                format!("{label}: {why}"),
                None,
            );
            return (Err(r), 0);
        }
    }
    let memory = match replica_memory(checked, &label) {
        Ok(m) => m,
        Err(r) => return (Err(r), 0),
    };
    if let Err(r) = loading_fits(cx, precision, layout, serving, &memory, &label) {
        return (Err(r), 0);
    }
    if w.beam_width > 1 {
        if let Err(why) = key.engine.beam_search() {
            let r = ReplicaRejection::new(
                RejectReason::EngineUnsupported,
                format!("{label}: {why}"),
                None,
            );
            return (Err(r), 0);
        }
    }
    let dep = match checked.deployment(cx.cal) {
        Ok(d) => d.with_beams(w.beam_width),
        Err(e) => {
            let r = ReplicaRejection::new(
                RejectReason::PrecisionUnsupported,
                format!("{label}: {e}"),
                None,
            );
            return (Err(r), 0);
        }
    };
    let kv_sequences = kv_safe_sequences(w, memory.kv_cache_tokens);
    best_batch_cap(cx, &dep, serving, &memory, kv_sequences, &label)
}

/// Sequences the KV cache holds without preempting: the most `b` whose
/// contexts (prompt + output, independent lognormals fitted to mean and p99)
/// sum to at most the cache at their p99 — `b·m + z·√b·s ≤ KV`. Sized for the
/// mean alone, a batch of long-tailed requests runs out of blocks and the
/// engine preempts and recomputes, losing throughput.
/// With beam search a request holds its prompt once and each beam's output
/// (`beam_width` perfectly correlated copies: the output's spread scales too).
fn kv_safe_sequences(w: &InferenceWorkload, kv_cache_tokens: u64) -> u64 {
    let (i, o) = (&w.input_tokens, &w.output_tokens);
    let beams = f64::from(w.beam_width.max(1));
    let mean = if beams > 1.0 {
        block_tokens(i.mean.ceil() as u64) as f64
            + beams * block_tokens(o.mean.ceil() as u64) as f64
    } else {
        block_tokens((i.mean + o.mean).ceil() as u64) as f64
    };
    let sd = (i.mean * i.mean * lognormal_cv2(i.mean, i.p99)
        + beams * beams * o.mean * o.mean * lognormal_cv2(o.mean, o.p99))
    .sqrt();
    let kv = kv_cache_tokens as f64;
    // m·x² + z·s·x − KV = 0 with x = √b.
    let z_s = 2.326 * sd;
    let root = ((z_s * z_s + 4.0 * mean * kv).sqrt() - z_s) / (2.0 * mean);
    (root * root).floor() as u64
}

/// Online quantisation loads the 16-bit checkpoint before quantising it
/// (vLLM FP8 docs, "Online Dynamic Quantization"): those weights, plus the
/// runtime overhead, must fit in the engine's memory budget while loading.
fn loading_fits(
    cx: &CapacityContext<'_>,
    precision: Precision,
    layout: Layout,
    serving: &ServingChoice,
    memory: &InferenceMemory,
    label: &str,
) -> Result<(), ReplicaRejection> {
    if serving.load_precision == precision || cx.prebuilt_engine {
        return Ok(());
    }
    let model = &cx.workload.model;
    let loading_gib = weight_bytes_per_gpu(model, layout, serving.load_precision) / GIB;
    let room_gib = memory.budget_gib - memory.per_gpu.overhead_gib;
    if loading_gib <= room_gib {
        return Ok(());
    }
    Err(ReplicaRejection::new(
        RejectReason::DoesNotFit,
        format!(
            "{label}: online quantisation loads the {} checkpoint first, {loading_gib:.1} GiB per GPU > {room_gib:.1} GiB (no pre-quantised {precision} checkpoint of {})",
            serving.load_precision, model.id
        ),
        None,
    ))
}

/// The memory of one replica; rejected when weights, workspace and one p99
/// sequence do not fit.
fn replica_memory(
    checked: &CheckedReplica<'_>,
    label: &str,
) -> Result<InferenceMemory, ReplicaRejection> {
    let input = checked.memory_input();
    let context99 = input.context_len;
    let memory = inference_memory(&input).map_err(|e| {
        ReplicaRejection::new(RejectReason::LayoutInvalid, format!("{label}: {e}"), None)
    })?;
    if memory.fits {
        return Ok(memory);
    }
    let need =
        memory.per_gpu.weights_gib + memory.per_gpu.activations_gib + memory.per_gpu.overhead_gib;
    let left = if memory.kv_cache_tokens > 0 {
        format!("{} tokens left", memory.kv_cache_tokens)
    } else {
        "none left".into()
    };
    Err(ReplicaRejection::new(
        RejectReason::DoesNotFit,
        format!(
            "{label}: needs {need:.1} GiB per GPU before KV cache, has {:.1} (KV for one {context99}-token sequence: {left})",
            memory.budget_gib
        ),
        None,
    ))
}

/// The largest batch cap a replica may get: what the KV cache holds, and
/// never above `--max-num-batched-tokens` (vLLM refuses to start when
/// max_num_seqs exceeds it).
fn cap_limit(kv_sequences: u64, max_batched_tokens: u64) -> u64 {
    kv_sequences.min(max_batched_tokens)
}

/// Coarse batch caps: the powers of two the KV cache can hold, and the KV
/// limit itself. `kv_sequences` is already capped at what the engine
/// accepts (see [`cap_limit`]).
fn coarse_caps(kv_sequences: u64) -> Vec<u64> {
    let mut caps: Vec<u64> = BATCH_CAPS
        .iter()
        .copied()
        .filter(|b| *b <= kv_sequences)
        .collect();
    if (1..MAX_BATCH_CAP).contains(&kv_sequences) && !caps.contains(&kv_sequences) {
        caps.push(kv_sequences);
    }
    caps
}

/// The coarse caps on either side of `centre` (the bracket the best cap
/// lies in when capacity is unimodal in the cap): from the next smaller
/// coarse cap (or 1) to the next larger one (or `centre` itself).
fn bracket(caps: &[u64], centre: u64) -> (u64, u64) {
    let i = caps.iter().position(|&b| b == centre).unwrap_or(0);
    let lo = if i > 0 { caps[i - 1] } else { 1 };
    let hi = caps.get(i + 1).copied().unwrap_or(centre);
    (lo.min(centre), hi.max(centre))
}

/// The integer in `[lo, hi]` where `f` is largest, for `f` unimodal
/// (rising, then falling): golden-section search on the integers (Kiefer,
/// "Sequential minimax search for a maximum", 1953), about
/// log_φ(hi − lo) + 3 evaluations. On a tie it keeps the smaller half.
/// Capacity within the SLO is unimodal in the batch cap — more slots carry
/// more load until their longer iterations break the TTFT/TPOT tail — so
/// this finds the exact best cap where a fixed grid can step over it (a
/// memory-doubled GPU must never get a worse cap than the smaller one).
fn argmax_unimodal(lo: u64, hi: u64, mut f: impl FnMut(u64) -> f64) -> u64 {
    // 1/φ² ≈ 0.382: the golden ratio's interior points.
    const INNER: f64 = 0.381_966_011_250_105;
    let (mut a, mut b) = (lo, hi.max(lo));
    let mut seen: Vec<(u64, f64)> = Vec::new();
    let mut value = |x: u64| match seen.iter().find(|(k, _)| *k == x) {
        Some(&(_, v)) => v,
        None => {
            let v = f(x);
            seen.push((x, v));
            v
        }
    };
    while b - a > 3 {
        let step = (((b - a) as f64) * INNER).round().max(1.0) as u64;
        let (m1, m2) = (a + step, b - step);
        let (m1, m2) = if m1 < m2 { (m1, m2) } else { (m1, m1 + 1) };
        if value(m1) < value(m2) {
            a = m1 + 1;
        } else {
            b = m2 - 1;
        }
    }
    let mut best = a;
    let mut best_value = value(a);
    for x in a + 1..=b {
        let v = value(x);
        if v > best_value {
            (best, best_value) = (x, v);
        }
    }
    best
}

/// Tries every coarse cap, then finds the exact best cap between the
/// neighbours of the coarse cap with the most capacity.
fn best_batch_cap(
    cx: &CapacityContext<'_>,
    dep: &Deployment,
    serving: &ServingChoice,
    memory: &InferenceMemory,
    kv_sequences: u64,
    label: &str,
) -> ReplicaOutcome {
    let most = cap_limit(kv_sequences, cx.workload.max_batched_tokens);
    let caps = coarse_caps(most);
    if caps.is_empty() {
        let r = ReplicaRejection::new(
            RejectReason::DoesNotFit,
            format!(
                "{label}: KV cache holds {} tokens, less than one mean request",
                memory.kv_cache_tokens
            ),
            None,
        );
        return (Err(r), 0);
    }
    let mut search = CapSearch::new(cx.workload);
    for &b in &caps {
        let result = capacity_at_cap(cx, dep, b, search.floor_rps(), label);
        search.record(result);
    }
    let mut evaluated = caps.len();
    // The exact best cap between the best coarse cap's neighbours. Here
    // without the floor shortcut: the search compares capacities, and a
    // cap below the floor has no capacity to compare.
    if let Some(centre) = search.most_capacity.as_ref().map(|c| c.batch) {
        let (lo, hi) = bracket(&caps, centre);
        argmax_unimodal(lo, hi, |b| {
            if b == centre {
                return search
                    .most_capacity
                    .as_ref()
                    .map_or(0.0, |c| c.capacity_rps);
            }
            evaluated += 1;
            let result = capacity_at_cap(cx, dep, b, 0.0, label);
            let capacity = match &result {
                Ok(Some(c)) => c.capacity_rps,
                _ => -1.0,
            };
            search.record(result);
            capacity
        });
    }
    match search.best {
        Some(cap) if cap.capacity_rps > 0.0 => {
            let peak_replicas = peak_replicas(cx, dep, &cap);
            let choice = ReplicaChoice {
                dep: dep.clone(),
                serving: serving.clone(),
                memory: memory.clone(),
                kv_sequences,
                cap,
                peak_replicas,
            };
            (Ok(Box::new(choice)), evaluated)
        }
        _ => {
            let r = search.nearest_miss.unwrap_or_else(|| {
                ReplicaRejection::new(
                    RejectReason::TtftSlo,
                    format!("{label}: no batch size meets the SLO"),
                    None,
                )
            });
            (Err(r), evaluated)
        }
    }
}

/// Share of its capacity a spot replica loses to preemptions: the expected
/// share of time one of its instances is being replaced (at most half).
pub(crate) fn spot_capacity_loss(w: &InferenceWorkload) -> f64 {
    (w.pricing.spot_preemptions_per_hour * w.pricing.spot_replacement_hours).min(0.5)
}

/// The arrival rate each of `replicas` replicas gets at the peak, with the
/// spot capacity `loss` taken out of each.
pub(crate) fn peak_share_rps(w: &InferenceWorkload, replicas: f64, loss: f64) -> f64 {
    w.peak_requests_per_s / replicas / (1.0 - loss).max(0.5)
}

/// Replicas the peak needs at batch cap `cap`, alone and pooled behind the
/// router, on demand and on spot.
fn peak_replicas(cx: &CapacityContext<'_>, dep: &Deployment, cap: &CapChoice) -> PeakReplicas {
    let w = cx.workload;
    let alone = w.peak_requests_per_s / cap.capacity_rps;
    let loss = spot_capacity_loss(w);
    PeakReplicas {
        alone,
        pooled: pooled_replicas(cx, dep, cap, 0.0),
        pooled_spot: if w.constraints.spot {
            pooled_replicas(cx, dep, cap, loss)
        } else {
            alone / (1.0 - loss)
        },
    }
}

/// The fewest replicas whose tails, one of n behind the least-outstanding
/// router (slots pooled, bursts of prompts spread, idle prefill preferred:
/// [`CapacityContext::tail_model_of_one_in`]), meet every SLO and the
/// utilisation cap at their share of the peak: at most the count sized on
/// one replica's own capacity, found by bisection (the tails only improve
/// with more replicas: each gets less load, and the pool grows). Returns the
/// count sized alone (a real number) when pooling saves nothing or the
/// count is beyond [`MAX_REPLICAS`](super::cost::MAX_REPLICAS).
fn pooled_replicas(cx: &CapacityContext<'_>, dep: &Deployment, cap: &CapChoice, loss: f64) -> f64 {
    let w = cx.workload;
    let alone = w.peak_requests_per_s / (cap.capacity_rps * (1.0 - loss));
    if !alone.is_finite() || alone <= 1.0 || alone > super::cost::MAX_REPLICAS as f64 {
        return alone;
    }
    let most = alone.ceil() as u64;
    let ok = |n: u64| {
        let lambda = peak_share_rps(w, n as f64, loss);
        let replicas = u32::try_from(n).unwrap_or(u32::MAX);
        lambda <= cap.max_rps * w.constraints.max_utilization
            && cx.fleet_passes(dep, cap.batch, cap.service_s, replicas, lambda)
    };
    // The smallest n in [1, most − 1] that passes; `most` stands for itself.
    let (mut lo, mut hi) = (1u64, most);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    if hi < most {
        hi as f64
    } else {
        alone
    }
}

/// The best cap so far and the nearest miss among rejected caps.
struct CapSearch {
    /// Peak arrivals and the replica floor: a cap is better when the peak
    /// needs fewer replicas with it, and at the same count when it is faster.
    peak_requests_per_s: f64,
    min_replicas: u32,
    best: Option<CapChoice>,
    /// The cap that carried the most load within the SLO so far.
    most_capacity: Option<CapChoice>,
    nearest_miss: Option<ReplicaRejection>,
}

impl CapSearch {
    fn new(w: &InferenceWorkload) -> Self {
        CapSearch {
            peak_requests_per_s: w.peak_requests_per_s,
            min_replicas: w.constraints.min_replicas,
            best: None,
            most_capacity: None,
            nearest_miss: None,
        }
    }

    /// Replicas the peak needs at this cap's capacity (before filling instances).
    fn replicas(&self, c: &CapChoice) -> f64 {
        (self.peak_requests_per_s / c.capacity_rps)
            .ceil()
            .max(f64::from(self.min_replicas))
    }

    /// The capacity a cap must be able to reach to matter: with less, the
    /// peak needs more replicas than the best cap so far.
    fn floor_rps(&self) -> f64 {
        match &self.best {
            Some(best) => self.peak_requests_per_s / self.replicas(best),
            None => 0.0,
        }
    }

    fn better(&self, a: &CapChoice, b: &CapChoice) -> bool {
        let (ra, rb) = (self.replicas(a), self.replicas(b));
        ra < rb || (ra == rb && a.tpot_at_capacity_ms < b.tpot_at_capacity_ms * (1.0 - 1e-9))
    }

    fn record(&mut self, result: Result<Option<CapChoice>, ReplicaRejection>) {
        match result {
            Ok(None) => {}
            Ok(Some(choice)) => {
                if self
                    .most_capacity
                    .as_ref()
                    .is_none_or(|m| choice.capacity_rps > m.capacity_rps)
                {
                    self.most_capacity = Some(choice.clone());
                }
                if self.best.as_ref().is_none_or(|b| self.better(&choice, b)) {
                    self.best = Some(choice);
                }
            }
            Err(r) => {
                // A TTFT/e2e miss says more than a TPOT miss (a smaller batch fixed TPOT).
                let better = match &self.nearest_miss {
                    None => true,
                    Some(k) if k.reason == RejectReason::TpotSlo && r.reason != k.reason => true,
                    Some(k) if k.reason == r.reason => {
                        r.miss.unwrap_or(f64::INFINITY) < k.miss.unwrap_or(f64::INFINITY)
                    }
                    Some(_) => false,
                };
                if better {
                    self.nearest_miss = Some(r);
                }
            }
        }
    }
}

/// Whether the replica is stable at one arrival rate (its prefill queue
/// does not grow without bound: the tails are finite) and its p99s meet
/// every SLO of the workload.
fn meets_slo(w: &InferenceWorkload, t: &Tails) -> bool {
    let slo = w.slo;
    t.e2e_p99_s.is_finite()
        && slo.ttft_ms_p99.is_none_or(|l| t.ttft_p99_s * 1e3 <= l)
        && slo.tpot_ms_p99.is_none_or(|l| t.tpot_p99_ms <= l)
        && slo.e2e_ms_p99.is_none_or(|l| t.e2e_p99_s * 1e3 <= l)
}

/// Capacity within the SLO and the utilisation cap at one batch cap: the
/// highest arrival rate whose tails ([`crate::tails`]) meet every SLO.
/// `None` when even the cap's throughput bound is below `floor_rps` (it
/// cannot beat the best cap so far).
fn capacity_at_cap(
    cx: &CapacityContext<'_>,
    dep: &Deployment,
    b: u64,
    floor_rps: f64,
    label: &str,
) -> Result<Option<CapChoice>, ReplicaRejection> {
    let w = cx.workload;
    let (i_mean, o_mean) = (w.input_tokens.mean, w.output_tokens.mean);
    let mbt = w.max_batched_tokens as f64;
    let ss = steady_state(dep, i_mean, o_mean, b as f64, mbt);
    let service_s = ss.service_s;
    let model = cx.tail_model(dep, b, service_s);
    // The utilisation cap is a share of what a full batch completes over
    // the workload's length distribution, not at its mean lengths.
    let max_rps = model.saturated_rps().unwrap_or(b as f64 / service_s);
    let ok = |lambda: f64| model.passes(lambda, w.slo.tpot_ms_p99, |t| meets_slo(w, t));
    let hi = max_rps * w.constraints.max_utilization;
    if hi < floor_rps * (1.0 - 1e-9) {
        return Ok(None);
    }
    if !ok(hi * 1e-6) {
        return Err(unloaded_miss(cx, &model.at(hi * 1e-6), b, label));
    }
    // Highest arrival rate within the SLO: bisection (latency grows with load).
    let capacity = if ok(hi) {
        hi
    } else {
        let (mut lo, mut up) = (0.0, hi);
        // 20 halvings: the capacity to 1 part in 10^6.
        for _ in 0..20 {
            let mid = 0.5 * (lo + up);
            if ok(mid) {
                lo = mid;
            } else {
                up = mid;
            }
        }
        lo
    };
    let at_capacity = model.at(capacity);
    Ok(Some(CapChoice {
        batch: b,
        capacity_rps: capacity,
        service_s,
        max_rps,
        tpot_at_capacity_ms: at_capacity.tpot_p99_ms,
        iteration_full_s: ss.iteration_s,
        prefill_bound: ss.prefill_bound,
        decode_bound: ss.decode_bound,
    }))
}

/// The rejection when even an almost idle replica misses an SLO: the first
/// SLO it misses, with how close it came.
fn unloaded_miss(cx: &CapacityContext<'_>, t: &Tails, b: u64, label: &str) -> ReplicaRejection {
    let slo = cx.workload.slo;
    let (ttft, tpot, e2e) = (t.ttft_p99_s * 1e3, t.tpot_p99_ms, t.e2e_p99_s * 1e3);
    if let Some(limit) = slo.tpot_ms_p99.filter(|l| tpot > *l) {
        return ReplicaRejection::new(
            RejectReason::TpotSlo,
            format!("{label}: TPOT p99 {tpot:.1} ms at batch cap {b} > {limit} ms"),
            Some(tpot),
        );
    }
    if let Some(limit) = slo.ttft_ms_p99.filter(|l| ttft > *l) {
        return ReplicaRejection::new(
            RejectReason::TtftSlo,
            format!("{label}: p99 prompt alone takes {ttft:.0} ms to prefill > {limit} ms"),
            Some(ttft),
        );
    }
    ReplicaRejection::new(
        RejectReason::E2eSlo,
        format!(
            "{label}: p99 request takes {e2e:.0} ms > {} ms",
            slo.e2e_ms_p99.unwrap_or(0.0)
        ),
        Some(e2e),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracket_is_the_neighbouring_coarse_caps() {
        let caps = [8, 16, 32, 64, 128, 256, 300];
        assert_eq!(bracket(&caps, 64), (32, 128));
        assert_eq!(bracket(&caps, 8), (1, 16));
        assert_eq!(bracket(&caps, 300), (256, 300));
        assert_eq!(bracket(&[5], 5), (1, 5));
    }

    #[test]
    fn golden_section_finds_the_exact_mode() {
        // Every mode in a range, with a flat and a steep side, and plateaus of
        // "rejected" (-1) caps past a cliff as a TPOT limit gives.
        for (lo, hi) in [(1, 16), (32, 128), (64, 256), (512, 1024), (7, 9), (5, 5)] {
            for mode in lo..=hi {
                let mut calls = 0;
                let f = |x: u64| {
                    calls += 1;
                    let d = x as f64 - mode as f64;
                    if d <= 0.0 {
                        100.0 + d * 0.01
                    } else if x > mode + 10 {
                        -1.0
                    } else {
                        100.0 - d * 3.0
                    }
                };
                assert_eq!(argmax_unimodal(lo, hi, f), mode, "[{lo}, {hi}] mode {mode}");
                // log_φ(range) + a handful, not a scan.
                let range = (hi - lo + 1) as f64;
                assert!(
                    f64::from(calls) <= range.ln() / 1.618_f64.ln() + 6.0,
                    "{calls} calls"
                );
            }
        }
    }

    #[test]
    fn coarse_caps_include_the_kv_limit() {
        assert_eq!(coarse_caps(40), vec![8, 16, 32, 40]);
        assert_eq!(coarse_caps(5), vec![5]);
        assert!(coarse_caps(0).is_empty());
        assert_eq!(coarse_caps(5000).len(), BATCH_CAPS.len());
    }
}
