//! The simulator against queueing theory, the analytical steady state, and its own invariants.

use gpuplan_catalog::{Catalog, Precision};
use gpuplan_core::{
    erlang_c, inference_memory, mean_wait_s, steady_state, wait_quantile_s, Calibration,
    Deployment, EngineLimits, InferenceMemoryInput, IterationWork, Layout, Slo, TokenStats,
};
use gpuplan_sim::{
    simulate, ArrivalProcess, CostModel, DeploymentCost, Dynamics, EngineConfig, PromptSteps,
    Router, SimConfig, SimResult, Stop, SyntheticTraffic, TokenLengths, Trace, Traffic,
    VLLM_BLOCK_TOKENS,
};

/// A step costs `per_prefill_token_s` per prompt token and `per_step_s` flat:
/// closed-form service times for the queueing oracles.
struct Linear {
    per_step_s: f64,
    per_prefill_token_s: f64,
}

impl CostModel for Linear {
    fn iteration_s(&self, work: &IterationWork) -> f64 {
        self.per_step_s + self.per_prefill_token_s * work.prefill_tokens
    }
}

fn engine(max_num_seqs: u32, max_batched_tokens: u32, kv_cache_tokens: u64) -> EngineConfig {
    EngineConfig {
        max_num_seqs,
        max_batched_tokens,
        kv_cache_tokens,
        block_tokens: VLLM_BLOCK_TOKENS,
        prompts: PromptSteps::BesideDecodes,
    }
}

fn config(replicas: u32, engine: EngineConfig, seed: u64) -> SimConfig {
    SimConfig {
        replicas,
        engine,
        router: Router::LeastOutstanding,
        warmup_fraction: 0.1,
        slo: Slo::default(),
        usd_per_hour: None,
        seed,
        dynamics: Dynamics::default(),
    }
}

fn traffic(
    requests_per_s: f64,
    arrival: ArrivalProcess,
    input: TokenLengths,
    output: TokenLengths,
    requests: u64,
) -> Traffic {
    Traffic::Synthetic(SyntheticTraffic {
        requests_per_s,
        rate_curve: None,
        clients: None,
        arrival,
        input_tokens: input,
        output_tokens: output,
        max_context_tokens: 1 << 20,
        stop: Stop::Requests(requests),
    })
}

fn conserved(r: &SimResult) {
    assert_eq!(
        r.arrivals,
        r.requests_completed + r.in_flight + r.rejected + r.timed_out,
        "{r:#?}"
    );
}

/// `actual` within `tolerance` (relative) of `expected`.
fn near(what: &str, actual: f64, expected: f64, tolerance: f64) {
    let err = (actual - expected).abs() / expected;
    assert!(
        err <= tolerance,
        "{what}: simulated {actual:.4}, theory {expected:.4} ({:.1} % off)",
        err * 100.0
    );
}

#[test]
fn one_slot_waits_like_mm1() {
    // One request at a time, one output token, prompts ~ Exp(mean 1000 tokens)
    // prefilled in one step at 0.1 ms per token: service ~ Exp(mean 100 ms).
    // 400k requests: the p99 of one run is then within ±3 % across seeds.
    // λ = 7/s → ρ = 0.7; M/M/1: mean wait ρ/(μ − λ) = 0.7/3 s = 233 ms,
    // p99 = ln(ρ/0.01)/(μ − λ) = ln 70 / 3 s = 1416 ms.
    let cost = Linear {
        per_step_s: 0.0,
        per_prefill_token_s: 1e-4,
    };
    let mean_tokens = 1000.0;
    // ceil(Exp(1000)) has mean 1000.5 tokens.
    let service_s = 1e-4 * (mean_tokens + 0.5);
    let lambda = 7.0;
    let t = traffic(
        lambda,
        ArrivalProcess::Poisson,
        TokenLengths::Exponential { mean: mean_tokens },
        TokenLengths::Fixed(1),
        400_000,
    );
    let r = simulate(&cost, &config(1, engine(1, 1 << 20, 1 << 24), 11), &t).unwrap();
    conserved(&r);
    near(
        "M/M/1 mean wait",
        r.queue_ms.mean / 1e3,
        mean_wait_s(lambda, service_s, 1.0, 1.0, 1.0),
        0.05,
    );
    near(
        "M/M/1 p99 wait",
        r.queue_ms.p99 / 1e3,
        wait_quantile_s(lambda, service_s, 1.0, 1.0, 1.0, 0.99),
        0.05,
    );
}

