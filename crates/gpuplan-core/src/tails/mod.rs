//! Tail latencies of one continuous-batching replica under load.
//!
//! A replica is two queues in series, both fed by the same arrivals:
//! 1. **batch slots** — a request waits for one of the `max_num_seqs` slots
//!    (G/G/c: Hayward's Erlang C at the peakedness of the traffic,
//!    [`crate::queueing::wait_probability_peaked`]; behind the router the
//!    slots of all replicas form one pool; the occupancy swings more than
//!    the arrivals alone make it, as every sequence in flight and every
//!    prompt stretches the others' stays). A wait, once it happens, drains
//!    at a full batch's departure rate, solved with the prompts admitted at
//!    that rate, and is exponential with Köllerström's heavy-traffic scale;
//! 2. **prefill** — admitted prompts are prefilled first-come first-served
//!    out of each iteration's token budget (`max_batched_tokens` less the
//!    decodes), so prompts queue for prefill compute even when slots are
//!    free. This is a G/G/1 queue whose work per request is its prompt
//!    length × the time one prefill token adds to an iteration (plus its
//!    share of the iteration's fixed part); a prompt waits with probability
//!    `ρ`, and then for an exponential time of Allen–Cunneen's conditional
//!    mean `(c_a² + c_s²)/2 · E[S]/(1−ρ)`, c_a² being the burstiness of the
//!    prompts this replica gets from the router: its 1/n turn of the fleet's
//!    stream (c_a²/n) plus what the arrivals that replace its own
//!    departures add;
//! 3. **its own iteration** — a prompt's first token comes at the end of the
//!    iteration that prefills it, and that iteration also carries the
//!    prompts that arrived after it while the previous one ran: λ·t̄/2 on
//!    average, plus the (c_a² − 1)/2 extra a bursty stream brings right
//!    after an arrival (the renewal function m(t) ≈ λt + (c_a² − 1)/2),
//!    and the prompts that queued behind it while it waited for prefill
//!    (the scheduler fills each budget from the queue's head).
//!
//! Under Poisson traffic a request waits for a slot or for prefill, seldom
//! both: the waits' p99 is their mixture's. A bursty stream couples them:
//! the clump that fills the slots fills the prefill queue too, so a share
//! (c_a² − 1)/c_a² of the slot waiters, less in heavy traffic where the
//! departures pace admissions, waits out both as one exponential.
//!
//! Decoding streams share every iteration with the prompts being prefilled:
//! a request's time per output token is the decode-only iteration time plus
//! the prefill work that arrives during its life, spread over its tokens.
//! That work is compound-renewal (arrivals × prompt lengths), so its spread
//! grows with burstiness (c_a²) and prompt-length variability (c_I²), and
//! the sequences in flight swing with the occupancy's peakedness; the p99
//! is the skewed normal quantile of that sum (`tpot.rs`). An inter-token gap
//! is one iteration: long when it carries a prompt chunk.
//!
//! Files: `slots.rs` (the occupancy and the slot queue), `prefill.rs` (the
//! prefill queue and the router), `tpot.rs` (the TPOT tail),
//! `distributions.rs` (the special functions they use).

mod distributions;
mod prefill;
mod slots;
mod tpot;

use distributions::gamma_p;
pub(crate) use distributions::normal_tail;
pub use distributions::{lognormal_cv2, lognormal_quantile};
use prefill::PrefillWait;
use tpot::DecodePace;

use crate::perf::{Deployment, IterationWork};
use crate::queueing::WaitSummary;
use crate::serving::prefill_under_load_s;

/// The request mix and engine limits a replica serves.
#[derive(Debug, Clone, Copy)]
pub struct TailInputs {
    /// Mean and p99 prompt tokens.
    pub input_mean: f64,
    /// See `input_mean`.
    pub input_p99: f64,
    /// Mean and p99 output tokens.
    pub output_mean: f64,
    /// See `output_mean`.
    pub output_p99: f64,
    /// Engine batch cap (`--max-num-seqs`).
    pub batch: f64,
    /// Engine token budget per iteration (`--max-num-batched-tokens`).
    pub max_batched_tokens: f64,
    /// Mean time a request holds a batch slot at a full batch, s.
    pub service_s: f64,
    /// Squared coefficient of variation of inter-arrival times (1 = Poisson).
    pub ca2: f64,
    /// Replicas whose batch slots form one pool behind the router (1: the
    /// replica alone). A request waits for a slot only when all are full.
    pub slot_pool_replicas: f64,
    /// Squared coefficient of variation of output lengths: a slot's
    /// service time varies as much over its decode share.
    pub cs2: f64,
}

