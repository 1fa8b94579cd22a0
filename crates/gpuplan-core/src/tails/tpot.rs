//! The distribution over requests of the mean time per output token: the
//! decode pace plus the prompt work that arrives during a request's life.

use super::distributions::normal_tail;
use super::{TailModel, OUTPUT_POINTS};

/// What the TPOT tail is computed from: the mean time per output token, the
/// cost of each prompt token in a budget-full iteration (the work beyond the
/// mean arrives in bursts), and the sequences in flight.
#[derive(Debug, Clone, Copy)]
pub(super) struct DecodePace {
    pub(super) tpot_mean_s: f64,
    pub(super) per_token_s: f64,
    pub(super) in_flight: f64,
    /// Index of dispersion of the prompts admitted into the running batch
    /// over a request's life: their burstiness (c_a²), less what the
    /// router evens out.
    pub(super) admitted_ca2: f64,
    /// Variance over mean of the count of sequences in flight
    /// ([`TailModel::occupancy_swing`]), and the batch cap that bounds it.
    pub(super) occupancy_peakedness: f64,
    /// See `occupancy_peakedness`.
    pub(super) batch: f64,
    /// Probability that an arriving request finds every slot busy.
    pub(super) slot_wait_probability: f64,
}

/// The TPOT distribution over requests ([`TailModel::tpot_tail`]): the mean,
/// and per output length 1/σ and the Cornish–Fisher terms.
pub(super) struct TpotTail {
    tpot_mean_s: f64,
    pub(super) points: [(f64, f64, f64); OUTPUT_POINTS],
    /// Width above the mean that surely holds the p99, s.
    bracket_s: f64,
}

impl TpotTail {
    /// Whether more than 1 % of requests take longer than `x` s per token:
    /// the mean over lengths of P(TPOT > x) > 1 %, i.e. the sum over points
    /// > 1 % × points; stops as soon as the partial sum (terms ≥ 0) passes it.
    pub(super) fn exceeds(&self, x: f64) -> bool {
        let threshold = 0.01 * OUTPUT_POINTS as f64;
        let mut sum = 0.0;
        for &(inv_sd, a, inv_2a) in &self.points {
            let y = (x - self.tpot_mean_s) * inv_sd;
            let z = if a < 1e-9 {
                y
            } else {
                let disc = 1.0 + 4.0 * a * (a + y);
                if disc <= 0.0 {
                    -10.0
                } else {
                    (disc.sqrt() - 1.0) * inv_2a
                }
            };
            sum += normal_tail(z);
            if sum > threshold {
                return true;
            }
        }
        false
    }