#[test]
fn four_slots_wait_like_mmc() {
    // Four slots; every step takes 1 ms whatever runs, so a sequence's
    // service is its output length in steps: ceil(Exp(100)) is geometric
    // with mean 1/(1 − e^(−1/100)) ≈ 100.5 steps, near-exponential (cv² 0.99).
    // λ = 28/s over c = 4 servers of μ ≈ 9.95/s → a ≈ 2.81, ρ ≈ 0.70.
    let step_s = 1e-3;
    let cost = Linear {
        per_step_s: step_s,
        per_prefill_token_s: 0.0,
    };
    let mean_steps = 1.0 / (1.0 - (-1.0f64 / 100.0).exp());
    let service_s = step_s * mean_steps;
    let lambda = 28.0;
    let c = 4.0;
    // Three seeds pooled: one run of 200k requests still varies by ±8 % at the p99.
    let (mut mean_s, mut p99_s) = (0.0, 0.0);
    let seeds = [1u64, 2, 3];
    for seed in seeds {
        let t = traffic(
            lambda,
            ArrivalProcess::Poisson,
            TokenLengths::Fixed(1),
            TokenLengths::Exponential { mean: 100.0 },
            200_000,
        );
        let r = simulate(&cost, &config(1, engine(4, 8192, 1 << 24), seed), &t).unwrap();
        conserved(&r);
        mean_s += r.queue_ms.mean / 1e3 / seeds.len() as f64;
        p99_s += r.queue_ms.p99 / 1e3 / seeds.len() as f64;
    }
    let p_wait = erlang_c(c, lambda * service_s);
    assert!(p_wait > 0.3 && p_wait < 0.6, "P(wait) {p_wait}");
    near(
        "M/M/4 mean wait",
        mean_s,
        mean_wait_s(lambda, service_s, c, 1.0, 1.0),
        0.05,
    );
    near(
        "M/M/4 p99 wait",
        p99_s,
        wait_quantile_s(lambda, service_s, c, 1.0, 1.0, 0.99),
        0.05,
    );
}

/// Llama 3.1 8B on one H100 in FP8, and its KV-cache tokens at `context` tokens.
fn llama8b_h100() -> (Deployment, u64) {
    let catalog = Catalog::embedded().unwrap();
    let model = catalog.model("llama-3.1-8b").unwrap();
    let gpu = catalog.gpu("H100").unwrap();
    let layout = Layout { tp: 1, pp: 1 };
    let (p, kv) = (Precision::Fp8, Precision::Fp8);
    let dep = Deployment::new(&model, gpu, layout, p, kv, &Calibration::bundled()).unwrap();
    let memory = inference_memory(&InferenceMemoryInput {
        model: &model,
        gpu,
        layout,
        precision: p,
        kv_precision: kv,
        context_len: 4096,
        limits: EngineLimits::default(),
    })
    .unwrap();
    (dep, memory.kv_cache_tokens)
}

#[test]
fn saturated_throughput_matches_the_steady_state() {
    // Fixed lengths, arrivals at three times what the replica can serve:
    // the batch stays full and completions run at the steady state's rate.
    // The simulation runs 3–7 % below it when prefill is a large share of the
    // work (512/128: −5.3 %, 2000/300 at batch 32: −6.8 %): the steady state
    // blends every prompt into every step, while the engine runs prefill-heavy
    // steps and pure-decode steps, and the roofline is convex in the mix.
    let (dep, kv_tokens) = llama8b_h100();
    let (input, output, batch, budget) = (512u32, 256u32, 64u32, 8192u32);
    let ss = steady_state(
        &dep,
        f64::from(input),
        f64::from(output),
        f64::from(batch),
        f64::from(budget),
    );
    let t = traffic(
        3.0 * ss.requests_per_s,
        ArrivalProcess::Poisson,
        TokenLengths::Fixed(input),
        TokenLengths::Fixed(output),
        20_000,
    );
    let cost = DeploymentCost::new(dep);
    let r = simulate(&cost, &config(1, engine(batch, budget, kv_tokens), 3), &t).unwrap();
    conserved(&r);
    assert!(r.in_flight > 0, "the queue never empties at saturation");
    near(
        "saturated requests/s",
        r.throughput_requests_per_s,
        ss.requests_per_s,
        0.05,
    );
}