/// Latency percentiles of a replica at one arrival rate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tails {
    /// Probability that an arrival finds every batch slot busy (G/G/c).
    pub slot_wait_probability: f64,
    /// p99 wait for a batch slot, s.
    pub slot_wait_p99_s: f64,
    /// Mean and p99 wait for prefill compute once admitted, s.
    pub prefill_wait_mean_s: f64,
    /// See `prefill_wait_mean_s`.
    pub prefill_wait_p99_s: f64,
    /// Share of the GPU's time spent on prefill work.
    pub prefill_utilization: f64,
    /// Prefill of the mean and the p99 prompt beside the decodes, s.
    pub prefill_mean_s: f64,
    /// See `prefill_mean_s`.
    pub prefill_p99_s: f64,
    /// What the prompts batched with a prompt add to its own iteration, s.
    pub co_batched_prefill_s: f64,
    /// p99 time to first token, s.
    pub ttft_p99_s: f64,
    /// Mean iteration time (= mean time per output token), ms.
    pub tpot_mean_ms: f64,
    /// p99 over requests of the mean time per output token, ms.
    pub tpot_p99_ms: f64,
    /// p99 gap between two tokens of a stream, ms.
    pub itl_p99_ms: f64,
    /// p99 end-to-end latency, s.
    pub e2e_p99_s: f64,
}

/// Iteration times of a replica at one load.
#[derive(Debug, Clone, Copy)]
struct Load {
    /// Decode-only iteration, s.
    t0: f64,
    /// Prompt tokens an iteration may carry beside its decodes.
    budget: f64,
    /// Time one prompt token adds to an iteration, s.
    per_token_s: f64,
    /// The same in an iteration whose prompt tokens fill the budget, as when
    /// prompts are backlogged, s.
    backlog_per_token_s: f64,
    /// Mean iteration (= mean time per output token), s.
    tpot_mean_s: f64,
}

/// Tails of one replica configuration as a function of its arrival rate.
#[derive(Debug, Clone)]
pub struct TailModel<'a> {
    dep: &'a Deployment,
    inputs: TailInputs,
    input_cv2: f64,
    /// Mean KV context of a sequence in flight, tokens: its prompt plus
    /// half its output, length-biased (a sequence is in flight in
    /// proportion to its output length, so the mean of E[L²]/2E[L] =
    /// mean·(1 + c_v²)/2 — the inspection paradox).
    context_in_flight: f64,
    /// Decode iterations (output − 1) at the mid-quantiles of the output-length
    /// distribution (lognormal fitted to mean and p99).
    output_lives: [f64; OUTPUT_POINTS],
    /// Mean of `output_lives`, and the mean of the shorter of two
    /// independent draws, E[min(L₁, L₂)] = ∫ P(L > t)² dt (for the
    /// peakedness of the slots' occupancy).
    output_lives_mean: f64,
    /// See `output_lives_mean`.
    output_lives_min_pair_mean: f64,
    /// Per point of `output_lives`, the iterations another request decodes
    /// beside it when it starts at a uniform point of that life: the mean
    /// over the other lives L' of E[min(U·L, L')] (L/2 when L' ≥ L, else
    /// L' − L'²/2L).
    output_overlaps: [f64; OUTPUT_POINTS],
}

/// Points of the output-length distribution the TPOT tail is averaged over.
const OUTPUT_POINTS: usize = 24;

/// Mean prompts per iteration up to which [`TailModel::arrivals_per_token_s`]
/// sums the Poisson count term by term; beyond, the count is near normal
/// and three points price it.
const POISSON_CHUNK_TERMS_UP_TO: f64 = 16.0;

