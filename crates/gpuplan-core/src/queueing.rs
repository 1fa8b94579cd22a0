//! Queueing approximations for the tail of the waiting time.
//!
//! A replica that admits at most `c` sequences at once is a `c`-server queue
//! whose servers are batch slots. Arrivals wait when every slot is busy.
//! For Poisson arrivals and exponential service the probability of waiting
//! is Erlang C (M/M/c). For general arrivals and service times
//! ([`wait_probability`]) it is Hayward's approximation: Erlang C of c/z
//! servers offered a/z, with the variability factor z = (c_a² + c_s²)/2:
//! bursty arrivals (z > 1) make waiting far more likely, not only longer. The
//! conditional wait is exponential with the M/M/c decay rate scaled by z
//! (Allen–Cunneen), which gives p99 = ln(P_wait / 0.01) / (c·μ − λ) · z.

/// Erlang C: probability that an arrival waits in an M/M/c queue with
/// offered load `a = λ/μ` (in servers). Returns 1 when `a >= c`.
pub fn erlang_c(servers: f64, offered_load: f64) -> f64 {
    let c = servers.floor().max(1.0);
    let a = offered_load.max(0.0);
    if a >= c {
        return 1.0;
    }
    if a == 0.0 {
        return 0.0;
    }
    // C = B / (1 − ρ(1 − B)).
    let b = erlang_b(c, a);
    let rho = a / c;
    b / (1.0 - rho * (1.0 - b))
}

/// Waiting-time quantile `q` (e.g. 0.99) of a G/G/c queue, seconds.
///
/// `arrival_rate` λ (1/s), `service_s` mean service time 1/μ (s),
/// `servers` c, and the squared coefficients of variation of inter-arrival
/// (`ca2`) and service (`cs2`) times. Infinite when the queue is unstable.
pub fn wait_quantile_s(
    arrival_rate: f64,
    service_s: f64,
    servers: f64,
    ca2: f64,
    cs2: f64,
    q: f64,
) -> f64 {
    wait_summary(arrival_rate, service_s, servers, ca2, cs2, q).quantile_s
}

/// Mean waiting time of a G/G/c queue (Allen–Cunneen), seconds.
pub fn mean_wait_s(arrival_rate: f64, service_s: f64, servers: f64, ca2: f64, cs2: f64) -> f64 {
    wait_summary(arrival_rate, service_s, servers, ca2, cs2, 0.99).mean_s
}

/// Probability of waiting, mean wait and wait quantile `q` of a G/G/c queue
/// in one pass (one Erlang C): what [`wait_probability`], [`mean_wait_s`]
/// and [`wait_quantile_s`] return, for callers that need all three.
pub fn wait_summary(
    arrival_rate: f64,
    service_s: f64,
    servers: f64,
    ca2: f64,
    cs2: f64,
    q: f64,
) -> WaitSummary {
    let z = (ca2 + cs2) / 2.0;
    wait_summary_peaked(arrival_rate, service_s, servers, z, z, q)
}

/// [`wait_summary`] with the two variability factors given apart: the
/// probability of waiting from the offered traffic's peakedness `z`
/// (variance over mean of the count of busy servers were there enough of
/// them; 1 for Poisson arrivals whatever the service times), and the
/// conditional wait's scale `wait_scale` (Allen–Cunneen's (c_a² + c_s²)/2):
/// exponential with rate (c·μ − λ) / wait_scale.
pub fn wait_summary_peaked(
    arrival_rate: f64,
    service_s: f64,
    servers: f64,
    peakedness: f64,
    wait_scale: f64,
    q: f64,
) -> WaitSummary {
    let c = servers.floor().max(1.0);
    let a = arrival_rate * service_s;
    let p_wait = wait_probability_peaked(c, a, peakedness);
    if a >= c {
        return WaitSummary {
            probability: p_wait,
            mean_s: f64::INFINITY,
            quantile_s: f64::INFINITY,
        };
    }
    let tail = 1.0 - q;
    // Mean conditional wait: wait_scale / (c·μ − λ).
    let conditional_mean_s = wait_scale / (c / service_s - arrival_rate);
    WaitSummary {
        probability: p_wait,
        mean_s: p_wait * conditional_mean_s,
        // P(W > t) = P_wait · exp(−t / conditional mean) = 1 − q.
        quantile_s: if p_wait <= tail {
            0.0
        } else {
            (p_wait / tail).ln() * conditional_mean_s
        },
    }
}

