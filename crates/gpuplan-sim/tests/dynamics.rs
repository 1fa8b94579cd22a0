//! Fleets that change while the simulation runs: arrival rates that follow a
//! curve, target-tracking autoscaling, replicas lost and replaced, timeouts.

use gpuplan_core::{IterationWork, Slo};
use gpuplan_sim::{
    simulate, ArrivalProcess, Autoscale, ClosedLoop, CostModel, Dynamics, EngineConfig, Failures,
    PromptSteps, RateCurve, Router, SimConfig, SimResult, Stop, SyntheticTraffic, TokenLengths,
    Traffic, VLLM_BLOCK_TOKENS,
};

/// 10 ms a step plus 20 µs per prompt token: a replica with 32 slots and
/// 100-token answers serves about 30 requests/s.
struct Linear;

impl CostModel for Linear {
    fn iteration_s(&self, work: &IterationWork) -> f64 {
        0.01 + 2e-5 * work.prefill_tokens
    }
}

fn config(replicas: u32, dynamics: Dynamics) -> SimConfig {
    SimConfig {
        replicas,
        engine: EngineConfig {
            max_num_seqs: 32,
            max_batched_tokens: 4096,
            kv_cache_tokens: 1 << 22,
            block_tokens: VLLM_BLOCK_TOKENS,
            prompts: PromptSteps::BesideDecodes,
        },
        router: Router::LeastOutstanding,
        warmup_fraction: 0.0,
        slo: Slo {
            ttft_ms_p99: Some(2000.0),
            ..Slo::default()
        },
        usd_per_hour: Some(f64::from(replicas) * 2.0),
        seed: 5,
        dynamics,
    }
}

fn traffic(rate: f64, curve: Option<RateCurve>, stop: Stop) -> Traffic {
    Traffic::Synthetic(SyntheticTraffic {
        requests_per_s: rate,
        rate_curve: curve,
        clients: None,
        arrival: ArrivalProcess::Poisson,
        input_tokens: TokenLengths::Fixed(200),
        output_tokens: TokenLengths::Exponential { mean: 100.0 },
        max_context_tokens: 1 << 16,
        stop,
    })
}

/// Every arrival ends completed, rejected, timed out or still in flight.
fn conserved(r: &SimResult) {
    assert_eq!(
        r.arrivals,
        r.requests_completed + r.rejected + r.timed_out + r.in_flight,
        "{r:#?}"
    );
}

#[test]
fn arrivals_follow_a_rate_curve() {
    // 0–100 s at 5/s, 100–200 s at 50/s, then 0: about 5500 arrivals, in order.
    let curve = RateCurve::parse("c.csv", "time_s,requests_per_s\n0,5\n100,50\n200,0\n").unwrap();
    let r = simulate(
        &Linear,
        &config(4, Dynamics::default()),
        &traffic(1.0, Some(curve), Stop::Duration(1000.0)),
    )
    .unwrap();
    conserved(&r);
    // Poisson count of mean 5500: sd 74, so ±3 % is 2.2 sd.
    let expected = 5.0 * 100.0 + 50.0 * 100.0;
    assert!(
        (r.arrivals as f64 / expected - 1.0).abs() < 0.03,
        "{}",
        r.arrivals
    );
}

#[test]
fn lost_replicas_retry_their_requests_and_nothing_vanishes() {
    let dynamics = Dynamics {
        failures: Some(Failures {
            per_replica_per_hour: 60.0,
            replacement_delay_s: 30.0,
        }),
        ..Dynamics::default()
    };
    let t = traffic(40.0, None, Stop::Requests(40_000));
    let r = simulate(&Linear, &config(3, dynamics), &t).unwrap();
    conserved(&r);
    assert!(r.replica_losses > 5, "{}", r.replica_losses);
    assert!(r.retried > 0);
    assert_eq!(r.in_flight, 0, "the drain finishes every retried request");
    // The same seed gives the same losses.
    let again = simulate(&Linear, &config(3, dynamics), &t).unwrap();
    assert_eq!(r, again);
    // Losses cost latency against the same fleet that never fails.
    let steady = simulate(&Linear, &config(3, Dynamics::default()), &t).unwrap();
    assert!(r.e2e_ms.p99 > steady.e2e_ms.p99);
    assert_eq!(steady.replica_losses, 0);
}

#[test]
fn requests_with_no_replica_up_time_out() {
    // One replica, lost about every 2 minutes, replaced after 10 minutes;
    // requests give up after 60 s without a replica.
    let dynamics = Dynamics {
        failures: Some(Failures {
            per_replica_per_hour: 30.0,
            replacement_delay_s: 600.0,
        }),
        request_timeout_s: Some(60.0),
        ..Dynamics::default()
    };
    let t = traffic(5.0, None, Stop::Duration(3600.0));
    let r = simulate(&Linear, &config(1, dynamics), &t).unwrap();
    conserved(&r);
    assert!(r.timed_out > 0, "{r:#?}");
    assert!(r.goodput < 0.9);
}