impl<'a> TailModel<'a> {
    /// The model for `dep` serving `inputs`.
    pub fn new(dep: &'a Deployment, inputs: TailInputs) -> Self {
        let output_cv2 = lognormal_cv2(inputs.output_mean, inputs.output_p99);
        let output_lives = std::array::from_fn(|k| {
            let q = (k as f64 + 0.5) / OUTPUT_POINTS as f64;
            (lognormal_quantile(inputs.output_mean, output_cv2, q) - 1.0).max(1.0)
        });
        let n = OUTPUT_POINTS as f64;
        let output_lives_mean = output_lives.iter().sum::<f64>() / n;
        let output_lives_min_pair_mean = output_lives
            .iter()
            .map(|a| output_lives.iter().map(|b| a.min(*b)).sum::<f64>())
            .sum::<f64>()
            / (n * n);
        let output_overlaps = std::array::from_fn(|k| {
            let life = output_lives[k];
            output_lives
                .iter()
                .map(|&other| {
                    if other >= life {
                        life / 2.0
                    } else {
                        other - other * other / (2.0 * life)
                    }
                })
                .sum::<f64>()
                / n
        });
        TailModel {
            dep,
            inputs,
            output_lives_mean,
            output_lives_min_pair_mean,
            output_overlaps,
            input_cv2: lognormal_cv2(inputs.input_mean, inputs.input_p99),
            context_in_flight: inputs.input_mean + inputs.output_mean * (1.0 + output_cv2) / 2.0,
            output_lives,
        }
    }

    /// Iteration time (all pipeline stages) with `decodes` sequences decoding
    /// and `prefill` prompt tokens, s.
    fn iteration_s(&self, decodes: f64, prefill: f64) -> f64 {
        // a chunk of p tokens of a prompt attends to about p²/2 pairs
        self.iteration_with_prefill_s(decodes, prefill, prefill * prefill / 2.0)
    }

    /// [`Self::iteration_s`] with the prompt tokens' attention pairs given.
    fn iteration_with_prefill_s(&self, decodes: f64, prefill: f64, pairs: f64) -> f64 {
        let pp = f64::from(self.dep.layout.pp);
        let per_stage = decodes / pp;
        let cost = self.dep.iteration(&IterationWork {
            decode_seqs: per_stage,
            decode_context_sum: per_stage * self.context_in_flight,
            prefill_tokens: prefill,
            prefill_attention_pairs: pairs,
            logit_tokens: per_stage + if prefill > 0.0 { 1.0 } else { 0.0 },
        });
        pp * cost.total_s
    }

    /// The iteration times of a replica with `in_flight` sequences at
    /// `lambda` requests/s.
    fn load(&self, lambda: f64, in_flight: f64) -> Load {
        let i = &self.inputs;
        let pp = f64::from(self.dep.layout.pp);
        // Decode-only iteration, and what each prefill token adds to it.
        let t0 = self.iteration_s(in_flight, 0.0);
        let budget = (i.max_batched_tokens - in_flight / pp)
            .max(i.max_batched_tokens * 0.1)
            .max(1.0);
        // What a prefill token costs, measured over the chunks the arrivals
        // at this rate make (whole prompts, at most the budget): the fixed
        // part of adding prefill to a decode step is shared by every prompt
        // in it. Priced over a single short prompt it would make a lighter
        // load look costlier than a heavier one (fewer requests per replica
        // must never be worse).
        let per_token_s = self.arrivals_per_token_s(lambda, in_flight, t0, budget);
        let backlog_per_token_s = self.prefill_per_token_s(in_flight, budget, t0);
        // Mean iteration: t = t0 + (prompt tokens arriving per iteration) × per-token cost.
        let prefill_share = (per_token_s * lambda * i.input_mean).min(0.99);
        Load {
            t0,
            budget,
            per_token_s,
            backlog_per_token_s,
            tpot_mean_s: t0 / (1.0 - prefill_share),
        }
    }