/// What [`wait_summary`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WaitSummary {
    /// Probability that an arrival waits.
    pub probability: f64,
    /// Mean wait, s.
    pub mean_s: f64,
    /// Wait at the requested quantile, s.
    pub quantile_s: f64,
}

/// Probability that an arrival waits in a G/G/c queue with offered load
/// `a` (in servers): Hayward's approximation for peaked traffic (Fredericks,
/// "Congestion in blocking systems — a simple approximation technique",
/// BSTJ 1980), Erlang C of a system with c/z servers and load a/z, where
/// z = (c_a² + c_s²)/2 is the variability factor. Bursty arrivals (z > 1)
/// act as fewer, larger units of work: waiting is far more likely, not only
/// longer. Exactly Erlang C when z = 1; at most 1.
pub fn wait_probability(servers: f64, offered_load: f64, ca2: f64, cs2: f64) -> f64 {
    wait_probability_peaked(servers, offered_load, (ca2 + cs2) / 2.0)
}

/// Hayward's approximation ([`wait_probability`]) with the peakedness `z`
/// of the offered traffic given directly.
pub fn wait_probability_peaked(servers: f64, offered_load: f64, z: f64) -> f64 {
    let c = servers.floor().max(1.0);
    let a = offered_load.max(0.0);
    if a >= c {
        return 1.0;
    }
    if a == 0.0 {
        return 0.0;
    }
    if (z - 1.0).abs() < 1e-12 || z.is_nan() || z <= 0.0 {
        return erlang_c(c, a);
    }
    let (servers_reduced, load_reduced) = (c / z, a / z);
    if servers_reduced > MANY_SERVERS {
        // Erlang C's many-server limit (Halfin & Whitt, "Heavy-traffic limits
        // for queues with many exponential servers", 1981): α(β) with
        // β = (c − a)/√a; within a fraction of a percent at this size, and
        // it spares an O(c) recursion per call.
        let beta = (servers_reduced - load_reduced) / load_reduced.sqrt();
        return halfin_whitt(beta).min(1.0);
    }
    erlang_c_real(servers_reduced, load_reduced).min(1.0)
}

/// Servers (after Hayward's reduction) above which Erlang C is taken at its
/// many-server limit.
const MANY_SERVERS: f64 = 400.0;

/// The Halfin–Whitt probability of waiting α(β) = φ(β) / (φ(β) + β·Φ(β)),
/// in logs so that a large β does not divide 0 by 0.
fn halfin_whitt(beta: f64) -> f64 {
    let ln_pdf = -0.5 * beta * beta - 0.5 * std::f64::consts::TAU.ln();
    let cdf = 1.0 - crate::tails::normal_tail(beta);
    let denominator = ln_pdf.exp() + beta * cdf;
    if denominator > 0.0 {
        (ln_pdf - denominator.ln()).exp()
    } else {
        1.0
    }
}

/// Erlang C for a real number of servers `c` (> `a`): Erlang B interpolated
/// between ⌊c⌋ and ⌈c⌉ servers in logs (B(0) = 1), then C = B / (1 − ρ(1 − B)).
fn erlang_c_real(c: f64, a: f64) -> f64 {
    let lo = c.floor();
    let b_lo = erlang_b(lo, a);
    let b = if c > lo && b_lo > 0.0 {
        let b_hi = erlang_b(lo + 1.0, a);
        let w = c - lo;
        if b_hi > 0.0 {
            (b_lo.ln() * (1.0 - w) + b_hi.ln() * w).exp()
        } else {
            0.0
        }
    } else {
        b_lo
    };
    let rho = a / c;
    b / (1.0 - rho * (1.0 - b))
}

