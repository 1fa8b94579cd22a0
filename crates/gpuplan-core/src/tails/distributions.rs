//! The normal and lognormal helpers of the tail model: token lengths are
//! lognormals fitted to a mean and a p99, and sums of many requests' work are
//! normal.

/// z of the 99th percentile of a standard normal distribution.
pub(crate) const Z99: f64 = 2.326;

/// Squared coefficient of variation of a lognormal with the given mean and
/// p99 (p99/mean = exp(z·σ − σ²/2), solved for σ on the branch σ < z).
pub fn lognormal_cv2(mean: f64, p99: f64) -> f64 {
    if mean.is_nan() || mean <= 0.0 || p99.is_nan() || p99 <= mean {
        return 0.0;
    }
    let ratio = (p99 / mean).ln();
    // σ²/2 − z·σ + ln(ratio) = 0 → σ = z − sqrt(z² − 2 ln(ratio)).
    let disc = (Z99 * Z99 - 2.0 * ratio).max(0.0);
    let sigma = Z99 - disc.sqrt();
    (sigma * sigma).exp_m1()
}

/// Quantile `q` of a lognormal with the given mean and squared CV.
pub fn lognormal_quantile(mean: f64, cv2: f64, q: f64) -> f64 {
    if cv2 <= 0.0 {
        return mean;
    }
    let sigma2 = cv2.ln_1p();
    let mu = mean.ln() - sigma2 / 2.0;
    (mu + sigma2.sqrt() * normal_quantile(q)).exp()
}

/// P(Z > z) of a standard normal (Abramowitz–Stegun 7.1.26 erfc, |error| < 1.5e-7).
pub(crate) fn normal_tail(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    if z >= 0.0 {
        erfc / 2.0
    } else {
        1.0 - erfc / 2.0
    }
}

