//! Unit tests of the tail model: each step (occupancy, slot wait, prefill
//! wait, the prompts batched with a prompt, the TPOT tail) against what
//! queueing theory says it must give.

use super::slots::occupancy_peakedness;
use super::*;
use crate::calibration::Calibration;
use crate::layout::Layout;
use crate::test_support::{gpu, model};
use gpuplan_catalog::Precision;

fn h100_8b() -> Deployment {
    Deployment::new(
        &model("llama-3.1-8b"),
        gpu("H100"),
        Layout::SINGLE,
        Precision::Fp8,
        Precision::Fp8,
        &Calibration::bundled(),
    )
    .unwrap()
}

fn inputs(ca2: f64) -> TailInputs {
    TailInputs {
        input_mean: 1500.0,
        input_p99: 4000.0,
        output_mean: 60.0,
        output_p99: 200.0,
        batch: 64.0,
        max_batched_tokens: 8192.0,
        service_s: 1.5,
        ca2,
        slot_pool_replicas: 1.0,
        cs2: 1.0,
    }
}

#[test]
fn prefill_queueing_grows_with_load_and_burstiness() {
    let dep = h100_8b();
    let poisson = TailModel::new(&dep, inputs(1.0));
    let bursty = TailModel::new(&dep, inputs(9.0));
    let light = poisson.at(1.0);
    let heavy = poisson.at(25.0);
    // Slots are plentiful at both loads: the TTFT growth is prefill queueing.
    assert_eq!(heavy.slot_wait_p99_s, 0.0);
    assert!(heavy.prefill_utilization > light.prefill_utilization);
    assert!(
        heavy.ttft_p99_s > light.ttft_p99_s * 1.5,
        "{light:?} {heavy:?}"
    );
    // Bursty arrivals (cv 3) wait longer at the same rate.
    assert!(bursty.at(25.0).ttft_p99_s > heavy.ttft_p99_s * 1.5);
    assert!(bursty.at(25.0).tpot_p99_ms > heavy.tpot_p99_ms);
    // The p99 gap carries a prompt chunk: longer than the mean token time.
    assert!(heavy.itl_p99_ms > heavy.tpot_mean_ms);
    assert!(heavy.tpot_p99_ms >= heavy.tpot_mean_ms);
}

