//! The batch slots: how many sequences a replica holds at one arrival rate,
//! how much that count swings, and how long a request waits for a free slot
//! (G/G/c at the traffic's peakedness, drained at a full batch's departure
//! rate).

use super::{Load, TailModel};
use crate::queueing::{wait_probability_peaked, WaitSummary};

impl TailModel<'_> {
    /// Little's law: sequences in flight = arrivals × slot time, and the
    /// slot time (prefill + output tokens at the mean pace) depends on how
    /// many are in flight: a short fixed-point iteration from a full batch.
    pub(super) fn occupancy(&self, lambda: f64) -> Occupancy {
        let i = &self.inputs;
        let mut in_flight = (lambda * i.service_s).clamp(1.0, i.batch);
        let mut slot_s = i.service_s;
        let mut slot_prefill_s = 0.0;
        let mut load = self.load(lambda, in_flight);
        for _ in 0..3 {
            slot_prefill_s = self.prefill_beside_decodes_s(i.input_mean, in_flight);
            slot_s = slot_prefill_s + (i.output_mean - 1.0).max(0.0) * load.tpot_mean_s;
            in_flight = (lambda * slot_s).clamp(1.0, i.batch);
            load = self.load(lambda, in_flight);
        }
        Occupancy {
            in_flight,
            slot_s,
            slot_prefill_s,
            load,
        }
    }

    /// Peakedness of the batch slots' occupancy before the prompts'
    /// dilation: its variance over its mean, were the slots unlimited.
    /// Whether an arrival finds every slot busy, and how far every
    /// iteration's decode cost drifts over a request's life, depend on it.
    /// For renewal arrivals it is Whitt's 1 + (c_a² − 1)·ψ, with
    /// ψ = E[min(S₁, S₂)] / E[S] of the slot time (1/2 exponential, 1
    /// fixed; "Heavy-traffic approximations for service systems with
    /// blocking", 1984), 1 for Poisson whatever the service (M/G/∞
    /// insensitivity). Slot service is state dependent: every sequence in
    /// flight slows each iteration (its KV reads), so a swing up in
    /// occupancy lengthens every request's stay and feeds itself; with
    /// elasticity e = d ln t / d ln n of the iteration time, the variance
    /// grows by 1/(1 − e).
    pub(super) fn occupancy_swing(&self, occupancy: &Occupancy) -> f64 {
        let Occupancy {
            in_flight,
            slot_prefill_s,
            load,
            ..
        } = *occupancy;
        let per_sequence_s = (self.iteration_s(in_flight + 1.0, 0.0) - load.t0).max(0.0);
        let elasticity = (per_sequence_s * in_flight / load.t0.max(1e-12)).clamp(0.0, 0.9);
        let psi = (slot_prefill_s + load.tpot_mean_s * self.output_lives_min_pair_mean)
            / (slot_prefill_s + load.tpot_mean_s * self.output_lives_mean).max(1e-12);
        occupancy_peakedness(self.inputs.ca2, psi, elasticity)
    }

    /// The wait for a batch slot: G/G/c over the slots of every replica in
    /// the router's pool, at the occupancy's peakedness.
    pub(super) fn slot_wait(&self, lambda: f64, occupancy: &Occupancy) -> WaitSummary {
        let i = &self.inputs;
        let slot_s = occupancy.slot_s;
        let load = occupancy.load;
        // The prompts' dilation of every iteration grows the swing too: an
        // iteration that carries a prompt chunk is longer, so a swing up in
        // arrivals, which brings its prompts along, stretches the stays of
        // the sequences it adds.
        let dilation = (load.tpot_mean_s / load.t0.max(1e-12)).max(1.0);
        let peakedness = self.occupancy_swing(occupancy) * dilation.powi(2);
        let pool = i.slot_pool_replicas.max(1.0);
        let unstable = |probability: f64| WaitSummary {
            probability,
            mean_s: f64::INFINITY,
            quantile_s: f64::INFINITY,
        };
        let slots = i.batch * pool;
        let offered = lambda * pool * slot_s;
        let probability = wait_probability_peaked(slots.floor().max(1.0), offered, peakedness);
        if offered >= slots {
            return unstable(probability);
        }
        if probability < 1e-6 {
            // Far below the 1 % a p99 is made of: no wait worth its cost.
            return WaitSummary {
                probability,
                ..WaitSummary::default()
            };
        }
        // A queue forms only when every slot is busy, and then the slots
        // free up at the pace of a full batch ([`Self::full_batch_departures`]).
        let Some(full) = self.full_batch_departures(lambda) else {
            return unstable(probability);
        };
        let drain = (full.rate - lambda) * pool;
        // Heavy traffic (Köllerström's GI/G/c limit): the wait beyond the
        // knee is exponential with mean (c_a² + c_d²)/2 / (μ − λ), where
        // departures from c busy slots vary as one slot's service, c_d² =
        // c_s² (a superposition of c renewal streams). The slot's service
        // varies with its output length (c_s² of the output) over its
        // decode share; the prompt and its prefill are the same for all.
        let departures_cv2 = i.cs2 * full.decode_share.powi(2);
        let wait_scale = (i.ca2 + departures_cv2) / 2.0
            * smooth_arrivals_correction(offered / slots, i.ca2, departures_cv2);
        let conditional_mean_s = wait_scale / drain;
        WaitSummary {
            probability,
            mean_s: probability * conditional_mean_s,
            quantile_s: if probability <= 0.01 {
                0.0
            } else {
                (probability / 0.01).ln() * conditional_mean_s
            },
        }
    }

    /// Requests per second the replica completes with every slot busy and a
    /// queue standing, over the workload's length distribution (prompts
    /// admitted as fast as slots free up): the rate its utilisation is
    /// measured against. The fixed-length steady state at the mean lengths
    /// overstates it (at 6,000/400 tokens, c_v² 0.33, on one H100 by 6%:
    /// 4.30 against 4.06 req/s here and 4.05 in the simulator), as longer
    /// prompts attend over more pairs and longer answers hold more context.
    /// `None` when the prefill work cannot keep up with a full batch.
    pub fn saturated_rps(&self) -> Option<f64> {
        let idle = 1e-9 * self.inputs.batch / self.inputs.service_s.max(1e-12);
        self.full_batch_departures(idle).map(|full| full.rate)
    }

    /// Departures of one replica whose slots are all busy, per s, and the
    /// decode share of a slot's time then: c/S(c), with S(c) the slot time
    /// of a full batch (longer iterations than at the mean occupancy). The
    /// engine admits a waiting request only into a step with token budget
    /// left, after the prompts already running took theirs (vLLM V1), so a
    /// request waits for prefill compute in the waiting queue, not in a
    /// slot. A request holds its slot for n = chunks + O − 1 iterations (its
    /// last prompt chunk yields the first token), and every iteration of a
    /// full batch holds c requests, so Σ slot times = c·Σ iteration times:
    /// S(c) = n·t̄ exactly, t̄ the mean iteration with every prompt's
    /// prefill spread over the iterations (its own included: pricing its
    /// own prefill iteration on top of t̄ counted its prompt twice, a slot
    /// ~1% too long, which at P(wait) ≈ 0.9 overstated the wait by half).
    /// While a queue stands prompts enter as slots free up, so the prefill
    /// work in every iteration comes at the departure rate itself, not the
    /// arrival rate: μ solves μ·S(c; μ) = c (S grows with μ).
    /// `None` when even the arrival rate fills the slots for good, or the
    /// prefill queue cannot keep up with the departures.
    pub(super) fn full_batch_departures(&self, lambda: f64) -> Option<FullBatch> {
        let i = &self.inputs;
        let full = i.batch;
        let decodes = (i.output_mean - 1.0).max(0.0);
        let chunks = (i.input_mean / self.load(lambda, full).budget)
            .ceil()
            .max(1.0);
        let slot_s = |admitted: f64| -> f64 {
            let load = self.load(admitted, full);
            if self.prefill_utilization(admitted, &load) >= 1.0 {
                return f64::INFINITY;
            }
            (chunks + decodes) * load.tpot_mean_s
        };
        let at_arrivals = slot_s(lambda);
        if lambda * at_arrivals >= full || at_arrivals.is_nan() {
            return None;
        }
        // f(μ) = μ·S(μ) − c changes sign between λ and c/S(λ); the Illinois
        // variant of regula falsi brackets the root in a few evaluations.
        let f = |rate: f64| rate * slot_s(rate) - full;
        let (mut lo, mut hi) = (lambda, full / at_arrivals);
        let (mut f_lo, mut f_hi) = (lambda * at_arrivals - full, f(hi));
        let mut side = 0;
        let mut rate = hi;
        for _ in 0..40 {
            if !f_hi.is_finite() {
                // Beyond the prefill queue's stability: bisect, keeping the
                // root bracketed (a stable midpoint below it becomes `lo`).
                let mid = 0.5 * (lo + hi);
                let f_mid = f(mid);
                if f_mid.is_finite() && f_mid <= 0.0 {
                    (lo, f_lo) = (mid, f_mid);
                } else {
                    (hi, f_hi) = (mid, f_mid);
                }
                rate = if f_hi.is_finite() { hi } else { lo };
                if (hi - lo) <= 1e-4 * hi {
                    break;
                }
                continue;
            }
            rate = (lo * f_hi - hi * f_lo) / (f_hi - f_lo);
            if (hi - lo) <= 1e-4 * hi {
                break;
            }
            let f_rate = f(rate);
            if !f_rate.is_finite() || f_rate > 0.0 {
                hi = rate;
                f_hi = f_rate;
                if side == 1 {
                    f_lo /= 2.0;
                }
                side = 1;
            } else {
                lo = rate;
                f_lo = f_rate;
                if side == -1 {
                    f_hi /= 2.0;
                }
                side = -1;
            }
            if f_rate.abs() <= 1e-4 * full {
                break;
            }
        }
        Some(FullBatch {
            rate,
            // A slot's time varies with its output length over its decodes.
            decode_share: decodes / (chunks + decodes),
        })
    }
}