    /// The p99, s, by bisection on [`TpotTail::exceeds`].
    pub(super) fn p99_s(&self) -> f64 {
        let (mut lo, mut hi) = (self.tpot_mean_s, self.tpot_mean_s + self.bracket_s);
        // 30 halvings: far below a microsecond.
        for _ in 0..30 {
            let mid = 0.5 * (lo + hi);
            if self.exceeds(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }
}

impl TailModel<'_> {
    /// The distribution over requests of the mean time per output token. A
    /// request decoding for L iterations pays t0 per iteration plus the
    /// prompt tokens admitted meanwhile (compound renewal: mean λT·E[I],
    /// variance λT·E[I]²(c_a² + c_s²), c_a² of the prompts the slots admit,
    /// smoother than the arrivals when they queue for slots), spread over
    /// its L tokens: the spread
    /// shrinks as 1/√L, so short answers set the tail. Mixed over the
    /// output-length distribution (lognormal fitted to mean and p99), each
    /// length's TPOT normal with a Cornish–Fisher skew.
    pub(super) fn tpot_tail(&self, lambda: f64, pace: DecodePace) -> TpotTail {
        let DecodePace {
            tpot_mean_s,
            per_token_s,
            in_flight,
            admitted_ca2,
            occupancy_peakedness,
            batch,
            slot_wait_probability,
        } = pace;
        let i = &self.inputs;
        let ca2 = admitted_ca2;
        let dispersion = ca2 + self.input_cv2;
        // The number of sequences in flight drifts over a request's life (its
        // variance ≈ its mean, as in an M/G/∞ count): a slow swing of every
        // iteration's decode cost that does not average out over L tokens.
        let per_sequence_s =
            (self.iteration_s(in_flight + 1.0, 0.0) - self.iteration_s(in_flight, 0.0)).max(0.0);
        let drift_sd = per_sequence_s * occupancy_sd(occupancy_peakedness, in_flight, batch);
        // One request's TPOT at L iterations: the prompt work arriving during
        // its life is a compound count — few, large prompts for a short life,
        // so it is skewed; its standard deviation and skewness (cumulants of
        // a compound renewal sum over n = λ·L·t̄ prompts,
        // [`compound_skew_at_one`]), and the drift, independent and Gaussian.
        let v = self.input_cv2;
        let arrivals_skew_at_one = compound_skew_at_one(ca2, v);
        // A request's life is a delay cycle: the prompts that arrive while it
        // decodes lengthen it, and the ones arriving in that extra time
        // lengthen it again. Its length is the first passage of L·t0 plus
        // the arriving prompt work down to zero at net drain 1 − ρ = t0/t̄:
        // mean L·t0/(1 − ρ) and variance L·t0·σ²/(1 − ρ)³ (the busy period
        // of Takács; the inverse-Gaussian first passage of a Brownian work
        // input), i.e. the count over a fixed life L·t̄, σ²·L·t̄, grown by
        // (t̄/t0)². Any swing of the decode pace is stretched alike. Only
        // while slots are free: a full batch admits one prompt per finished
        // sequence, so the prompts admitted over L iterations follow the
        // iterations, not their length, and a longer life brings no more
        // (probability P(wait) that the slots are full). Every generation
        // of the delay cycle — the prompts the extra time brings, then the
        // ones their prefill's time brings — finds the slots full with that
        // probability, so the cycle is a branching process of mean offspring
        // ρ(1 − P(wait)), ρ = 1 − t0/t̄ the share of time spent prefilling:
        // it stretches the life by 1/(1 − ρ(1 − P(wait))).
        let t0 = self.iteration_s(in_flight, 0.0);
        let dilation = delay_cycle_dilation(t0, tpot_mean_s, slot_wait_probability);
        // Each prompt prefilled during the life also decodes beside it for
        // as long as both run (`output_overlaps`): the work it brings is its
        // prefill plus that many iterations' share of one more sequence.
        let spread = |life: f64, overlap: f64| -> (f64, f64) {
            let prompts = lambda * tpot_mean_s * life;
            let prompt_work_s = per_token_s * i.input_mean + per_sequence_s * overlap;
            let arrivals = prompt_work_s * (prompts * dispersion).sqrt() / life;
            let sd = (arrivals.hypot(drift_sd) * dilation * short_life_factor(dilation, life))
                .max(1e-12);
            let skew = arrivals_skew_at_one / prompts.max(1e-9).sqrt() * (arrivals / sd).powi(3);
            (sd, skew.min(2.0))
        };
        // Per output length: 1/σ and the Cornish–Fisher terms of
        // x = μ + σ(z + (z² − 1)·γ/6), solved for z (the root that grows with x).
        let points: [(f64, f64, f64); OUTPUT_POINTS] = std::array::from_fn(|k| {
            let (sd, skew) = spread(self.output_lives[k], self.output_overlaps[k]);
            let a = skew / 6.0;
            (1.0 / sd, a, 1.0 / (2.0 * a))
        });
        TpotTail {
            tpot_mean_s,
            points,
            // A one-iteration life overlaps half of itself with each other.
            bracket_s: 20.0 * spread(1.0, 0.5).0 + 1e-9,
        }
    }
}

/// How much a request's life is stretched by the prompts prefilled during
/// it: the delay cycle (Takács's busy period) of a branching process whose
/// every generation brings ρ(1 − P(wait)) prompt work per unit of time,
/// ρ = 1 − t0/t̄ the share of an iteration spent prefilling and P(wait) the
/// probability that the slots are full (then admissions follow departures,
/// not time): 1/(1 − ρ(1 − P(wait))), t̄/t0 with free slots, 1 with none.
pub(super) fn delay_cycle_dilation(t0_s: f64, tpot_mean_s: f64, slot_wait_probability: f64) -> f64 {
    let prefill_share = (1.0 - t0_s / tpot_mean_s.max(1e-12)).clamp(0.0, 0.999);
    1.0 / (1.0 - prefill_share * (1.0 - slot_wait_probability.clamp(0.0, 1.0)))
}

/// The share of the long-life standard deviation a life of `life`
/// iterations reaches. The delay cycle makes successive iteration times an
/// AR(1) series of coefficient φ = 1 − 1/dilation (each iteration's excess
/// prompt work brings a φ share of it into the next); the mean of L terms
/// has variance (σ²/L)·[(1 + φ)/(1 − φ) − 2φ(1 − φᴸ)/(L(1 − φ)²)], which
/// reaches the long-run (σ²/L)(1 + φ)/(1 − φ) the dilation assumes only for
/// L ≫ 1/(1 − φ); one iteration keeps the marginal variance. The square
/// root of the ratio.
pub(super) fn short_life_factor(dilation: f64, life: f64) -> f64 {
    let phi = (1.0 - 1.0 / dilation.max(1.0)).clamp(0.0, 0.999);
    let l = life.max(1.0);
    (1.0 - 2.0 * phi * (1.0 - phi.powf(l)) / (l * (1.0 - phi * phi)))
        .max(0.0)
        .sqrt()
}

/// Standard deviation of the count of sequences in flight: √(z·n) at
/// peakedness z, its swing up bounded by the batch cap (the p99 at most the
/// cap), and never below the Poisson count's √n (within the cap's room).
pub(super) fn occupancy_sd(peakedness: f64, in_flight: f64, batch: f64) -> f64 {
    let room = (batch - in_flight).max(0.0);
    (peakedness * in_flight)
        .sqrt()
        .min(room / 2.326)
        .max(in_flight.sqrt().min(room))
}

/// Skewness × √n of a compound renewal sum of n lognormal prompt lengths
/// (squared CV `v`) arriving with burstiness `ca2`: κ3/κ2^1.5 with, per
/// arrival, κ2 = E[I]²(c_a² + v) and κ3 = E[I]³(κ3(N)/n + 3·v·c_a² + v²(v + 3))
/// (N the count, independent of the lengths: κ3(S) = κ3(N)E[I]³ +
/// 3κ2(N)E[I]Var(I) + E[N]κ3(I)); the renewal count's third cumulant grows
/// as κ3(N)/n → 3c⁴ − γc³ (Cox, "Renewal Theory", 1962), c⁴ = c_a⁴ for the
/// gamma gaps the workload's arrivals are. Poisson (c_a² = 1) gives the
/// compound Poisson E[I³]/E[I²]^1.5 = (1 + v)^1.5.
pub(super) fn compound_skew_at_one(ca2: f64, v: f64) -> f64 {
    (ca2 * ca2 + 3.0 * v * ca2 + v * v * (v + 3.0)) / (ca2 + v).powf(1.5)
}

#[cfg(test)]
mod tests {
    use super::{compound_skew_at_one, occupancy_sd};