/// The rate at which `model` has this probability of a slot wait.
fn rate_with_slot_wait(model: &TailModel<'_>, probability: f64) -> f64 {
    let (mut lo, mut hi) = (0.1, 200.0);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if model.at(mid).slot_wait_probability < probability {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[test]
fn prompts_queued_for_slots_reach_the_batch_smoothed() {
    let dep = h100_8b();
    let model = TailModel::new(&dep, inputs(9.0));
    // A load where half the arrivals wait for a slot.
    let lambda = rate_with_slot_wait(&model, 0.5);
    let (tails, pace) = model.at_without_tpot_tail(lambda);
    let pace = pace.unwrap();
    let p = tails.slot_wait_probability;
    assert!((pace.admitted_ca2 - (1.0 + 8.0 * (1.0 - p))).abs() < 1e-12);
    assert!(pace.admitted_ca2 < 9.0 && pace.admitted_ca2 > 1.0);
    // Admitted in the arrivals' own bursts, the TPOT tail would be longer.
    let raw = DecodePace {
        admitted_ca2: 9.0,
        ..pace
    };
    let smoothed = model.tpot_tail(lambda, pace).p99_s();
    assert!(smoothed < model.tpot_tail(lambda, raw).p99_s());
    assert!(smoothed >= pace.tpot_mean_s);
}

#[test]
fn slots_pooled_behind_the_router_wait_less_than_one_replica_alone() {
    let dep = h100_8b();
    let alone = TailModel::new(&dep, inputs(4.0));
    let lambda = rate_with_slot_wait(&alone, 0.2);
    let one = alone.at(lambda);
    assert!(one.slot_wait_probability > 0.15, "{one:?}");
    let four = TailModel::new(
        &dep,
        TailInputs {
            slot_pool_replicas: 4.0,
            ..inputs(4.0)
        },
    )
    .at(lambda);
    // Same load per replica: a request waits only when all 4 × 64 slots
    // are full, far rarer than 64 alone (square-root staffing).
    assert!(
        four.slot_wait_probability < one.slot_wait_probability / 3.0,
        "{one:?} {four:?}"
    );
    assert!(four.slot_wait_p99_s < one.slot_wait_p99_s);
    // The prefill queue is each replica's own, but the router spreads a
    // burst's prompts over several replicas: shorter, same utilisation.
    assert!(
        four.prefill_wait_p99_s < one.prefill_wait_p99_s,
        "{one:?} {four:?}"
    );
    assert_eq!(four.prefill_utilization, one.prefill_utilization);
}

#[test]
fn the_router_spreads_bursts_of_prompts_but_not_poisson_ones() {
    let dep = h100_8b();
    let pooled = |ca2: f64, replicas: f64| {
        TailModel::new(
            &dep,
            TailInputs {
                slot_pool_replicas: replicas,
                ..inputs(ca2)
            },
        )
    };
    // Poisson arrivals split by any router stay Poisson.
    assert_eq!(pooled(1.0, 1.0).prefill_ca2(), 1.0);
    assert_eq!(pooled(1.0, 16.0).prefill_ca2(), 1.0);
    // c_a² = 9 over 4 replicas keeps half the excess: 1 + 8/2.
    assert!((pooled(9.0, 4.0).prefill_ca2() - 5.0).abs() < 1e-12);
    // More replicas, smoother prompts, never below Poisson.
    let mut last = f64::INFINITY;
    for n in [1.0, 2.0, 4.0, 8.0, 64.0] {
        let ca2 = pooled(9.0, n).prefill_ca2();
        assert!(ca2 < last && ca2 > 1.0, "{n} replicas: {ca2}");
        last = ca2;
    }
}

#[test]
fn the_router_deals_each_replica_its_turn_of_the_prompts() {
    let dep = h100_8b();
    let model = |ca2: f64, replicas: f64| {
        TailModel::new(
            &dep,
            TailInputs {
                slot_pool_replicas: replicas,
                ..inputs(ca2)
            },
        )
    };
    // One replica keeps its stream's burstiness.
    for ca2 in [0.25, 1.0, 9.0] {
        assert_eq!(model(ca2, 1.0).prefill_queue_ca2(), ca2);
    }
    // Behind the router, a replica's prompts are its 1/n turn of the stream
    // (c_a²/n) plus what the departures' replacements add: Poisson over 4
    // replicas is 1/4 + 3/4 · 0.15, far smoother than Poisson.
    let poisson4 = model(1.0, 4.0).prefill_queue_ca2();
    assert!(
        (poisson4 - (0.25 + 0.75 * 0.15)).abs() < 1e-12,
        "{poisson4}"
    );
    // Whatever the output lengths' spread (the simulator's finding).
    for cs2 in [0.03, 0.33, 1.6] {
        let m = TailModel::new(
            &dep,
            TailInputs {
                slot_pool_replicas: 4.0,
                cs2,
                ..inputs(1.0)
            },
        );
        assert_eq!(m.prefill_queue_ca2(), poisson4);
    }
    // More replicas never make a Poisson or bursty stream's prompts burstier
    // (a very smooth one gains some of the departures' dispersion).
    for ca2 in [1.0, 9.0] {
        let mut last = f64::INFINITY;
        for n in [1.0, 2.0, 4.0, 16.0] {
            let c = model(ca2, n).prefill_queue_ca2();
            assert!(c <= last, "c_a² {ca2}, {n} replicas: {c} > {last}");
            last = c;
        }
    }
    // At the same load per replica, the smoother prompts wait less: the
    // same utilisation ρ and probability of waiting, a shorter wait.
    let (alone, four) = (model(1.0, 1.0), model(1.0, 4.0));
    let lambda = 25.0;
    let load = alone.occupancy(lambda).load;
    let rho = alone.prefill_utilization(lambda, &load);
    assert!(rho > 0.05 && rho < 0.95, "{rho}");
    let one = alone.prefill_wait(lambda, &load).unwrap();
    let pooled = four
        .prefill_wait(lambda, &four.occupancy(lambda).load)
        .unwrap();
    assert!((one.queue_probability - rho).abs() < 1e-12);
    assert!((pooled.queue_probability - pooled.utilization).abs() < 1e-12);
    let conditional = one.queue_conditional_mean_s;
    assert!((one.mean_s - rho * conditional).abs() < 1e-9 * conditional);
    // Allen–Cunneen: the conditional wait scales with (c_a² + c_s²)/2.
    let ratio = pooled.queue_conditional_mean_s / one.queue_conditional_mean_s;
    let input_cv2 = alone.input_cv2;
    let expected = (poisson4 + input_cv2) / (1.0 + input_cv2);
    assert!(
        (ratio - expected).abs() < 0.05 * expected,
        "{ratio} {expected}"
    );
    // Its p99 is where the exponential tail crosses 1 %.
    assert!((pooled.exceeds(pooled.p99_s) - 0.01).abs() < 1e-9);
    assert!(pooled.p99_s < one.p99_s);
}

#[test]
fn the_p99_of_a_mixture_of_waits_shares_the_one_percent() {
    // P(W > t) = 0.02·e^(−t) has its p99 at ln 2.
    let t = wait_quantile(|t| 0.02 * (-t).exp(), 0.99, 1.0);
    assert!((t - 2f64.ln()).abs() < 1e-9, "{t}");
    // Two waits each too rare for a p99 of their own (0.6 % each) have one
    // together: 0.012·e^(−t) = 0.01 at t = ln 1.2.
    let both = wait_quantile(|t| 0.006 * (-t).exp() + 0.006 * (-t).exp(), 0.99, 1.0);
    assert!((both - 1.2f64.ln()).abs() < 1e-9, "{both}");
    assert_eq!(wait_quantile(|t| 0.006 * (-t).exp(), 0.99, 1.0), 0.0);
    // The bracket grows until it holds the answer.
    let far = wait_quantile(|t| (-t / 1000.0).exp(), 0.99, 1.0);
    assert!((far - 1000.0 * 100f64.ln()).abs() < 1e-6 * far, "{far}");
}

#[test]
fn the_prompts_batched_with_a_prompt_have_the_renewal_counts_tail() {
    let dep = h100_8b();
    let model = |ca2: f64| {
        TailModel::new(
            &dep,
            TailInputs {
                input_mean: 100.0,
                input_p99: 300.0,
                ..inputs(ca2)
            },
        )
    };
    let poisson = model(1.0);
    let lambda = 40.0;
    let load = poisson.occupancy(lambda).load;
    // Poisson: P(N ≥ j) is the Poisson tail of λ·w, w uniform on (0, t̄);
    // the p99 is the smallest j with that tail ≤ 1 %.
    let poisson_at_least = |j: u32| {
        (0..2000)
            .map(|m| {
                let mean = lambda * load.tpot_mean_s * (f64::from(m) + 0.5) / 2000.0;
                let below: f64 = (0..j)
                    .map(|k| {
                        (-mean).exp() * mean.powi(k as i32)
                            / (1..=k).map(f64::from).product::<f64>()
                    })
                    .sum();
                1.0 - below
            })
            .sum::<f64>()
            / 2000.0
    };
    let p99 = poisson.co_batched_prompts_p99(lambda, &load);
    assert!(p99 >= 1.0, "{p99}");
    assert!(poisson_at_least(p99 as u32) > 0.01 * 0.98);
    assert!(poisson_at_least(p99 as u32 + 1) <= 0.01 * 1.02);
    // Bursts (c_a² = 9) bring a clump: a far longer tail at the same rate.
    let bursty = model(9.0);
    let bursty_load = bursty.occupancy(lambda).load;
    assert!(bursty.co_batched_prompts_p99(lambda, &bursty_load) >= p99 + 3.0);
    // Never more prompts than fill the budget beside the prompt.
    let flood = model(1e4);
    let flood_load = flood.occupancy(lambda).load;
    let fill = ((flood_load.budget - 100.0) / 100.0).ceil();
    assert!(flood.co_batched_prompts_p99(lambda, &flood_load) <= fill);
}

#[test]
fn a_full_batch_frees_slots_at_its_own_pace() {
    // Once every slot is busy, slots free up at μ = c / S(c): a full
    // batch's slot time is its iterations (one prompt chunk, 59 decodes) at
    // the mean iteration time, every prompt's prefill spread over the
    // iterations (Little's law over a batch that always holds c; a request
    // waits for prefill compute before it takes a slot), with prompts
    // entering at the departure rate itself (μ·S(c; μ) = c).
    let dep = h100_8b();
    let model = TailModel::new(&dep, inputs(4.0));
    let lambda = rate_with_slot_wait(&model, 0.05);
    let occupancy = model.occupancy(lambda);
    let full = model.full_batch_departures(lambda).unwrap();
    let slot_full_s = |admitted: f64| 60.0 * model.load(admitted, 64.0).tpot_mean_s;
    assert!((full.rate * slot_full_s(full.rate) / 64.0 - 1.0).abs() < 1e-3);
    assert!((full.decode_share - 59.0 / 60.0).abs() < 1e-12);
    // Above the arrival rate (the queue is stable), below what a full batch
    // fed at the arrival rate would do, and below the mean occupancy's pace.
    assert!(full.rate > lambda);
    assert!(full.rate < 64.0 / slot_full_s(lambda));
    assert!(full.rate < 64.0 / occupancy.slot_s);
    assert!(full.decode_share > 0.0 && full.decode_share < 1.0);
    // While the slots are full, admissions follow departures: the arrivals'
    // bursts do not reach the full batch's pace.
    let poisson = TailModel::new(&dep, inputs(1.0));
    let poisson_full = poisson.full_batch_departures(lambda).unwrap();
    assert!((poisson_full.rate / full.rate - 1.0).abs() < 1e-9);
    // The conditional wait is Köllerström's heavy-traffic exponential:
    // (c_a² + c_s²·share²)/2 over μ − λ.
    let wait = model.slot_wait(lambda, &occupancy);
    let conditional = wait.mean_s / wait.probability;
    let expected = (4.0 + 1.0 * full.decode_share.powi(2)) / 2.0 / (full.rate - lambda);
    assert!(
        (conditional / expected - 1.0).abs() < 1e-9,
        "{conditional} {expected}"
    );
    // Fixed outputs from smooth arrivals: only the arrivals' c_a² is left,
    // lowered by Krämer–Langenbach-Belz's factor at the slots' utilisation.
    let smooth = TailModel::new(
        &dep,
        TailInputs {
            ca2: 0.25,
            cs2: 0.0,
            ..inputs(0.25)
        },
    );
    let lambda = rate_with_slot_wait(&smooth, 0.05);
    let occupancy = smooth.occupancy(lambda);
    let wait = smooth.slot_wait(lambda, &occupancy);
    let full = smooth.full_batch_departures(lambda).unwrap();
    let conditional = wait.mean_s / wait.probability;
    let rho = lambda * occupancy.slot_s / 64.0;
    let klb = (-2.0 * (1.0 - rho) * 0.75f64.powi(2) / (3.0 * rho * 0.25)).exp();
    assert!(klb < 1.0);
    assert!((conditional * (full.rate - lambda) - 0.125 * klb).abs() < 1e-9);
}

#[test]
fn smooth_arrivals_wait_less_than_the_heavy_traffic_formula_away_from_saturation() {
    use super::slots::smooth_arrivals_correction as klb;
    // Poisson or burstier: no correction.
    assert_eq!(klb(0.5, 1.0, 0.5), 1.0);
    assert_eq!(klb(0.5, 4.0, 0.5), 1.0);
    // Smooth: below one, more so the smoother and the lighter the load,
    // and none at saturation.
    assert!(klb(0.5, 0.25, 0.5) < 1.0);
    assert!(klb(0.5, 0.1, 0.5) < klb(0.5, 0.5, 0.5));
    assert!(klb(0.3, 0.25, 0.5) < klb(0.9, 0.25, 0.5));
    assert!((klb(1.0, 0.25, 0.5) - 1.0).abs() < 1e-12);
    // D/D/1-like limit stays finite and positive.
    assert!(klb(0.5, 0.0, 0.0) >= 0.0);
}

#[test]
fn a_prompt_token_is_priced_over_the_chunks_poisson_arrivals_make() {
    let dep = h100_8b();
    let model = TailModel::new(&dep, inputs(1.0));
    let (in_flight, budget) = (32.0, 8192.0);
    let t0 = model.iteration_s(in_flight, 0.0);
    let one_prompt = model.prefill_per_token_s(in_flight, 1500.0, t0);
    // Few arrivals per iteration: nearly always one prompt per chunk.
    let sparse = model.arrivals_per_token_s(0.01 / t0, in_flight, t0, budget);
    assert!(
        (sparse / one_prompt - 1.0).abs() < 0.01,
        "{sparse} {one_prompt}"
    );
    // About one arrival per iteration: the token-weighted mean over chunks of
    // k ~ Poisson(1) prompts, summed directly here.
    let mut weighted = 0.0;
    let mut weight = 0.0;
    let mut p = (-1.0f64).exp();
    for k in 1..40 {
        p *= 1.0 / k as f64;
        let chunk = (k as f64 * 1500.0).min(budget);
        weighted += k as f64 * p * model.prefill_per_token_s(in_flight, chunk, t0);
        weight += k as f64 * p;
    }
    let one_per_iteration = model.arrivals_per_token_s(1.0 / t0, in_flight, t0, budget);
    assert!((one_per_iteration / (weighted / weight) - 1.0).abs() < 1e-3);
    // Many arrivals: near the cost of the mean chunk, continuous where the
    // Poisson sum hands over to the normal limit.
    let below = model.arrivals_per_token_s(15.99 / t0, in_flight, t0, 1e9);
    let above = model.arrivals_per_token_s(16.01 / t0, in_flight, t0, 1e9);
    assert!((below / above - 1.0).abs() < 0.01, "{below} {above}");
}

#[test]
fn prompts_batched_with_a_prompt_grow_with_the_rate_and_the_bursts() {
    let dep = h100_8b();
    let poisson = TailModel::new(&dep, inputs(1.0));
    let bursty = TailModel::new(&dep, inputs(9.0));
    let at = |model: &TailModel<'_>, lambda: f64| {
        let load = model.occupancy(lambda).load;
        (model.co_batched_prefill_s(lambda, &load), load)
    };
    // Poisson: λ·t̄/2 prompts of the mean length at the per-token cost.
    let (light, load) = at(&poisson, 2.0);
    let expected = 2.0 * load.tpot_mean_s / 2.0 * 1500.0 * load.per_token_s;
    assert!((light - expected).abs() < 1e-12, "{light} vs {expected}");
    assert!(at(&poisson, 20.0).0 > light);
    // c_a² = 9 brings (9 − 1)/2 = 4 more prompts right after an arrival
    // (the budget of 8192 tokens leaves room for them).
    let (burst, load) = at(&bursty, 2.0);
    let extra = burst - 2.0 * load.tpot_mean_s / 2.0 * 1500.0 * load.per_token_s;
    assert!(
        (extra - 4.0 * 1500.0 * load.per_token_s).abs() < 1e-9,
        "{extra}"
    );
    // Never more than the iteration's budget beside the prompt.
    let (flood, load) = at(&TailModel::new(&dep, inputs(1e4)), 2.0);
    assert!(flood <= (load.budget - 1500.0) * load.per_token_s + 1e-12);
}

#[test]
fn occupancy_peakedness_is_whitts_grown_by_the_decode_feedback() {
    // Poisson, no feedback: the M/G/∞ count is Poisson whatever ψ.
    assert_eq!(occupancy_peakedness(1.0, 0.3, 0.0), 1.0);
    assert_eq!(occupancy_peakedness(1.0, 0.9, 0.0), 1.0);
    // Whitt: 1 + (c_a² − 1)·ψ; exponential slots (ψ = ½) at c_a² = 9 → 5.
    assert!((occupancy_peakedness(9.0, 0.5, 0.0) - 5.0).abs() < 1e-12);
    // Elasticity e divides by 1 − e.
    assert!((occupancy_peakedness(9.0, 0.5, 0.5) - 10.0).abs() < 1e-12);
    // Smooth arrivals stay above a floor.
    assert!(occupancy_peakedness(0.0, 1.0, 0.0) > 0.0);
}

#[test]
fn slot_waits_of_poisson_arrivals_ignore_the_output_spread_and_bursts_raise_them() {
    // M/G/∞ insensitivity: with Poisson arrivals the occupancy's spread,
    // hence P(wait), does not depend on how output lengths vary; bursty
    // arrivals swing it more when outputs are alike (ψ near 1) than when
    // they vary widely (ψ smaller: long requests outlive the burst).
    let dep = h100_8b();
    let with_outputs = |ca2: f64, output_p99: f64| TailInputs {
        output_p99,
        ..inputs(ca2)
    };
    let at = |i: TailInputs, lambda: f64| TailModel::new(&dep, i).at(lambda);
    let lambda = rate_with_slot_wait(&TailModel::new(&dep, with_outputs(1.0, 61.0)), 0.05);
    let poisson_alike = at(with_outputs(1.0, 61.0), lambda);
    let poisson_spread = at(with_outputs(1.0, 240.0), lambda);
    // The spread moves the mean slot time a little (a longer tail at the
    // same mean), not the peakedness: P(wait) stays within the change in load.
    let ratio = poisson_spread.slot_wait_probability / poisson_alike.slot_wait_probability;
    assert!(
        (0.5..2.0).contains(&ratio),
        "{poisson_alike:?} {poisson_spread:?}"
    );
    let bursty_alike = at(with_outputs(9.0, 61.0), lambda);
    let bursty_spread = at(with_outputs(9.0, 240.0), lambda);
    assert!(bursty_alike.slot_wait_probability > 3.0 * poisson_alike.slot_wait_probability);
    assert!(bursty_alike.slot_wait_probability > bursty_spread.slot_wait_probability);
}

#[test]
fn a_lighter_load_is_never_less_stable_for_one_token_prompts_on_a_pipeline() {
    // Fuzzing found (fuzz/regressions/plan_structured): one-token prompts
    // on a PP2 replica were stable at 9,700 req/s and unstable at 4,000,
    // because a lone prompt's fixed prefill cost was charged per token.
    let dep = Deployment::new(
        &model("qwen3-235b-a22b"),
        gpu("H100"),
        Layout { tp: 4, pp: 2 },
        Precision::Fp8,
        Precision::Fp8,
        &Calibration::bundled(),
    )
    .unwrap();
    let short = TailInputs {
        input_mean: 1.0,
        input_p99: 8.0,
        output_mean: 1.0,
        output_p99: 1.0,
        batch: 1024.0,
        max_batched_tokens: 23_900.0,
        service_s: 0.038,
        ca2: 1.0,
        slot_pool_replicas: 1.0,
        cs2: 0.0,
    };
    let model = TailModel::new(&dep, short);
    let top = model.at(9_700.0);
    assert!(top.ttft_p99_s.is_finite(), "{top:?}");
    for lambda in [10.0, 100.0, 1_000.0, 2_000.0, 4_000.0, 6_000.0] {
        let t = model.at(lambda);
        assert!(
            t.prefill_utilization < 1.0 && t.ttft_p99_s.is_finite(),
            "unstable at {lambda} but not at 9,700 req/s: {t:?}"
        );
    }
}

#[test]
fn prefill_utilization_grows_with_the_load_for_few_token_moe_prompts() {
    // Fuzzing found (fuzz/regressions/plan_structured, crash-0323…):
    // 12-token prompts on a MoE replica priced per token at the arrivals'
    // own small chunk were unstable at 483 req/s and stable at 1,124. A
    // backlogged queue runs budget-full iterations: its utilisation is
    // the load times a cost that does not fall as the load rises.
    for (tp, pp) in [(4, 1), (1, 4)] {
        let dep = Deployment::new(
            &model("qwen3-235b-a22b"),
            gpu("H200"),
            Layout { tp, pp },
            Precision::Fp8,
            Precision::Fp8,
            &Calibration::bundled(),
        )
        .unwrap();
        let model = TailModel::new(
            &dep,
            TailInputs {
                input_mean: 12.0,
                input_p99: 96.0,
                output_mean: 1.0,
                output_p99: 1.0,
                batch: 512.0,
                max_batched_tokens: 23_902.0,
                service_s: 0.17,
                ca2: 1.0,
                slot_pool_replicas: 1.0,
                cs2: 0.0,
            },
        );
        let mut last = 0.0;
        for lambda in [1.0, 10.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1_200.0] {
            let t = model.at(lambda);
            assert!(
                t.prefill_utilization >= last * (1.0 - 1e-9),
                "TP{tp} PP{pp}: prefill {:.3} busy at {lambda} req/s, {last:.3} at a lighter load",
                t.prefill_utilization
            );
            last = t.prefill_utilization;
        }
    }
}

#[test]
fn unloaded_replica_ttft_is_the_prompt_prefill() {
    let dep = h100_8b();
    let t = TailModel::new(&dep, inputs(1.0)).at(1e-6);
    assert!(t.prefill_wait_p99_s == 0.0 && t.slot_wait_p99_s == 0.0);
    // The p99 prompt's prefill, plus the iteration in progress when it
    // arrives (mean half an iteration, spread in quadrature).
    let boundary = 0.5 * t.tpot_mean_ms / 1e3;
    let spread = (t.prefill_p99_s - t.prefill_mean_s).hypot(boundary);
    let expected = boundary + t.prefill_mean_s + spread;
    assert!((t.ttft_p99_s - expected).abs() < 1e-9, "{t:?}");
    assert!(t.ttft_p99_s > t.prefill_p99_s && t.ttft_p99_s < t.prefill_p99_s + 2.0 * boundary);
}

#[test]
fn passes_tests_the_tpot_limit_as_the_p99_would() {
    let dep = h100_8b();
    for ca2 in [1.0, 9.0] {
        let model = TailModel::new(&dep, inputs(ca2));
        for lambda in [0.5, 5.0, 15.0, 25.0] {
            let t = model.at(lambda);
            if !t.tpot_p99_ms.is_finite() {
                continue;
            }
            // Limits on both sides of the p99, and near it (the bisection's
            // p99 sits within a nanosecond above the exact threshold).
            for factor in [0.5, 0.9, 0.999, 1.001, 1.1, 3.0] {
                let limit = t.tpot_p99_ms * factor;
                let expected = t.tpot_p99_ms <= limit;
                let got = model.passes(lambda, Some(limit), |_| true);
                assert_eq!(got, expected, "ca2 {ca2} λ {lambda} limit {limit} vs {t:?}");
            }
            // Without a limit only `accept` decides.
            assert!(model.passes(lambda, None, |_| true));
            assert!(!model.passes(lambda, Some(1e9), |_| false));
        }
    }
}

#[test]
fn saturated_prefill_is_infinite_not_negative() {
    let dep = h100_8b();
    let t = TailModel::new(&dep, inputs(1.0)).at(1e4);
    assert!(t.prefill_utilization >= 1.0);
    assert!(t.ttft_p99_s.is_infinite());
}

#[test]
fn a_requests_life_is_a_delay_cycle_so_prompt_work_stretches_its_spread() {
    // The prompts arriving while a request decodes lengthen its life, and
    // the ones arriving in that extra time lengthen it again (Takács's busy
    // period): the TPOT spread of a fixed life, grown by t̄/t0.
    let dep = h100_8b();
    let model = TailModel::new(&dep, inputs(1.0));
    let lambda = 20.0;
    let pace = model.at_without_tpot_tail(lambda).1.unwrap();
    let tail = model.tpot_tail(lambda, pace);
    let t0 = model.iteration_s(pace.in_flight, 0.0);
    let dilation = pace.tpot_mean_s / t0;
    assert!(dilation > 1.2, "{dilation}");
    assert!(pace.slot_wait_probability < 1e-3, "{pace:?}");
    let life = model.output_lives[0];
    let prompts = lambda * pace.tpot_mean_s * life;
    let dispersion = pace.admitted_ca2 + model.input_cv2;
    // Each prompt: its prefill, and one more sequence decoding beside the
    // request for as long as both run.
    let per_sequence = (model.iteration_s(pace.in_flight + 1.0, 0.0) - t0).max(0.0);
    let work = pace.per_token_s * 1500.0 + per_sequence * model.output_overlaps[0];
    let arrivals = work * (prompts * dispersion).sqrt() / life;
    let drift = per_sequence
        * super::tpot::occupancy_sd(pace.occupancy_peakedness, pace.in_flight, pace.batch);
    let sd = 1.0 / tail.points[0].0;
    // With free slots the branching's offspring is ρ = 1 − t0/t̄, so the
    // stretch is 1/(1 − ρ) = t̄/t0; a short life reaches only part of it
    // ([`super::tpot::short_life_factor`], checked term by term below).
    let rho = 1.0 - 1.0 / dilation;
    let stretch = 1.0 / (1.0 - rho * (1.0 - pace.slot_wait_probability));
    let reached = super::tpot::short_life_factor(stretch, life);
    assert!(reached < 1.0 && reached > 0.3, "{reached}");
    let expected = stretch * reached;
    assert!(
        (sd / arrivals.hypot(drift) - expected).abs() < 1e-6,
        "{sd} {expected}"
    );
    // A full batch admits one prompt per finished sequence: the prompts of
    // a life follow its iterations, and a longer life brings no more.
    let full = super::tpot::DecodePace {
        slot_wait_probability: 1.0,
        ..pace
    };
    let sd_full = 1.0 / model.tpot_tail(lambda, full).points[0].0;
    assert!(
        (sd_full / arrivals.hypot(drift) - 1.0).abs() < 1e-6,
        "{sd_full}"
    );
}

#[test]
fn each_generation_of_the_delay_cycle_finds_the_slots_full_with_p_wait() {
    use super::tpot::{delay_cycle_dilation, short_life_factor};
    // Prefill takes 3/4 of the time: free slots stretch a life 4×.
    assert!((delay_cycle_dilation(0.025, 0.1, 0.0) - 4.0).abs() < 1e-12);
    // Full slots: admissions follow departures, no stretch.
    assert!((delay_cycle_dilation(0.025, 0.1, 1.0) - 1.0).abs() < 1e-12);
    // Half the time full: offspring 3/8 a generation, 1/(1 − 3/8) = 1.6 —
    // not the 2.5 of thinning only the first generation.
    assert!((delay_cycle_dilation(0.025, 0.1, 0.5) - 1.6).abs() < 1e-12);
    // No prefill, no stretch.
    assert_eq!(delay_cycle_dilation(0.025, 0.025, 0.0), 1.0);
    // One iteration keeps the marginal variance, (1 − φ)/(1 + φ) of the
    // long-run one; long lives reach all of it; no stretch, nothing lost.
    let phi: f64 = 0.75;
    assert!((short_life_factor(4.0, 1.0) - ((1.0 - phi) / (1.0 + phi)).sqrt()).abs() < 1e-12);
    assert!(short_life_factor(4.0, 10_000.0) > 0.999);
    assert!(short_life_factor(4.0, 10.0) < short_life_factor(4.0, 40.0));
    assert!((short_life_factor(1.0, 3.0) - 1.0).abs() < 1e-12);
    // The mean of L AR(1) terms, its variance summed pair by pair:
    // Σ_a Σ_b φ^|a−b| against the long run's L(1 + φ)/(1 − φ).
    for l in [1_i32, 2, 5, 14, 60] {
        let pairs: f64 = (0..l)
            .flat_map(|a| (0..l).map(move |b| phi.powi((a - b).abs())))
            .sum();
        let long_run = f64::from(l) * (1.0 + phi) / (1.0 - phi);
        let summed = (pairs / long_run).sqrt();
        assert!(
            (short_life_factor(4.0, f64::from(l)) - summed).abs() < 1e-12,
            "{l}"
        );
    }
}

#[test]
fn another_request_decodes_beside_a_life_for_the_shorter_of_the_two() {
    let dep = h100_8b();
    let model = TailModel::new(&dep, inputs(1.0));
    let lives = model.output_lives;
    let n = lives.len() as f64;
    for (k, &life) in lives.iter().enumerate() {
        // Started at a uniform point U·L of this life: E[min(U·L, L')].
        let expected = lives
            .iter()
            .map(|&other| {
                // Numerically: the mean over U of min(U·L, L').
                (0..10_000)
                    .map(|j| ((f64::from(j) + 0.5) / 1e4 * life).min(other))
                    .sum::<f64>()
                    / 1e4
            })
            .sum::<f64>()
            / n;
        let got = model.output_overlaps[k];
        assert!(
            (got - expected).abs() < 1e-3 * life,
            "{k}: {got} vs {expected}"
        );
        assert!(got <= life / 2.0 + 1e-9);
    }
    // The longest life overlaps each shorter one for nearly all of it.
    assert!(model.output_overlaps[lives.len() - 1] > 0.5 * model.output_lives_mean);
}

#[test]
fn clumped_prompts_are_priced_in_their_clumps_chunk() {
    let dep = h100_8b();
    let model = TailModel::new(&dep, inputs(1.0));
    let lambda = 20.0;
    let occupancy = model.occupancy(lambda);
    let load = occupancy.load;
    let mean = |ca2: f64| model.clumped_tpot_mean_s(lambda, &load, occupancy.in_flight, ca2);
    // Poisson or smoother: the mean pace, unchanged.
    assert_eq!(mean(1.0), load.tpot_mean_s);
    assert_eq!(mean(0.5), load.tpot_mean_s);
    // Burstier: bigger chunks, each token at more of its full compute.
    assert!(mean(4.0) > load.tpot_mean_s);
    assert!(mean(16.0) > mean(4.0));
    // Never beyond pricing every prompt token in a budget-full iteration.
    let budget_full = load.t0 / (1.0 - load.backlog_per_token_s * lambda * 1500.0);
    assert!(
        mean(1e4) <= budget_full * (1.0 + 1e-9),
        "{} {budget_full}",
        mean(1e4)
    );
}

#[test]
fn one_burst_raises_the_waits_and_the_batched_prompts_together() {
    // Poisson (and smoother): independent, in quadrature.
    assert!((burst_spread(1.0, 3.0, 4.0) - 5.0).abs() < 1e-12);
    assert!((burst_spread(0.25, 3.0, 4.0) - 5.0).abs() < 1e-12);
    // c_a² = 4: r = 3/4 — √(3² + 4² + 2·0.75·3·4).
    let expected = (9.0f64 + 16.0 + 1.5 * 3.0 * 4.0).sqrt();
    assert!((burst_spread(4.0, 3.0, 4.0) - expected).abs() < 1e-12);
    // Burstier: closer to adding up (3 + 4 = 7), never beyond it.
    let bursty = burst_spread(1e6, 3.0, 4.0);
    assert!(bursty > burst_spread(4.0, 3.0, 4.0) && bursty <= 7.0 + 1e-9);
}

#[test]
fn a_clump_couples_the_slot_wait_and_the_prefill_wait() {
    let dep = h100_8b();
    // One in five arrivals waits for a slot, 1 s on average; one in ten
    // queues for prefill, 0.5 s on average.
    let slot = WaitSummary {
        probability: 0.2,
        mean_s: 0.2,
        quantile_s: 0.0,
    };
    let prefill = PrefillWait {
        utilization: 0.5,
        mean_s: 0.05,
        p99_s: 0.0,
        queue_probability: 0.1,
        queue_conditional_mean_s: 0.5,
    };
    let mixture = wait_quantile(|t| 0.2 * (-t).exp() + 0.1 * (-2.0 * t).exp(), 0.99, 1.0);
    // Poisson: the waits are separate parts of one mixture.
    let poisson = TailModel::new(&dep, inputs(1.0));
    let (mean, p99) = poisson.waits_mean_and_p99_s(&slot, &prefill);
    assert!((mean - 0.25).abs() < 1e-12, "{mean}");
    assert!((p99 - mixture).abs() < 1e-9, "{p99} {mixture}");
    // c_a² = 9 on one replica: r = 8/9 of the slot waiters whose wait ends
    // before their clump's prompts leave the prefill queue (1 − e^(−0.5/1))
    // wait out both as one exponential of 1.5 s.
    let bursty = TailModel::new(&dep, inputs(9.0));
    let coupled = 8.0 / 9.0 * (1.0 - (-0.5f64).exp());
    let (mean, p99) = bursty.waits_mean_and_p99_s(&slot, &prefill);
    assert!(
        (mean - (0.25 + coupled * 0.2 * 0.5)).abs() < 1e-12,
        "{mean}"
    );
    let expected = wait_quantile(
        |t| {
            0.2 * ((1.0 - coupled) * (-t).exp() + coupled * (-t / 1.5).exp())
                + 0.1 * (-2.0 * t).exp()
        },
        0.99,
        1.0,
    );
    assert!((p99 - expected).abs() < 1e-9, "{p99} {expected}");
    assert!(p99 > mixture * 1.15, "{p99} {mixture}");
    // A slot wait of 10 s on average ends long after the clump's prompts
    // were prefilled: admitted one per departure, a waiter finds almost no
    // prefill queue (coupled share 8/9 · (1 − e^(−0.05)) = 4 %).
    let long = WaitSummary {
        probability: 0.2,
        mean_s: 2.0,
        quantile_s: 0.0,
    };
    let apart = |t: f64| 0.2 * (-t / 10.0).exp() + 0.1 * (-2.0 * t).exp();
    let (_, p99) = bursty.waits_mean_and_p99_s(&long, &prefill);
    let separate = wait_quantile(apart, 0.99, 1.0);
    assert!(p99 > separate && p99 < separate * 1.01, "{p99} {separate}");
}

#[test]
fn the_router_evens_out_the_prompts_a_life_admits() {
    let dep = h100_8b();
    // Poisson traffic over 12 replicas, output lengths of c_s² 0.33: a
    // replica's prompts over a life follow its completions, index of
    // dispersion 1/12 + 11/12 · 0.33 (what the simulator measures), far
    // below the arrivals' 1.
    let fleet = TailInputs {
        slot_pool_replicas: 12.0,
        cs2: 0.33,
        ..inputs(1.0)
    };
    let model = TailModel::new(&dep, fleet);
    let (tails, pace) = model.at_without_tpot_tail(2.0);
    let pace = pace.unwrap();
    assert!(tails.slot_wait_probability < 1e-6);
    let expected = 1.0 / 12.0 + 11.0 / 12.0 * 0.33;
    assert!(
        (pace.admitted_ca2 - expected).abs() < 1e-9,
        "{}",
        pace.admitted_ca2
    );
    // Alone, a replica keeps its arrivals' dispersion.
    let alone = TailModel::new(
        &dep,
        TailInputs {
            cs2: 0.33,
            ..inputs(1.0)
        },
    );
    assert_eq!(alone.router_count_smoothing(), 0.0);
    assert!((alone.at_without_tpot_tail(2.0).1.unwrap().admitted_ca2 - 1.0).abs() < 1e-9);
    // The evened-out counts make a shorter TPOT tail at the same load.
    let raw = DecodePace {
        admitted_ca2: 1.0,
        ..pace
    };
    assert!(model.tpot_tail(2.0, pace).p99_s() < model.tpot_tail(2.0, raw).p99_s());
}

#[test]
fn a_prompt_token_attends_to_half_its_length_biased_prompt_however_chunked() {
    let dep = h100_8b();
    // A 24,000-token prompt in 8,192-token chunks: the chunks attend to
    // c·p + c²/2 pairs after p cached tokens, as the simulator counts them.
    let fixed = TailInputs {
        input_mean: 24_000.0,
        input_p99: 24_000.0,
        ..inputs(1.0)
    };
    let model = TailModel::new(&dep, fixed);
    let in_flight = 16.0;
    let t0 = model.iteration_s(in_flight, 0.0);
    let chunk = 8_000.0;
    let chunked: f64 = [0.0, 8_000.0, 16_000.0]
        .iter()
        .map(|&cached| {
            model.iteration_with_prefill_s(in_flight, chunk, chunk * cached + chunk * chunk / 2.0)
                - t0
        })
        .sum::<f64>()
        / 24_000.0;
    let priced = model.prefill_per_token_s(in_flight, chunk, t0);
    assert!(
        (priced / chunked - 1.0).abs() < 0.02,
        "{priced} vs {chunked}"
    );
    // Long prompts bring more of the tokens: spread lengths of the same mean
    // cost more per token than fixed ones, by the length-biased mean.
    let spread = TailModel::new(
        &dep,
        TailInputs {
            input_p99: 72_000.0,
            ..fixed
        },
    );
    assert!(spread.input_cv2 > 0.3);
    let biased = spread.prefill_per_token_s(in_flight, chunk, t0);
    let expected = (model.iteration_with_prefill_s(
        in_flight,
        chunk,
        chunk * 24_000.0 * (1.0 + spread.input_cv2) / 2.0,
    ) - t0)
        / chunk;
    assert!(biased > priced * 1.05, "{biased} vs {priced}");
    assert!((biased / expected - 1.0).abs() < 1e-9);
}