    /// What a prompt token adds to a decode iteration of `t0` s, averaged
    /// over the chunks the arrivals make, s. An iteration prefills the k
    /// prompts that arrived during the one before, k Poisson with mean
    /// m = λ·t0 (at least one: an iteration without prompts adds nothing),
    /// and a token's cost depends on its chunk: the fixed part of adding
    /// prefill to a decode step is shared by every prompt in it, and a thin
    /// chunk rides on a memory-bound step where a thick one pays full
    /// compute. So the mean is the token-weighted Σ P(k)·k·c(k·I) / Σ P(k)·k,
    /// not the cost of the mean chunk (Jensen: c is not linear in k).
    fn arrivals_per_token_s(&self, lambda: f64, in_flight: f64, t0: f64, budget: f64) -> f64 {
        let prompt = self.inputs.input_mean.max(1.0);
        let mean_prompts = lambda * t0;
        let at = |prompts: f64| {
            self.prefill_per_token_s(in_flight, (prompts * prompt).min(budget).max(1.0), t0)
        };
        // Weights k·P(k) with P Poisson(m): exact for few prompts; for many,
        // three-point Gauss–Hermite over the normal limit N(m, m).
        let (mut weighted, mut weight) = (0.0, 0.0);
        if mean_prompts >= POISSON_CHUNK_TERMS_UP_TO {
            let spread = (3.0 * mean_prompts).sqrt();
            for (prompts, p) in [
                (mean_prompts - spread, 1.0 / 6.0),
                (mean_prompts, 2.0 / 3.0),
                (mean_prompts + spread, 1.0 / 6.0),
            ] {
                weighted += p * prompts * at(prompts);
                weight += p * prompts;
            }
        } else {
            let mut p = (-mean_prompts).exp();
            let mut k = 0.0;
            while k < 4.0 * POISSON_CHUNK_TERMS_UP_TO {
                k += 1.0;
                p *= mean_prompts / k;
                weighted += k * p * at(k);
                weight += k * p;
                if k > mean_prompts && k * p < 1e-4 * weight {
                    break;
                }
            }
        }
        if weight > 0.0 {
            weighted / weight
        } else {
            at(1.0)
        }
    }

    /// Prompt tokens an iteration of `t0` s carries at `lambda` requests/s
    /// (λ·I·t0), at least one whole prompt.
    fn arrivals_chunk(&self, lambda: f64, t0: f64) -> f64 {
        (lambda * self.inputs.input_mean * t0).max(self.inputs.input_mean)
    }

    /// The mean time per output token when the admitted prompts come in
    /// clumps (`ca2` > 1), s. A prompt is prefilled together with the other
    /// prompts of its clump, e more than a Poisson stream brings within one
    /// iteration (the renewal excess,
    /// [`distributions::renewal_excess_up_to`]), so its tokens are priced in
    /// that bigger chunk, where they cost their full compute rather than
    /// the margin one thin chunk adds to a memory-bound decode step. The
    /// same mean as [`Load::tpot_mean_s`] for Poisson or smoother traffic.
    fn clumped_tpot_mean_s(&self, lambda: f64, load: &Load, in_flight: f64, ca2: f64) -> f64 {
        let i = &self.inputs;
        let t0 = load.t0;
        // Past a full budget the chunk stops growing: stop counting there.
        let at_most = load.budget / i.input_mean.max(1.0);
        let clump = distributions::renewal_excess_up_to(ca2, lambda * t0, at_most);
        if clump <= 0.0 {
            return load.tpot_mean_s;
        }
        let chunk = (self.arrivals_chunk(lambda, t0) + clump * i.input_mean)
            .min(load.budget)
            .max(1.0);
        let per_token_s = self.prefill_per_token_s(in_flight, chunk, t0);
        let prefill_share = (per_token_s * lambda * i.input_mean).min(0.99);
        (t0 / (1.0 - prefill_share)).max(load.tpot_mean_s)
    }

    /// Time each of `chunk` prompt tokens adds to a decode iteration of
    /// `t0` s, s. Each token of a prompt of I tokens attends causally to
    /// I/2 earlier ones on average, however the prompt is chunked (a chunk
    /// of c tokens after p cached ones attends to c·p + c²/2 pairs; the
    /// chunks sum to I²/2), and tokens come from prompts in proportion to
    /// their length: E[I²]/2E[I] = mean·(1 + c_v²)/2 pairs per token.
    fn prefill_per_token_s(&self, in_flight: f64, chunk: f64, t0: f64) -> f64 {
        let length_biased_prompt = self.inputs.input_mean.max(1.0) * (1.0 + self.input_cv2);
        let pairs = chunk * length_biased_prompt / 2.0;
        ((self.iteration_with_prefill_s(in_flight, chunk, pairs) - t0) / chunk).max(0.0)
    }

    /// Tails at `lambda` requests/s to this replica.
    pub fn at(&self, lambda: f64) -> Tails {
        self.at_with(lambda, true)
    }

