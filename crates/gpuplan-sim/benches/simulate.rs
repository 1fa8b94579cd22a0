//! Speed of the simulator: one million requests of a chat workload on four
//! replicas of Llama 3.1 70B, H100 × 4 (TP4) in FP8, at 70 % of their
//! steady-state capacity (target: under 2 s on the development machine).
//!
//! Run: `cargo bench -p gpuplan-sim --bench simulate`

use gpuplan_catalog::{Catalog, Precision};
use gpuplan_core::{
    inference_memory, steady_state, Calibration, Deployment, EngineLimits, InferenceMemoryInput,
    Layout, Slo, TokenStats,
};
use gpuplan_sim::{
    simulate, ArrivalProcess, DeploymentCost, Dynamics, EngineConfig, PromptSteps, Router,
    SimConfig, Stop, SyntheticTraffic, TokenLengths, Traffic, VLLM_BLOCK_TOKENS,
};

fn main() {
    divan::main();
}

const REPLICAS: u32 = 4;
const MAX_NUM_SEQS: u32 = 256;
const MAX_BATCHED_TOKENS: u32 = 8192;

/// The cost model, the engine config and the traffic of the benchmark.
fn setup(requests: u64) -> (DeploymentCost, SimConfig, Traffic) {
    let catalog = Catalog::embedded().unwrap();
    let model = catalog.model("llama-3.1-70b").unwrap();
    let gpu = catalog.gpu("H100").unwrap();
    let layout = Layout { tp: 4, pp: 1 };
    let (p, kv) = (Precision::Fp8, Precision::Fp8);
    let dep = Deployment::new(&model, gpu, layout, p, kv, &Calibration::bundled()).unwrap();
    let memory = inference_memory(&InferenceMemoryInput {
        model: &model,
        gpu,
        layout,
        precision: p,
        kv_precision: kv,
        context_len: 7000,
        limits: EngineLimits::default(),
    })
    .unwrap();
    let (input, output) = (
        TokenStats {
            mean: 1500.0,
            p99: 6000.0,
        },
        TokenStats {
            mean: 250.0,
            p99: 1000.0,
        },
    );
    let ss = steady_state(
        &dep,
        input.mean,
        output.mean,
        f64::from(MAX_NUM_SEQS),
        f64::from(MAX_BATCHED_TOKENS),
    );
    let config = SimConfig {
        replicas: REPLICAS,
        engine: EngineConfig {
            max_num_seqs: MAX_NUM_SEQS,
            max_batched_tokens: MAX_BATCHED_TOKENS,
            kv_cache_tokens: memory.kv_cache_tokens,
            block_tokens: VLLM_BLOCK_TOKENS,
            prompts: PromptSteps::BesideDecodes,
        },
        router: Router::LeastOutstanding,
        warmup_fraction: 0.1,
        slo: Slo {
            ttft_ms_p99: Some(2000.0),
            tpot_ms_p99: Some(60.0),
            e2e_ms_p99: None,
        },
        usd_per_hour: Some(4.0 * 4.0 * 3.0),
        seed: 1,
        dynamics: Dynamics::default(),
    };
    let traffic = Traffic::Synthetic(SyntheticTraffic {
        requests_per_s: 0.7 * f64::from(REPLICAS) * ss.requests_per_s,
        rate_curve: None,
        clients: None,
        arrival: ArrivalProcess::Poisson,
        input_tokens: TokenLengths::fit(input),
        output_tokens: TokenLengths::fit(output),
        max_context_tokens: 131_072,
        stop: Stop::Requests(requests),
    });
    (DeploymentCost::new(dep), config, traffic)
}

/// One million requests through four replicas.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn million_requests_four_replicas(bencher: divan::Bencher) {
    let (cost, config, traffic) = setup(1_000_000);
    bencher.bench_local(|| simulate(&cost, &config, divan::black_box(&traffic)).unwrap());
}