/// Erlang B with `servers` (a whole number ≥ 0) and offered load `a`, by the
/// stable recursion B(k) = a·B(k−1) / (k + a·B(k−1)) from B(0) = 1.
/// Past the offered load every step shrinks B, so once it is below 1e-30
/// it is 0 for any purpose here and the loop stops (many servers, light load).
fn erlang_b(servers: f64, a: f64) -> f64 {
    let mut b = 1.0;
    for k in 1..=(servers as u64) {
        b = a * b / (k as f64 + a * b);
        if b < 1e-30 && k as f64 > a {
            return 0.0;
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_probability_is_erlang_c_for_poisson_and_grows_with_burstiness() {
        let (c, a) = (56.0, 40.0);
        assert!((wait_probability(c, a, 1.0, 1.0) - erlang_c(c, a)).abs() < 1e-15);
        let smooth = wait_probability(c, a, 0.25, 0.5);
        let bursty = wait_probability(c, a, 4.0, 0.5);
        let very = wait_probability(c, a, 16.0, 0.5);
        assert!(smooth < erlang_c(c, a) && erlang_c(c, a) < bursty && bursty < very);
        assert!(very <= 1.0);
        // Far from saturation the log form neither underflows nor divides 0/0.
        let light = wait_probability(4000.0, 10.0, 9.0, 1.0);
        assert!(light.is_finite() && (0.0..=1.0).contains(&light));
    }

    #[test]
    fn wait_summary_is_the_three_functions_in_one_pass() {
        for (lambda, service, c, ca2, cs2) in [
            (0.8, 1.0, 1.0, 1.0, 1.0),
            (30.0, 1.5, 64.0, 1.0, 1.3),
            (30.0, 1.5, 64.0, 4.0, 0.5),
            (0.01, 2.0, 8.0, 1.0, 1.0),
            (50.0, 2.0, 64.0, 1.0, 1.0),
        ] {
            let s = wait_summary(lambda, service, c, ca2, cs2, 0.99);
            let a = lambda * service;
            assert_eq!(s.probability, wait_probability(c, a, ca2, cs2));
            let mean = mean_wait_s(lambda, service, c, ca2, cs2);
            let p99 = wait_quantile_s(lambda, service, c, ca2, cs2, 0.99);
            assert_eq!(s.mean_s.to_bits(), mean.to_bits(), "{} vs {mean}", s.mean_s);
            assert_eq!(
                s.quantile_s.to_bits(),
                p99.to_bits(),
                "{} vs {p99}",
                s.quantile_s
            );
        }
    }

    #[test]
    fn hayward_is_erlang_c_at_unit_peakedness_and_rises_with_it() {
        for (c, a) in [(1.0, 0.7), (8.0, 5.0), (64.0, 50.0), (256.0, 230.0)] {
            assert_eq!(wait_probability_peaked(c, a, 1.0), erlang_c(c, a));
            let mut last = 0.0;
            for z in [0.25, 0.5, 1.0, 2.0, 4.0, 16.0] {
                let p = wait_probability_peaked(c, a, z);
                assert!(p >= last && p <= 1.0, "c {c} a {a} z {z}: {p} after {last}");
                last = p;
            }
        }
        // Between whole server counts the interpolation is continuous.
        let below = wait_probability_peaked(64.0, 40.0, 2.0 - 1e-9);
        let at = wait_probability_peaked(64.0, 40.0, 2.0);
        assert!((below - at).abs() < 1e-6);
    }

    #[test]
    fn erlang_c_known_values() {
        // M/M/1: P(wait) = ρ.
        assert!((erlang_c(1.0, 0.7) - 0.7).abs() < 1e-12);
        // M/M/2 with a = 1: C = 1/3 (textbook).
        assert!((erlang_c(2.0, 1.0) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(erlang_c(4.0, 5.0), 1.0);
        assert_eq!(erlang_c(4.0, 0.0), 0.0);
    }

    #[test]
    fn mm1_wait_quantile_matches_closed_form() {
        // M/M/1: P(W > t) = ρ e^{−(μ−λ)t}; λ = 0.8, μ = 1 → p99 = ln(80)/0.2.
        let w = wait_quantile_s(0.8, 1.0, 1.0, 1.0, 1.0, 0.99);
        assert!((w - (80.0f64).ln() / 0.2).abs() < 1e-9, "{w}");
        // M/M/1 mean wait: ρ/(μ−λ) = 4.
        assert!((mean_wait_s(0.8, 1.0, 1.0, 1.0, 1.0) - 4.0).abs() < 1e-9);
    }

    #[test]
    fn unstable_queue_waits_forever_and_idle_never_waits() {
        assert!(wait_quantile_s(2.0, 1.0, 1.0, 1.0, 1.0, 0.99).is_infinite());
        assert_eq!(wait_quantile_s(0.001, 1.0, 8.0, 1.0, 1.0, 0.99), 0.0);
    }
}