    /// [`Self::at`], skipping the TPOT tail (its bisection over the
    /// output-length mixture is the costly part) when `tpot_tail` is false:
    /// `tpot_p99_ms` is then the mean. The capacity search asks for it only
    /// when the workload has a TPOT SLO.
    pub fn at_with(&self, lambda: f64, tpot_tail: bool) -> Tails {
        let (mut tails, pace) = self.at_without_tpot_tail(lambda);
        if let (true, Some(pace)) = (tpot_tail, pace) {
            self.add_tpot_tail(lambda, &mut tails, pace);
        }
        tails
    }

    /// Whether the tails at `lambda` pass `accept` and the p99 TPOT is at
    /// most `tpot_limit_ms` (when given). The costly TPOT tail is checked
    /// only when everything else passes (the p99 TPOT is at least its mean,
    /// so a miss with the mean in its place is a miss), and as one test of
    /// the limit rather than a search for the p99. The same answer as
    /// `accept(&self.at_with(lambda, true))` when `accept` checks the limit.
    pub fn passes(
        &self,
        lambda: f64,
        tpot_limit_ms: Option<f64>,
        accept: impl Fn(&Tails) -> bool,
    ) -> bool {
        let (tails, pace) = self.at_without_tpot_tail(lambda);
        if !accept(&tails) {
            return false;
        }
        match (tpot_limit_ms, pace) {
            (Some(limit_ms), Some(pace)) => {
                limit_ms * 1e-3 >= pace.tpot_mean_s
                    && !self.tpot_tail(lambda, pace).exceeds(limit_ms * 1e-3)
            }
            _ => true,
        }
    }

    /// Sets the p99 TPOT of `tails` from the decode pace.
    fn add_tpot_tail(&self, lambda: f64, tails: &mut Tails, pace: DecodePace) {
        tails.tpot_p99_ms = self.tpot_tail(lambda, pace).p99_s() * 1e3;
    }

    /// The tails with the mean TPOT as its p99, and the decode pace the TPOT
    /// tail needs (`None` when the prefill queue is unstable: every tail is
    /// infinite).
    fn at_without_tpot_tail(&self, lambda: f64) -> (Tails, Option<DecodePace>) {
        let i = &self.inputs;
        let occupancy = self.occupancy(lambda);
        let load = occupancy.load;
        let slot_wait = self.slot_wait(lambda, &occupancy);
        let prefill_mean_s = self.prefill_beside_decodes_s(i.input_mean, occupancy.in_flight);
        let prefill_p99_s = self
            .prefill_beside_decodes_s(i.input_p99, occupancy.in_flight)
            .max(prefill_mean_s);
        let Some(prefill_wait) = self.prefill_wait(lambda, &load) else {
            let unstable = Tails {
                slot_wait_probability: slot_wait.probability,
                slot_wait_p99_s: slot_wait.quantile_s,
                prefill_utilization: self.prefill_utilization(lambda, &load),
                prefill_wait_mean_s: f64::INFINITY,
                prefill_wait_p99_s: f64::INFINITY,
                prefill_mean_s,
                prefill_p99_s,
                co_batched_prefill_s: f64::INFINITY,
                ttft_p99_s: f64::INFINITY,
                tpot_mean_ms: f64::INFINITY,
                tpot_p99_ms: f64::INFINITY,
                itl_p99_ms: f64::INFINITY,
                e2e_p99_s: f64::INFINITY,
            };
            return (unstable, None);
        };
        let prefill = (prefill_mean_s, prefill_p99_s);
        let (ttft_p99_s, co_batched_s) =
            self.ttft_p99_s(lambda, &load, &slot_wait, &prefill_wait, prefill);
        // The prompts this replica gets from the router (which spreads
        // bursts over the replicas, [`Self::prefill_ca2`]) enter the batch
        // as slots free up: while they queue for a slot (probability
        // P(wait)) they are admitted at the pace of departures, not in the
        // arrivals' bursts.
        let admitted_ca2 = 1.0 + (self.prefill_ca2() - 1.0) * (1.0 - slot_wait.probability);
        let tpot_mean_s =
            self.clumped_tpot_mean_s(lambda, &load, occupancy.in_flight, admitted_ca2);
        let tails = Tails {
            slot_wait_probability: slot_wait.probability,
            slot_wait_p99_s: slot_wait.quantile_s,
            prefill_wait_mean_s: prefill_wait.mean_s,
            prefill_wait_p99_s: prefill_wait.p99_s,
            prefill_utilization: prefill_wait.utilization,
            prefill_mean_s,
            prefill_p99_s,
            co_batched_prefill_s: co_batched_s,
            ttft_p99_s,
            tpot_mean_ms: tpot_mean_s * 1e3,
            tpot_p99_ms: tpot_mean_s * 1e3,
            itl_p99_ms: self.itl_p99_s(lambda, &load) * 1e3,
            // The p99 request: a p99 TTFT and p99 output at the mean pace.
            e2e_p99_s: ttft_p99_s + (i.output_p99 - 1.0).max(0.0) * tpot_mean_s,
        };
        let pace = DecodePace {
            tpot_mean_s,
            // The prompt work beyond the mean comes in bursts and is
            // prefilled in budget-full iterations, where each token costs
            // its full compute (not the margin a thin chunk adds to a
            // memory-bound decode step).
            per_token_s: load.backlog_per_token_s,
            in_flight: occupancy.in_flight,
            // Over a request's life the router evens out the Poisson part of
            // the counts ([`Self::router_count_smoothing`]); while slots are
            // full, departures pace admissions anyway.
            admitted_ca2: (admitted_ca2
                - self.router_count_smoothing() * (1.0 - slot_wait.probability))
                .max(0.05),
            occupancy_peakedness: self.occupancy_swing(&occupancy),
            batch: i.batch,
            slot_wait_probability: slot_wait.probability,
        };
        (tails, Some(pace))
    }