#[test]
fn preemptions_under_kv_pressure_conserve_requests() {
    // A KV cache of 4096 tokens for up to 32 sequences of ~600 tokens: the
    // engine admits on the first chunk's blocks and must preempt as they grow.
    let (dep, _) = llama8b_h100();
    let t = traffic(
        40.0,
        ArrivalProcess::Poisson,
        TokenLengths::fit(TokenStats {
            mean: 300.0,
            p99: 1200.0,
        }),
        TokenLengths::fit(TokenStats {
            mean: 300.0,
            p99: 1000.0,
        }),
        3_000,
    );
    let cost = DeploymentCost::new(dep);
    let r = simulate(&cost, &config(2, engine(32, 2048, 4096), 9), &t).unwrap();
    conserved(&r);
    assert!(r.preemptions > 0, "{r:#?}");
    assert!(r.requests_completed > 0);
    // Requests longer than the whole cache are refused, not stuck.
    assert!(
        r.rejected > 0 && r.rejected < r.arrivals / 100,
        "{}",
        r.rejected
    );
}

#[test]
fn overload_stops_at_the_drain_limit_with_requests_in_flight() {
    let cost = Linear {
        per_step_s: 0.01,
        per_prefill_token_s: 0.0,
    };
    let t = Traffic::Synthetic(SyntheticTraffic {
        requests_per_s: 50.0,
        rate_curve: None,
        clients: None,
        arrival: ArrivalProcess::Poisson,
        input_tokens: TokenLengths::Fixed(100),
        output_tokens: TokenLengths::Fixed(100),
        max_context_tokens: 4096,
        stop: Stop::Duration(100.0),
    });
    // Capacity 4 slots / 1 s per request = 4 req/s ≪ 50 req/s.
    let r = simulate(&cost, &config(1, engine(4, 256, 1 << 20), 1), &t).unwrap();
    conserved(&r);
    assert!(r.in_flight > 1000, "{r:#?}");
    assert!(r.simulated_s <= 200.0 + 1.0, "{}", r.simulated_s);
    near(
        "overloaded requests/s",
        r.throughput_requests_per_s,
        4.0,
        0.05,
    );
}

/// A shared workload: Poisson or Gamma arrivals at 60 % of two replicas of `llama8b_h100`.
fn chat(arrival: ArrivalProcess, seed: u64, requests: u64) -> SimResult {
    let (dep, kv_tokens) = llama8b_h100();
    let t = traffic(
        30.0,
        arrival,
        TokenLengths::fit(TokenStats {
            mean: 1000.0,
            p99: 4000.0,
        }),
        TokenLengths::fit(TokenStats {
            mean: 150.0,
            p99: 500.0,
        }),
        requests,
    );
    let cost = DeploymentCost::new(dep);
    simulate(&cost, &config(2, engine(64, 8192, kv_tokens), seed), &t).unwrap()
}

#[test]
fn a_seed_gives_the_same_result_and_seeds_agree_on_the_tails() {
    let a = chat(ArrivalProcess::Poisson, 1, 20_000);
    let b = chat(ArrivalProcess::Poisson, 1, 20_000);
    assert_eq!(a, b);
    conserved(&a);
    let c = chat(ArrivalProcess::Poisson, 2, 20_000);
    assert_ne!(a.ttft_ms, c.ttft_ms);
    near("e2e p99 across seeds", c.e2e_ms.p99, a.e2e_ms.p99, 0.05);
    near("TPOT p99 across seeds", c.tpot_ms.p99, a.tpot_ms.p99, 0.05);
    near("TTFT p50 across seeds", c.ttft_ms.p50, a.ttft_ms.p50, 0.05);
}

#[test]
fn bursty_arrivals_raise_the_ttft_tail() {
    let poisson = chat(ArrivalProcess::Poisson, 4, 20_000);
    let bursty = chat(ArrivalProcess::Gamma { cv: 3.0 }, 4, 20_000);
    assert!(
        bursty.ttft_ms.p99 > 1.2 * poisson.ttft_ms.p99,
        "gamma cv 3: {} ms, Poisson: {} ms",
        bursty.ttft_ms.p99,
        poisson.ttft_ms.p99
    );
    // Same mean rate: throughput agrees.
    near(
        "throughput",
        bursty.throughput_requests_per_s,
        poisson.throughput_requests_per_s,
        0.05,
    );
}