#[test]
fn autoscaling_follows_a_daily_curve_and_costs_less_than_the_peak_fleet() {
    // A day compressed into 2 hours: a curve with a 60/s peak and a 20/s
    // mean, repeating every 7200 s.
    let day = RateCurve::diurnal(60.0, 20.0).unwrap();
    let rows: String = (0..120)
        .map(|m| {
            let t = f64::from(m) * 720.0;
            format!("{},{}\n", f64::from(m) * 60.0, day.rate_at(t))
        })
        .collect();
    let curve = RateCurve::parse("day.csv", &format!("time_s,requests_per_s\n{rows}")).unwrap();
    let t = traffic(1.0, Some(curve), Stop::Duration(7200.0));
    // The fixed fleet sized for the peak: 60/s over ~30/s per replica at 70 %.
    let peak_fleet = 3;
    let fixed = simulate(&Linear, &config(peak_fleet, Dynamics::default()), &t).unwrap();
    let dynamics = Dynamics {
        autoscale: Some(Autoscale {
            min_replicas: 1,
            max_replicas: 6,
            target_outstanding: 20.0,
            interval_s: 15.0,
            scale_up_delay_s: 120.0,
            cooldown_s: 300.0,
        }),
        sample_every_s: Some(60.0),
        ..Dynamics::default()
    };
    let scaled = simulate(&Linear, &config(peak_fleet, dynamics), &t).unwrap();
    conserved(&fixed);
    conserved(&scaled);
    assert!(fixed.goodput > 0.99, "{}", fixed.goodput);
    assert!(scaled.goodput > 0.95, "{}", scaled.goodput);
    // Fewer replica-hours than the peak fleet kept all day.
    assert!(
        scaled.replica_hours < 0.8 * fixed.replica_hours,
        "{} vs {}",
        scaled.replica_hours,
        fixed.replica_hours
    );
    assert!(scaled.cost_usd.unwrap() < fixed.cost_usd.unwrap());
    assert!(scaled.mean_replicas < f64::from(scaled.peak_replicas));
    // The fleet follows the traffic: more replicas when the rate is high.
    let ts = &scaled.timeseries;
    assert!(ts.len() >= 100, "{}", ts.len());
    let busy: Vec<_> = ts.iter().filter(|p| p.arrival_rate > 45.0).collect();
    let quiet: Vec<_> = ts.iter().filter(|p| p.arrival_rate < 5.0).collect();
    let mean_up = |v: &[&gpuplan_sim::TimePoint]| {
        v.iter().map(|p| f64::from(p.replicas_up)).sum::<f64>() / v.len() as f64
    };
    assert!(!busy.is_empty() && !quiet.is_empty());
    assert!(mean_up(&busy) > mean_up(&quiet) + 1.0);
}

#[test]
fn bad_dynamics_are_refused() {
    let t = traffic(5.0, None, Stop::Requests(100));
    let bad = [
        Dynamics {
            autoscale: Some(Autoscale {
                min_replicas: 3,
                max_replicas: 2,
                target_outstanding: 10.0,
                interval_s: 10.0,
                scale_up_delay_s: 0.0,
                cooldown_s: 0.0,
            }),
            ..Dynamics::default()
        },
        Dynamics {
            failures: Some(Failures {
                per_replica_per_hour: -1.0,
                replacement_delay_s: 0.0,
            }),
            ..Dynamics::default()
        },
        Dynamics {
            request_timeout_s: Some(0.0),
            ..Dynamics::default()
        },
    ];
    for d in bad {
        let err = simulate(&Linear, &config(1, d), &t).unwrap_err();
        assert!(err.to_string().contains("expected"), "{err}");
    }
}

#[test]
fn closed_loop_users_obey_littles_law() {
    // N users, think time Z: throughput X = N / (R + Z), R the mean response time.
    for (users, think_s) in [(16u32, 0.0), (64, 2.0)] {
        let t = Traffic::Synthetic(SyntheticTraffic {
            requests_per_s: 1.0,
            rate_curve: None,
            clients: Some(ClosedLoop {
                users,
                think_time_s: think_s,
            }),
            arrival: ArrivalProcess::Poisson,
            input_tokens: TokenLengths::Fixed(200),
            output_tokens: TokenLengths::Exponential { mean: 100.0 },
            max_context_tokens: 1 << 16,
            stop: Stop::Requests(20_000),
        });
        let mut cfg = config(1, Dynamics::default());
        cfg.warmup_fraction = 0.1;
        let r = simulate(&Linear, &cfg, &t).unwrap();
        conserved(&r);
        assert_eq!(r.arrivals, 20_000);
        assert_eq!(r.in_flight, 0);
        let response_s = r.e2e_ms.mean / 1e3;
        let little = f64::from(users) / (response_s + think_s);
        let x = r.throughput_requests_per_s;
        assert!(
            (x / little - 1.0).abs() < 0.03,
            "{users} users, think {think_s}: X {x:.3} vs N/(R+Z) {little:.3}"
        );
    }
}
