//! The distribution over requests of the mean time per output token: the
//! decode pace plus the prompt work that arrives during a request's life.

use super::distributions::normal_tail;
use super::{TailModel, OUTPUT_POINTS};

/// What the TPOT tail is computed from: the mean time per output token, the
/// cost of each prompt token in an iteration, and the sequences in flight.
#[derive(Debug, Clone, Copy)]
pub(super) struct DecodePace {
    pub(super) tpot_mean_s: f64,
    pub(super) per_token_s: f64,
    pub(super) in_flight: f64,
}

/// The TPOT distribution over requests ([`TailModel::tpot_tail`]): the mean,
/// and per output length 1/σ and the Cornish–Fisher terms.
pub(super) struct TpotTail {
    tpot_mean_s: f64,
    points: [(f64, f64, f64); OUTPUT_POINTS],
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
    /// prompt tokens that arrive meanwhile (compound renewal: mean λT·E[I],
    /// variance λT·E[I]²(c_a² + c_s²)), spread over its L tokens: the spread
    /// shrinks as 1/√L, so short answers set the tail. Mixed over the
    /// output-length distribution (lognormal fitted to mean and p99), each
    /// length's TPOT normal with a Cornish–Fisher skew.
    pub(super) fn tpot_tail(&self, lambda: f64, pace: DecodePace) -> TpotTail {
        let DecodePace {
            tpot_mean_s,
            per_token_s,
            in_flight,
        } = pace;
        let i = &self.inputs;
        let dispersion = i.ca2 + self.input_cv2;
        // The number of sequences in flight drifts over a request's life (its
        // variance ≈ its mean, as in an M/G/∞ count): a slow swing of every
        // iteration's decode cost that does not average out over L tokens.
        let per_sequence_s =
            self.iteration_s(in_flight + 1.0, 0.0) - self.iteration_s(in_flight, 0.0);
        let drift_sd = per_sequence_s.max(0.0) * in_flight.sqrt();
        // One request's TPOT at L iterations: the prompt work arriving during
        // its life is a compound count — few, large prompts for a short life,
        // so it is skewed; its standard deviation and skewness (cumulants
        // κ2 = n·E[I²], κ3 = n·E[I³] with n = λ·L·t̄ prompts, lognormal I),
        // and the drift, independent and Gaussian.
        let moment2 = 1.0 + self.input_cv2;
        let arrivals_skew_at_one = moment2.powf(1.5);
        let spread = |life: f64| -> (f64, f64) {
            let prompts = lambda * tpot_mean_s * life;
            let arrivals = per_token_s * i.input_mean * (prompts * dispersion).sqrt() / life;
            let sd = arrivals.hypot(drift_sd).max(1e-12);
            let skew = arrivals_skew_at_one / prompts.max(1e-9).sqrt() * (arrivals / sd).powi(3);
            (sd, skew.min(2.0))
        };
        let lives = &self.output_lives;
        // Per output length: 1/σ and the Cornish–Fisher terms of
        // x = μ + σ(z + (z² − 1)·γ/6), solved for z (the root that grows with x).
        let points: [(f64, f64, f64); OUTPUT_POINTS] = std::array::from_fn(|k| {
            let (sd, skew) = spread(lives[k]);
            let a = skew / 6.0;
            (1.0 / sd, a, 1.0 / (2.0 * a))
        });
        TpotTail {
            tpot_mean_s,
            points,
            bracket_s: 20.0 * spread(1.0).0 + 1e-9,
        }
    }
}