/// Inverse of the standard normal CDF (Acklam's rational approximation,
/// relative error < 1.2e-9).
fn normal_quantile(p: f64) -> f64 {
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// ln Γ(x) for x > 0 (Lanczos' approximation, g = 7, nine terms; relative
/// error below 1e-13 over the positive reals).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let series = C[1..]
        .iter()
        .enumerate()
        .fold(C[0], |s, (k, c)| s + c / (x + k as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + series.ln()
}

/// Arrivals of a gamma renewal stream of squared CV `ca2` within a window
/// that holds `arrivals` arrivals on average, counted from an arrival, beyond
/// the Poisson count: m(t) − λt, with the renewal function
/// m(t) = Σ_j P(j·k, λk·t) (the j-th arrival comes within t; its time is a
/// gamma of shape j·k, k = 1/c_a²). Zero for a Poisson or smoother stream;
/// it tends to (c_a² − 1)/2 over long windows (Cox, "Renewal Theory", 1962).
#[cfg(test)]
pub(crate) fn renewal_excess(ca2: f64, arrivals: f64) -> f64 {
    renewal_excess_up_to(ca2, arrivals, f64::INFINITY)
}

/// [`renewal_excess`], or `at_most` once the excess reaches it (the sum
/// only grows, and a very bursty stream's runs to thousands of terms).
pub(crate) fn renewal_excess_up_to(ca2: f64, arrivals: f64, at_most: f64) -> f64 {
    if ca2 <= 1.0 || arrivals <= 0.0 || at_most <= 0.0 {
        return 0.0;
    }
    let shape = 1.0 / ca2;
    let x = arrivals * shape;
    let mut count = 0.0;
    // The terms fall once j·k passes x: far past it, stop.
    for j in 1..=20_000 {
        let term = gamma_p(f64::from(j) * shape, x);
        count += term;
        if term < 1e-6 || count - arrivals >= at_most {
            break;
        }
    }
    (count - arrivals).clamp(0.0, at_most)
}

/// Regularized lower incomplete gamma P(a, x) = γ(a, x)/Γ(a): the CDF at x
/// of a gamma variable of shape a and unit scale. Its power series below
/// x = a + 1, the continued fraction of Q = 1 − P above (modified Lentz).
pub(crate) fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 || a <= 0.0 {
        return if x > 0.0 { 1.0 } else { 0.0 };
    }
    let log_prefactor = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        // P = e^(−x) x^a / Γ(a + 1) · Σ x^n / ((a + 1)…(a + n)).
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..500 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term < sum * 1e-14 {
                break;
            }
        }
        (sum.ln() + log_prefactor).exp().min(1.0)
    } else {
        // Q = e^(−x) x^a / Γ(a) · 1/(x + 1 − a − 1·(1 − a)/(x + 3 − a − …)).
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for n in 1..500 {
            let an = -(n as f64) * (n as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-14 {
                break;
            }
        }
        (1.0 - (log_prefactor + h.ln()).exp()).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_excess_is_zero_for_poisson_and_tends_to_half_the_excess_cv2() {
        assert_eq!(renewal_excess(1.0, 3.0), 0.0);
        assert_eq!(renewal_excess(0.25, 3.0), 0.0);
        // Long windows: m(t) − λt → (c_a² − 1)/2.
        for ca2 in [4.0, 16.0] {
            let long = renewal_excess(ca2, 200.0);
            assert!(
                (long - (ca2 - 1.0) / 2.0).abs() < 0.05 * ca2,
                "{ca2}: {long}"
            );
        }
        // c_a² = 4, one mean gap: gamma(¼) gaps, P(j/4, 1/4) summed over j,
        // less 1 (≈ 1.15 by the series summed independently).
        let one_gap = renewal_excess(4.0, 1.0);
        assert!(one_gap > 0.9 && one_gap < 1.3, "{one_gap}");
        // Burstier streams bring more clump-mates, and longer windows more.
        assert!(renewal_excess(16.0, 1.0) > renewal_excess(4.0, 1.0));
        assert!(renewal_excess(16.0, 2.0) > renewal_excess(16.0, 0.5));
        // Capped: the same below the cap, the cap above it.
        assert_eq!(renewal_excess_up_to(16.0, 1.0, 1.0), 1.0);
        let below = renewal_excess_up_to(16.0, 1.0, 100.0);
        assert!((below - renewal_excess(16.0, 1.0)).abs() < 1e-12);
    }

    #[test]
    fn normal_helpers_match_known_values() {
        assert!((normal_quantile(0.99) - Z99).abs() < 1e-3);
        assert!((normal_quantile(0.5)).abs() < 1e-9);
        assert!((normal_tail(Z99) - 0.01).abs() < 1e-4);
        assert!((normal_tail(0.0) - 0.5).abs() < 1e-7);
        // A lognormal's p99 from its mean and the cv² fitted to that p99.
        let cv2 = lognormal_cv2(250.0, 1000.0);
        assert!((lognormal_quantile(250.0, cv2, 0.99) / 1000.0 - 1.0).abs() < 2e-3);
    }

    #[test]
    fn lognormal_cv2_inverts_the_p99() {
        // σ = 0.5: mean/p99 ratio exp(2.326·0.5 − 0.125); cv² = e^{0.25} − 1.
        let ratio = (Z99 * 0.5 - 0.125f64).exp();
        let cv2 = lognormal_cv2(1000.0, 1000.0 * ratio);
        assert!((cv2 - (0.25f64.exp() - 1.0)).abs() < 1e-9, "{cv2}");
        assert_eq!(lognormal_cv2(1000.0, 1000.0), 0.0);
    }

    #[test]
    fn incomplete_gamma_matches_closed_forms() {
        // Γ(5) = 24, Γ(1/2) = √π.
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
        assert!(
            (ln_gamma(0.0625) - 2.739_631_621_946_204).abs() < 1e-12,
            "{}",
            ln_gamma(0.0625)
        );
        for x in [0.01, 0.5, 1.0, 3.0, 20.0] {
            // Shape 1 is the exponential: P = 1 − e^(−x).
            assert!((gamma_p(1.0, x) - (1.0 - (-x).exp())).abs() < 1e-12, "{x}");
            // Integer shape n: P(n, x) = P(Poisson(x) ≥ n).
            let poisson_below_3 = (-x).exp() * (1.0 + x + x * x / 2.0);
            assert!(
                (gamma_p(3.0, x) - (1.0 - poisson_below_3)).abs() < 1e-12,
                "{x}"
            );
        }
        // Shape 1/2: P(1/2, x) = erf(√x); erf(1) = 0.842700792949715.
        assert!((gamma_p(0.5, 1.0) - 0.842_700_792_949_715).abs() < 1e-12);
        assert_eq!(gamma_p(2.0, 0.0), 0.0);
    }
}