/// A replica's departures while all its slots are busy.
#[derive(Debug, Clone, Copy)]
pub(super) struct FullBatch {
    /// Requests completed per s.
    pub(super) rate: f64,
    /// Share of a slot's time spent decoding.
    pub(super) decode_share: f64,
}

/// A replica's steady occupancy at one arrival rate.
#[derive(Debug, Clone, Copy)]
pub(super) struct Occupancy {
    /// Sequences in flight (at most the batch).
    pub(super) in_flight: f64,
    /// Mean time a request holds a slot: its prefill and its decodes, s.
    pub(super) slot_s: f64,
    /// The prefill part of `slot_s`, s.
    pub(super) slot_prefill_s: f64,
    /// Iteration times at this occupancy.
    pub(super) load: Load,
}

/// Krämer and Langenbach-Belz's correction of the heavy-traffic wait for
/// arrivals smoother than Poisson (c_a² < 1) at utilisation ρ:
/// exp(−2(1 − ρ)(1 − c_a²)² / (3ρ(c_a² + c_s²))) ("Approximate formulae
/// for the delay in the queueing system GI/G/1", ITC 8, 1976; Whitt's QNA
/// uses it for GI/G/1), applied here to the slot queue's heavy-traffic
/// scale. A smooth stream waits less than (c_a² + c_s²)/2 says away from
/// saturation; 1 for Poisson or burstier arrivals, and it tends to 1 as
/// ρ → 1.
pub(super) fn smooth_arrivals_correction(rho: f64, ca2: f64, cs2: f64) -> f64 {
    if ca2 >= 1.0 || rho <= 0.0 {
        return 1.0;
    }
    let rho = rho.min(1.0);
    (-2.0 * (1.0 - rho) * (1.0 - ca2).powi(2) / (3.0 * rho * (ca2 + cs2).max(1e-9))).exp()
}

/// Whitt's peakedness 1 + (c_a² − 1)·ψ of the occupancy of renewal
/// arrivals, divided by 1 − e for the decode feedback (every sequence in
/// flight slows each iteration by an elasticity e).
pub(super) fn occupancy_peakedness(ca2: f64, psi: f64, elasticity: f64) -> f64 {
    (1.0 + (ca2 - 1.0) * psi.clamp(0.0, 1.0)).max(0.05) / (1.0 - elasticity)
}
