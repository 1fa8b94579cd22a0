//! Queueing approximations for the tail of the waiting time.
//!
//! A replica that admits at most `c` sequences at once is a `c`-server queue
//! whose servers are batch slots. Arrivals wait when every slot is busy.
//! For Poisson arrivals and exponential service the probability of waiting
//! is Erlang C (M/M/c). For general arrivals and service times
//! ([`wait_probability`]) it is Erlang C rescaled by the Halfin–Whitt
//! diffusion limit with the variability factor z = (c_a² + c_s²)/2 (Whitt,
//! "A diffusion approximation for the G/GI/n/m queue", 2004): bursty
//! arrivals (z > 1) make waiting far more likely, not only longer. The
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
    // Erlang B by the stable recursion B(k) = a·B(k−1) / (k + a·B(k−1)), then
    // C = B / (1 − ρ(1 − B)).
    let mut b = 1.0;
    let n = c as u64;
    for k in 1..=n {
        b = a * b / (k as f64 + a * b);
    }
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
    let c = servers.floor().max(1.0);
    let mu = 1.0 / service_s;
    let a = arrival_rate * service_s;
    if a >= c {
        return f64::INFINITY;
    }
    let p_wait = wait_probability(c, a, ca2, cs2);
    let tail = 1.0 - q;
    if p_wait <= tail {
        return 0.0;
    }
    let rate = c * mu - arrival_rate;
    (p_wait / tail).ln() / rate * (ca2 + cs2) / 2.0
}

/// Mean waiting time of a G/G/c queue (Allen–Cunneen), seconds.
pub fn mean_wait_s(arrival_rate: f64, service_s: f64, servers: f64, ca2: f64, cs2: f64) -> f64 {
    let c = servers.floor().max(1.0);
    let a = arrival_rate * service_s;
    if a >= c {
        return f64::INFINITY;
    }
    wait_probability(c, a, ca2, cs2) / (c / service_s - arrival_rate) * (ca2 + cs2) / 2.0
}

/// Probability of waiting, mean wait and wait quantile `q` of a G/G/c queue
/// in one pass (one Erlang C): the same numbers as [`wait_probability`],
/// [`mean_wait_s`] and [`wait_quantile_s`], for callers that need all three.
pub fn wait_summary(
    arrival_rate: f64,
    service_s: f64,
    servers: f64,
    ca2: f64,
    cs2: f64,
    q: f64,
) -> WaitSummary {
    let c = servers.floor().max(1.0);
    let a = arrival_rate * service_s;
    let p_wait = wait_probability(c, a, ca2, cs2);
    if a >= c {
        return WaitSummary {
            probability: p_wait,
            mean_s: f64::INFINITY,
            quantile_s: f64::INFINITY,
        };
    }
    // The expressions of `mean_wait_s` and `wait_quantile_s`, operation for
    // operation, so the numbers are bit-identical.
    let tail = 1.0 - q;
    WaitSummary {
        probability: p_wait,
        mean_s: p_wait / (c / service_s - arrival_rate) * (ca2 + cs2) / 2.0,
        quantile_s: if p_wait <= tail {
            0.0
        } else {
            (p_wait / tail).ln() / (c * (1.0 / service_s) - arrival_rate) * (ca2 + cs2) / 2.0
        },
    }
}

/// What [`wait_summary`] returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaitSummary {
    /// Probability that an arrival waits.
    pub probability: f64,
    /// Mean wait, s.
    pub mean_s: f64,
    /// Wait at the requested quantile, s.
    pub quantile_s: f64,
}

/// Probability that an arrival waits in a G/G/c queue with offered load
/// `a` (in servers): Erlang C times α(β/√z)/α(β), where α(β) = 1/(1 +
/// β·Φ(β)/φ(β)) is the Halfin–Whitt probability of waiting at the
/// square-root staffing level β = (c − a)/√c and z = (c_a² + c_s²)/2 the
/// variability factor. Exactly Erlang C when z = 1; at most 1.
pub fn wait_probability(servers: f64, offered_load: f64, ca2: f64, cs2: f64) -> f64 {
    let c = servers.floor().max(1.0);
    let p_mmc = erlang_c(c, offered_load);
    let z = (ca2 + cs2) / 2.0;
    if p_mmc >= 1.0 || p_mmc == 0.0 || (z - 1.0).abs() < 1e-12 || z <= 0.0 {
        return p_mmc;
    }
    let beta = (c - offered_load.max(0.0)) / c.sqrt();
    (p_mmc * (ln_halfin_whitt(beta / z.sqrt()) - ln_halfin_whitt(beta)).exp()).min(1.0)
}

/// ln α(β) of the Halfin–Whitt waiting probability α(β) = φ(β)/(φ(β) +
/// β·Φ(β)), in logs so that large β does not underflow to 0/0.
fn ln_halfin_whitt(beta: f64) -> f64 {
    let ln_pdf = -0.5 * beta * beta - 0.5 * std::f64::consts::TAU.ln();
    let cdf = 1.0 - crate::tails::normal_tail(beta);
    let denominator = ln_pdf.exp() + beta * cdf;
    if denominator > 0.0 {
        ln_pdf - denominator.ln()
    } else {
        0.0
    }
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
