//! Interruptions of a long training run: hardware failures that grow with
//! the GPU count, spot preemptions per instance, the optimal checkpoint
//! interval (Young 1974, Daly 2006) and the expected wall time with
//! checkpoint writes, lost work and restarts (Daly 2006's exponential model).

use serde::Serialize;

/// Hardware interruptions per GPU-hour: 419 unexpected interruptions in 54
/// days of Llama 3 405B pre-training on 16,384 H100 GPUs (Meta, "The Llama 3
/// Herd of Models", arXiv:2407.21783, §3.3.4).
pub const GPU_FAILURES_PER_GPU_HOUR: f64 = 419.0 / (54.0 * 24.0 * 16_384.0);

/// Young/Daly first-order optimal checkpoint interval, seconds of work
/// between checkpoints: √(2·δ·M) for checkpoint write time δ and mean time
/// between interruptions M (Young 1974; Daly 2006, eq. 7 to first order).
pub fn young_daly_interval_s(checkpoint_s: f64, mtbi_s: f64) -> f64 {
    (2.0 * checkpoint_s * mtbi_s).sqrt()
}

/// Expected wall time to finish `solve_s` of work checkpointing every `tau_s`
/// (write time `checkpoint_s`), restarting in `restart_s` after each of the
/// interruptions that arrive at mean interval `mtbi_s` (Poisson):
/// M·e^{R/M}·(e^{(τ+δ)/M} − 1)·T/τ (Daly 2006, eq. 13). Without interruptions
/// it is T·(1 + δ/τ).
pub fn expected_wall_time_s(
    solve_s: f64,
    tau_s: f64,
    checkpoint_s: f64,
    restart_s: f64,
    mtbi_s: f64,
) -> f64 {
    if !mtbi_s.is_finite() {
        return solve_s * (1.0 + checkpoint_s / tau_s);
    }
    let m = mtbi_s;
    m * (restart_s / m).exp() * ((tau_s + checkpoint_s) / m).exp_m1() * solve_s / tau_s
}

/// How a run fares under interruptions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resilience {
    /// Interruptions per hour of the whole job (failures + preemptions).
    pub interruptions_per_hour: f64,
    /// Checkpoint interval, minutes of work.
    pub checkpoint_interval_min: f64,
    /// Time to write one checkpoint, seconds.
    pub checkpoint_write_s: f64,
    /// Expected wall time, hours.
    pub wall_hours: f64,
    /// Wall time over ideal time (≥ 1).
    pub overhead_factor: f64,
}

/// Inputs of [`resilience`].
#[derive(Debug, Clone, Copy)]
pub struct ResilienceInput {
    /// Ideal compute time, seconds.
    pub solve_s: f64,
    /// GPUs.
    pub gpus: f64,
    /// Instances.
    pub instances: f64,
    /// Preemptions per instance-hour (0 on demand).
    pub preemptions_per_instance_hour: f64,
    /// Seconds to write one checkpoint.
    pub checkpoint_s: f64,
    /// Seconds to get going again (re-provision + reload).
    pub restart_s: f64,
    /// A fixed checkpoint interval, seconds (None = Young/Daly).
    pub interval_s: Option<f64>,
}

/// Expected wall time and the checkpoint interval of a run.
pub fn resilience(input: &ResilienceInput) -> Resilience {
    let per_hour = input.gpus * GPU_FAILURES_PER_GPU_HOUR
        + input.instances * input.preemptions_per_instance_hour;
    let mtbi_s = if per_hour > 0.0 {
        3600.0 / per_hour
    } else {
        f64::INFINITY
    };
    let tau = input.interval_s.unwrap_or_else(|| {
        if mtbi_s.is_finite() {
            young_daly_interval_s(input.checkpoint_s, mtbi_s).max(60.0)
        } else {
            input.solve_s.max(60.0)
        }
    });
    let wall = expected_wall_time_s(
        input.solve_s,
        tau,
        input.checkpoint_s,
        input.restart_s,
        mtbi_s,
    );
    Resilience {
        interruptions_per_hour: per_hour,
        checkpoint_interval_min: tau / 60.0,
        checkpoint_write_s: input.checkpoint_s,
        wall_hours: wall / 3600.0,
        overhead_factor: if input.solve_s > 0.0 {
            wall / input.solve_s
        } else {
            1.0
        },
    }
}

/// The preemption rate (per instance-hour) at which spot stops paying off:
/// spot price × expected spot wall time = on-demand price × on-demand wall
/// time. None when spot is dearer even without preemptions, or still cheaper
/// at 60 preemptions per instance-hour.
pub fn spot_break_even_rate(
    input: &ResilienceInput,
    spot_price: f64,
    on_demand_price: f64,
) -> Option<f64> {
    let with_rate = |rate: f64| {
        resilience(&ResilienceInput {
            preemptions_per_instance_hour: rate,
            ..*input
        })
        .wall_hours
    };
    let on_demand_cost = on_demand_price * with_rate(0.0);
    let spot_cost = |rate: f64| spot_price * with_rate(rate);
    if spot_cost(0.0) >= on_demand_cost {
        return None;
    }
    let (mut lo, mut hi) = (0.0, 60.0);
    if spot_cost(hi) < on_demand_cost {
        return None;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if spot_cost(mid) < on_demand_cost {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn young_daly_matches_the_closed_form_and_minimises_the_wall_time() {
        let (delta, m) = (300.0, 36_000.0);
        let tau = young_daly_interval_s(delta, m);
        assert!((tau - (2.0f64 * 300.0 * 36_000.0).sqrt()).abs() < 1e-9);
        // The first-order optimum lies near the true minimum of Daly's model.
        let wall = |t: f64| expected_wall_time_s(1e6, t, delta, 600.0, m);
        let best = (1..2000)
            .map(|i| i as f64 * 10.0)
            .min_by(|a, b| wall(*a).total_cmp(&wall(*b)))
            .unwrap();
        assert!((best - tau).abs() / tau < 0.15, "{best} vs {tau}");
        assert!(wall(tau) < wall(tau * 3.0) && wall(tau) < wall(tau / 3.0));
    }

    #[test]
    fn wall_time_without_interruptions_is_work_plus_checkpoints() {
        let w = expected_wall_time_s(3600.0, 600.0, 60.0, 300.0, f64::INFINITY);
        assert!((w - 3600.0 * 1.1).abs() < 1e-9);
        // Daly's model tends to it as interruptions vanish.
        let rare = expected_wall_time_s(3600.0, 600.0, 60.0, 300.0, 1e12);
        assert!((rare - w).abs() / w < 1e-6);
    }

    #[test]
    fn break_even_rate_makes_spot_and_on_demand_cost_the_same() {
        let input = ResilienceInput {
            solve_s: 100.0 * 3600.0,
            gpus: 64.0,
            instances: 8.0,
            preemptions_per_instance_hour: 0.0,
            checkpoint_s: 120.0,
            restart_s: 900.0,
            interval_s: None,
        };
        let rate = spot_break_even_rate(&input, 40.0, 100.0).unwrap();
        let at = |r: f64| {
            resilience(&ResilienceInput {
                preemptions_per_instance_hour: r,
                ..input
            })
            .wall_hours
        };
        assert!((40.0 * at(rate) - 100.0 * at(0.0)).abs() / (100.0 * at(0.0)) < 1e-3);
        assert!(spot_break_even_rate(&input, 120.0, 100.0).is_none());
    }
}
