//! Invariants of the performance and memory models over random inputs.

use gpuplan_catalog::{Catalog, Precision};
use gpuplan_core::{
    inference_memory, steady_state, weight_bytes_per_gpu, Calibration, Deployment, EngineLimits,
    InferenceMemoryInput, IterationWork, Layout,
};
use proptest::prelude::*;
use std::sync::OnceLock;

fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| Catalog::embedded().unwrap())
}

const MODELS: &[&str] = &[
    "llama-3.1-8b",
    "llama-3.1-70b",
    "mixtral-8x7b",
    "qwen2.5-14b",
    "gemma-2-9b",
    "deepseek-v3",
    "phi-3-mini-4k",
];
const GPUS: &[&str] = &[
    "H100-SXM-80GB",
    "A100-SXM-80GB",
    "L40S-48GB",
    "B200-180GB",
    "A10G-24GB",
    "MI300X-192GB",
    "H100-PCIe-80GB",
];
const PRECISIONS: &[Precision] = &[
    Precision::Bf16,
    Precision::Fp8,
    Precision::Int4,
    Precision::Fp4,
];

fn deployment(model: usize, gpu: usize, tp: u32, precision: usize) -> Option<Deployment> {
    let m = catalog().model(MODELS[model]).ok()?;
    let g = catalog().gpu(GPUS[gpu]).ok()?;
    let p = PRECISIONS[precision];
    let kv = if p == Precision::Bf16 || p == Precision::Int4 {
        Precision::Bf16
    } else {
        Precision::Fp8
    };
    Deployment::new(&m, g, Layout { tp, pp: 1 }, p, kv, &Calibration::bundled()).ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No decode step is faster than reading this GPU's weights and KV at
    /// peak bandwidth, or than its FLOPs at peak tensor throughput.
    #[test]
    fn decode_never_beats_the_roofline(model in 0..MODELS.len(), gpu in 0..GPUS.len(), tp_exp in 0u32..4,
                                       precision in 0..PRECISIONS.len(), batch in 1.0f64..1024.0, context in 1.0f64..32768.0) {
        if let Some(dep) = deployment(model, gpu, 1 << tp_exp, precision) {
            let cost = dep.iteration(&IterationWork {
                decode_seqs: batch,
                decode_context_sum: batch * context,
                prefill_tokens: 0.0,
                prefill_attention_pairs: 0.0,
                logit_tokens: batch,
            });
            prop_assert!(cost.total_s >= dep.decode_roofline_s(batch, context) * (1.0 - 1e-9));
        }
    }

    /// No prefill runs above peak FLOP/s.
    #[test]
    fn prefill_never_exceeds_peak_flops(model in 0..MODELS.len(), gpu in 0..GPUS.len(), tp_exp in 0u32..4,
                                        precision in 0..PRECISIONS.len(), tokens in 1.0f64..65536.0) {
        if let Some(dep) = deployment(model, gpu, 1 << tp_exp, precision) {
            let cost = dep.iteration(&IterationWork {
                decode_seqs: 0.0,
                decode_context_sum: 0.0,
                prefill_tokens: tokens,
                prefill_attention_pairs: tokens * tokens / 2.0,
                logit_tokens: 1.0,
            });
            prop_assert!(cost.total_s >= dep.prefill_roofline_s(tokens) * (1.0 - 1e-9));
        }
    }

    /// More tensor parallelism never puts more weights on a GPU, and never
    /// shrinks the replica's KV capacity.
    #[test]
    fn more_tp_never_costs_memory(model in 0..MODELS.len(), gpu in 0..GPUS.len(), precision in 0..PRECISIONS.len()) {
        let m = catalog().model(MODELS[model]).unwrap();
        let g = catalog().gpu(GPUS[gpu]).unwrap();
        let p = PRECISIONS[precision];
        let mut last_weights = f64::INFINITY;
        let mut last_tokens = 0u64;
        for tp in [1u32, 2, 4, 8] {
            let layout = Layout { tp, pp: 1 };
            if layout.check(&m).is_err() { continue; }
            let w = weight_bytes_per_gpu(&m, layout, p);
            prop_assert!(w <= last_weights);
            last_weights = w;
            let mem = inference_memory(&InferenceMemoryInput {
                model: &m, gpu: g, layout, precision: p, kv_precision: Precision::Bf16,
                context_len: 1024, limits: EngineLimits::default(),
            }).unwrap();
            prop_assert!(mem.kv_cache_tokens >= last_tokens, "tp {tp}: {} < {last_tokens}", mem.kv_cache_tokens);
            last_tokens = mem.kv_cache_tokens;
        }
    }

    /// Throughput never falls as concurrency grows (up to the KV limit).
    #[test]
    fn throughput_is_non_decreasing_in_concurrency(model in 0..MODELS.len(), gpu in 0..GPUS.len(), tp_exp in 0u32..4,
                                                   precision in 0..PRECISIONS.len(), input in 16.0f64..8192.0, output in 2.0f64..2048.0) {
        if let Some(dep) = deployment(model, gpu, 1 << tp_exp, precision) {
            let mut last = 0.0;
            for c in [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0] {
                let s = steady_state(&dep, input, output, c, 8192.0);
                prop_assert!(s.output_tokens_per_s >= last * (1.0 - 1e-9), "c {c}: {} < {last}", s.output_tokens_per_s);
                last = s.output_tokens_per_s;
            }
        }
    }
}

/// The generators above build real deployments (the properties are not vacuous).
#[test]
fn generators_build_deployments() {
    let built = (0..MODELS.len())
        .flat_map(|m| (0..GPUS.len()).map(move |g| (m, g)))
        .filter(|&(m, g)| deployment(m, g, 1, 0).is_some())
        .count();
    assert!(built >= MODELS.len() * GPUS.len() - 2, "{built}");
}