    /// TTFT p99 and the mean time the prompts batched with a prompt add,
    /// s: the boundary, the waits, the prompt's own prefill (`prefill`: mean
    /// and p99) and the prompts batched with it.
    fn ttft_p99_s(
        &self,
        lambda: f64,
        load: &Load,
        slot_wait: &WaitSummary,
        prefill_wait: &PrefillWait,
        (prefill_mean_s, prefill_p99_s): (f64, f64),
    ) -> (f64, f64) {
        // An arrival first waits for the iteration in progress to end (the
        // engine schedules at iteration boundaries): uniform over one
        // iteration, mean t/2, p99 ≈ t.
        let boundary_mean_s = 0.5 * load.tpot_mean_s;
        // TTFT = boundary + slot wait + prefill wait + own prefill + the
        // prompts batched with it: means add, and the spreads above the means
        // combine as independent (in quadrature).
        let co_batched_s = self.co_batched_prefill_s(lambda, load);
        let co_batched_p99_s =
            self.co_batched_time_s(self.co_batched_prompts_p99(lambda, load), load);
        let (wait_mean_s, wait_p99_s) = self.waits_mean_and_p99_s(slot_wait, prefill_wait);
        // One burst queues the prompts and crowds their iteration at once:
        // the waits and the prompts batched along rise together
        // ([`burst_spread`]).
        // The prompts that arrive while it waits ride in its iteration.
        let riders_s = self.riders_s(lambda, load, prefill_wait, wait_p99_s - wait_mean_s);
        let burst_s = burst_spread(
            self.prefill_ca2(),
            (wait_p99_s - wait_mean_s).max(0.0) + riders_s,
            (co_batched_p99_s - co_batched_s).max(0.0),
        );
        let spread =
            (burst_s.powi(2) + (prefill_p99_s - prefill_mean_s).powi(2) + boundary_mean_s.powi(2))
                .sqrt();
        (
            boundary_mean_s + wait_mean_s + prefill_mean_s + co_batched_s + spread,
            co_batched_s,
        )
    }