    #[test]
    fn bursts_swing_the_occupancy_up_to_the_batch_cap() {
        // Poisson: a Poisson count, √n.
        assert!((occupancy_sd(1.0, 30.0, 1000.0) - 30f64.sqrt()).abs() < 1e-12);
        // Bursts: √(z·n).
        assert!((occupancy_sd(9.0, 30.0, 1000.0) - 270f64.sqrt()).abs() < 1e-12);
        // The cap bounds the swing up: p99 at most the cap.
        assert!((occupancy_sd(9.0, 30.0, 60.0) - 30.0 / 2.326).abs() < 1e-12);
        // Never below the Poisson count's, within the cap's room.
        assert!((occupancy_sd(0.2, 30.0, 1000.0) - 30f64.sqrt()).abs() < 1e-12);
        assert!((occupancy_sd(9.0, 30.0, 40.0) - 30f64.sqrt()).abs() < 1e-12);
        // A batch pinned at its cap does not swing.
        assert_eq!(occupancy_sd(9.0, 40.0, 40.0), 0.0);
    }

    #[test]
    fn compound_skew_is_compound_poisson_for_poisson_and_grows_with_bursts() {
        for v in [0.0, 0.2, 0.43, 1.0] {
            let poisson = compound_skew_at_one(1.0, v);
            assert!((poisson - (1.0 + v).powf(1.5)).abs() < 1e-12, "{v}");
            assert!(compound_skew_at_one(4.0, v) > poisson);
            assert!(compound_skew_at_one(16.0, v) > compound_skew_at_one(4.0, v));
        }
        // Fixed lengths, gamma gaps of c_a² = 16: c_a⁴ / c_a³ = c_a = 4.
        assert!((compound_skew_at_one(16.0, 0.0) - 4.0).abs() < 1e-12);
    }
}