#[test]
fn routers_spread_the_load() {
    let (dep, kv_tokens) = llama8b_h100();
    let t = traffic(
        30.0,
        ArrivalProcess::Poisson,
        TokenLengths::Fixed(1000),
        TokenLengths::Fixed(150),
        5_000,
    );
    let cost = DeploymentCost::new(dep);
    let mut cfg = config(3, engine(64, 8192, kv_tokens), 8);
    let least = simulate(&cost, &cfg, &t).unwrap();
    cfg.router = Router::RoundRobin;
    let round = simulate(&cost, &cfg, &t).unwrap();
    cfg.router = Router::LeastKv;
    let kv = simulate(&cost, &cfg, &t).unwrap();
    for r in [&least, &round, &kv] {
        conserved(r);
        assert_eq!(r.requests_completed, 5_000);
    }
    assert!(least.e2e_ms.p99 <= round.e2e_ms.p99 * 1.05);
    // Balancing on KV use balances the load as well as round robin does.
    assert!(kv.e2e_ms.p99 <= round.e2e_ms.p99 * 1.05);
    assert_ne!(kv, least, "a different router routes differently");
}

#[test]
fn a_trace_is_replayed_and_priced() {
    let text =
        "timestamp_s,input_tokens,output_tokens\n100.0,500,50\n100.5,800,20\n\n101.0,200,200\n";
    let trace = Trace::parse("t.csv", text).unwrap();
    assert_eq!(trace.rows().len(), 3);
    let (dep, kv_tokens) = llama8b_h100();
    let mut cfg = config(1, engine(8, 8192, kv_tokens), 0);
    cfg.warmup_fraction = 0.0;
    cfg.usd_per_hour = Some(3600.0);
    let r = simulate(&DeploymentCost::new(dep), &cfg, &Traffic::Trace(trace)).unwrap();
    assert_eq!((r.arrivals, r.requests_completed, r.in_flight), (3, 3, 0));
    assert_eq!(r.tpot_ms.count, 3);
    // The clock starts at the first row: the last request arrives at 1 s.
    assert!(
        r.simulated_s > 1.0 && r.simulated_s < 10.0,
        "{}",
        r.simulated_s
    );
    let cost = r.cost_usd.unwrap();
    assert!(
        (cost - r.simulated_s).abs() < 1e-9,
        "$1/s × {} s = {cost}",
        r.simulated_s
    );
}

#[test]
fn bad_traces_name_the_file_line_and_field() {
    let err = |text: &str| Trace::parse("load.csv", text).unwrap_err().to_string();
    let e = err("0.0,10,10\n0.5,ten,10\n");
    assert!(
        e.contains("load.csv") && e.contains("line 2") && e.contains("input_tokens"),
        "{e}"
    );
    let e = err("0.0,10,10\n1.0,10\n");
    assert!(e.contains("line 2") && e.contains("3"), "{e}");
    let e = err("2.0,10,10\n1.0,10,10\n");
    assert!(e.contains("line 2") && e.contains("sorted"), "{e}");
    let e = err("timestamp_s,input_tokens,output_tokens\n\n");
    assert!(e.contains("load.csv") && e.contains("no requests"), "{e}");
    let e = err("0.0,10,0\n");
    assert!(e.contains("line 1") && e.contains("output_tokens"), "{e}");
    let e = err("-1,10,10\n");
    assert!(e.contains("timestamp_s"), "{e}");
}

#[test]
fn goodput_counts_requests_within_every_slo() {
    let (dep, kv_tokens) = llama8b_h100();
    let t = traffic(
        20.0,
        ArrivalProcess::Poisson,
        TokenLengths::Fixed(1000),
        TokenLengths::Fixed(100),
        3_000,
    );
    let cost = DeploymentCost::new(dep);
    let mut cfg = config(1, engine(64, 8192, kv_tokens), 2);
    let loose = simulate(&cost, &cfg, &t).unwrap();
    assert_eq!(loose.goodput, 1.0);
    cfg.slo = Slo {
        ttft_ms_p99: Some(loose.ttft_ms.p50),
        ..Slo::default()
    };
    let tight = simulate(&cost, &cfg, &t).unwrap();
    assert!(
        tight.goodput > 0.4 && tight.goodput < 0.6,
        "{}",
        tight.goodput
    );
}