    /// Mean and p99 of the slot wait and the prefill wait together, s. The
    /// waits share the 1 %: a slot wait too rare to set a p99 of its own
    /// (P < 1 %) still moves the p99 of both, and a bursty stream couples
    /// them. An arrival that finds every slot busy came with a clump, and the
    /// same clump fills the prefill queue it joins once admitted: both waits
    /// grow with the clump's size, so for such a request they add up as one
    /// exponential of mean m_slot + m_prefill (comonotone), not as
    /// independent parts. Its share among slot waiters is the burst
    /// correlation r = (c_a² − 1)/c_a² ([`burst_correlation`]) times the
    /// chance that the slot wait ends before its clump's prompts have
    /// drained from the prefill queue, 1 − e^(−m_prefill/m_slot) for an
    /// exponential slot wait: a request that waits longer is admitted one
    /// departure at a time, after its clump-mates were prefilled, and finds
    /// no prefill queue (at 1,500/100 tokens, c_a 4, 80% load on one H100
    /// the simulator's p99 TTFT is its queueing p99 plus 43 ms). Poisson
    /// or smoother arrivals (r = 0) keep the mixture
    /// P(W > t) = P_slot·e^(−t/m_slot) + P(prefill wait > t).
    fn waits_mean_and_p99_s(
        &self,
        slot_wait: &WaitSummary,
        prefill_wait: &PrefillWait,
    ) -> (f64, f64) {
        let slot_conditional_s = (slot_wait.mean_s / slot_wait.probability.max(1e-12)).max(1e-12);
        let coupled_conditional_s = slot_conditional_s + prefill_wait.queue_conditional_mean_s;
        let coupled = burst_correlation(self.prefill_ca2())
            * (1.0 - (-prefill_wait.queue_conditional_mean_s / slot_conditional_s).exp());
        let wait_exceeds = |t: f64| {
            slot_wait.probability
                * ((1.0 - coupled) * (-t / slot_conditional_s).exp()
                    + coupled * (-t / coupled_conditional_s).exp())
                + prefill_wait.exceeds(t)
        };
        let mean_s = slot_wait.mean_s
            + prefill_wait.mean_s
            + coupled * slot_wait.probability * prefill_wait.queue_conditional_mean_s;
        let p99_s = wait_quantile(
            wait_exceeds,
            0.99,
            coupled_conditional_s + prefill_wait.p99_s,
        );
        (mean_s, p99_s)
    }

    /// Prefill of a `prompt`-token prompt beside `in_flight` decodes, s.
    fn prefill_beside_decodes_s(&self, prompt: f64, in_flight: f64) -> f64 {
        let i = &self.inputs;
        prefill_under_load_s(
            self.dep,
            prompt,
            i.input_mean,
            i.output_mean,
            in_flight,
            i.max_batched_tokens,
        )
    }

    /// Time the prompts that share a prompt's prefill iteration add to it,
    /// s. The engine schedules at iteration boundaries, so the iteration
    /// that prefills a prompt also carries the prompts that arrived after
    /// it while the previous one ran: λ·t̄/2 on average, plus, for a bursty
    /// stream, the (c_a² − 1)/2 extra arrivals that follow an arrival (the
    /// renewal function m(t) ≈ λt + (c_a² − 1)/2; Cox, "Renewal Theory",
    /// 1962) — at most what the iteration's budget leaves beside the prompt.
    fn co_batched_prefill_s(&self, lambda: f64, load: &Load) -> f64 {
        self.co_batched_time_s(self.co_batched_prompts(lambda, load), load)
    }

    /// The mean count behind [`Self::co_batched_prefill_s`].
    fn co_batched_prompts(&self, lambda: f64, load: &Load) -> f64 {
        (lambda * load.tpot_mean_s / 2.0 + (self.prefill_ca2() - 1.0) / 2.0).max(0.0)
    }

    /// Time the prompts that arrive while a prompt waits for prefill add to
    /// the iteration that prefills it, s, at the p99 wait (`wait_excess_s`
    /// above the mean). They queue behind it, and the scheduler fills each
    /// budget from the queue's head, so as many as the budget leaves room
    /// for ride along: λ per s over the prefill part of the wait. Under
    /// bursts the co-batched spread, which rises with the wait (correlation
    /// r, [`burst_spread`]), already holds them, so they count with weight
    /// 1 − r.
    fn riders_s(
        &self,
        lambda: f64,
        load: &Load,
        prefill_wait: &PrefillWait,
        wait_excess_s: f64,
    ) -> f64 {
        let prefill_excess_s = wait_excess_s
            .min(prefill_wait.p99_s - prefill_wait.mean_s)
            .max(0.0);
        let uncorrelated = 1.0 - burst_correlation(self.prefill_ca2());
        let ahead = self.co_batched_prompts(lambda, load);
        let added_s = self.co_batched_time_s(ahead + lambda * prefill_excess_s, load)
            - self.co_batched_time_s(ahead, load);
        uncorrelated * added_s
    }

    /// Time `prompts` prompts of the mean length add to a prompt's
    /// iteration, at most what its budget leaves beside the prompt, s.
    fn co_batched_time_s(&self, prompts: f64, load: &Load) -> f64 {
        let i = &self.inputs;
        (prompts * i.input_mean).min((load.budget - i.input_mean).max(0.0)) * load.per_token_s
    }

    /// The 99th percentile of the prompts that arrive after a prompt and
    /// before the next iteration boundary (so share its prefill iteration).
    /// The replica's prompts arrive as a gamma renewal stream of rate λ and
    /// the stream's c_a² (shape k = 1/c_a²); the boundary comes a uniform
    /// time w ∈ (0, t̄) later, and j more prompts arrive by then exactly when
    /// the sum of j gaps, a gamma of shape j·k and rate λk, is at most w:
    /// P(N ≥ j) = E_w[P(jk, λk·w)] (regularized incomplete gamma). Poisson
    /// arrivals give the Poisson tail; bursty ones a clump whose size is the
    /// tail of the renewal count, not its mean.
    fn co_batched_prompts_p99(&self, lambda: f64, load: &Load) -> f64 {
        const WINDOW_POINTS: usize = 8;
        let i = &self.inputs;
        let shape = 1.0 / self.prefill_ca2().max(1e-3);
        // Beyond this many prompts the budget is full: more cannot add time.
        let fill = ((load.budget - i.input_mean).max(0.0) / i.input_mean.max(1.0)).ceil();
        let mut j = 0.0;
        while j < fill.min(10_000.0) {
            let next = j + 1.0;
            let at_least = (0..WINDOW_POINTS)
                .map(|m| {
                    let w = load.tpot_mean_s * (m as f64 + 0.5) / WINDOW_POINTS as f64;
                    gamma_p(next * shape, lambda * shape * w)
                })
                .sum::<f64>()
                / WINDOW_POINTS as f64;
            if at_least <= 0.01 {
                break;
            }
            j = next;
        }
        j
    }

    /// The p99 gap between two tokens, s. A share of iterations carries a
    /// prompt chunk; the p99 gap is an iteration whose chunk is at the
    /// (1 − 1 %/share) quantile of prompts.
    fn itl_p99_s(&self, lambda: f64, load: &Load) -> f64 {
        let i = &self.inputs;
        let chunks_per_prompt = (i.input_mean / load.budget).ceil();
        let with_prefill = (lambda * chunks_per_prompt * load.tpot_mean_s).min(1.0);
        let gap_s = if with_prefill > 0.01 {
            let q = 1.0 - 0.01 / with_prefill;
            let chunk = lognormal_quantile(i.input_mean, self.input_cv2, q).min(load.budget);
            load.t0 + load.per_token_s * chunk
        } else {
            load.t0
        };
        gap_s.max(load.tpot_mean_s)
    }
}

/// The spread above their means of the waits and of the prompts batched
/// with a prompt, which one burst raises together: correlated by
/// r = (c_a² − 1)/c_a² (the share of the arrival count's variance that
/// clumping adds over Poisson; 0 for Poisson or smoother). The waits count
/// as their joint mixture's p99 excess (`waits_s`) even in a burst: a
/// request waits for a slot or for prefill, seldom both — the prompts a
/// burst admits queue for prefill at once, and those left waiting for a
/// slot are admitted one by one as slots free up, long after that backlog
/// has cleared. The co-batched excess `co_batched_s` joins the waits with
/// correlation r.
fn burst_spread(ca2: f64, waits_s: f64, co_batched_s: f64) -> f64 {
    let r = burst_correlation(ca2);
    (waits_s * waits_s + co_batched_s * co_batched_s + 2.0 * r * waits_s * co_batched_s).sqrt()
}

/// The correlation r = (c_a² − 1)/c_a² of [`burst_spread`].
fn burst_correlation(ca2: f64) -> f64 {
    ((ca2 - 1.0) / ca2).clamp(0.0, 1.0)
}

/// The smallest t with `exceeds(t)` ≤ 1 − q (bisection; `exceeds` falls
/// with t), 0 when waiting at all is rarer than that; `hi` bounds it.
fn wait_quantile(exceeds: impl Fn(f64) -> f64, q: f64, hi: f64) -> f64 {
    let tail = 1.0 - q;
    if exceeds(0.0) <= tail {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0, hi.max(1e-9));
    while exceeds(hi) > tail && hi < 1e7 {
        hi *= 2.0;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if exceeds(mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests;
