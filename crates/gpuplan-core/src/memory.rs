//! Inference memory model: what one GPU of a serving replica holds.

use crate::check::{check_context, check_engine_ranges, Spelling};
use crate::error::{CoreError, Result};
use crate::layout::{weight_bytes_per_gpu, Layout};
use gpuplan_catalog::{GpuSpec, ModelArch, Precision};
use serde::Serialize;

/// Bytes in a GiB.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Share of the advertised HBM that CUDA reports as device memory
/// (H100 80GB: 79.2 GiB of 80; A100 80GB: 79.2 GiB). ECC and firmware take the rest.
pub const REPORTED_CAPACITY_FRACTION: f64 = 0.99;

/// Memory a serving process holds outside the model and KV cache: CUDA
/// context, cuBLAS/attention workspaces and captured CUDA graphs (vLLM logs
/// ~0.5–1.5 GiB of "non-torch" memory plus graph memory on H100), GiB.
pub const RUNTIME_OVERHEAD_GIB: f64 = 1.0;

/// Extra memory of NCCL communicators and buffers when a replica spans more
/// than one GPU, GiB.
pub const COMMUNICATOR_OVERHEAD_GIB: f64 = 0.5;

/// vLLM's default `gpu_memory_utilization`.
pub const DEFAULT_MEMORY_UTILIZATION: f64 = 0.90;

/// vLLM's default `max_num_batched_tokens` with chunked prefill (V1 engine, online serving).
pub const DEFAULT_MAX_BATCHED_TOKENS: u64 = 8192;

/// vLLM's default `max_num_seqs`.
pub const DEFAULT_MAX_NUM_SEQS: u64 = 256;

/// Per-GPU memory by component, GiB. Training fields are zero for inference.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct MemoryBreakdown {
    /// Model weights (this GPU's shard).
    pub weights_gib: f64,
    /// KV cache (inference: what fits in the budget; training: 0).
    pub kv_cache_gib: f64,
    /// Activation workspace (inference) or saved activations (training).
    pub activations_gib: f64,
    /// Gradients (training).
    pub gradients_gib: f64,
    /// Optimizer states incl. fp32 master weights (training).
    pub optimizer_gib: f64,
    /// Runtime, CUDA context, communicators, allocator slack.
    pub overhead_gib: f64,
    /// Sum of the above.
    pub total_gib: f64,
}

impl MemoryBreakdown {
    /// Recomputes `total_gib` from the parts.
    pub fn with_total(mut self) -> Self {
        self.total_gib = self.weights_gib
            + self.kv_cache_gib
            + self.activations_gib
            + self.gradients_gib
            + self.optimizer_gib
            + self.overhead_gib;
        self
    }
}

/// What the serving engine is configured with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EngineLimits {
    /// Fraction of GPU memory the engine may use (vLLM `--gpu-memory-utilization`).
    pub memory_utilization: f64,
    /// Tokens processed in one iteration (vLLM `--max-num-batched-tokens`).
    pub max_batched_tokens: u64,
    /// Sequences in one batch (vLLM `--max-num-seqs`).
    pub max_num_seqs: u64,
}

impl Default for EngineLimits {
    fn default() -> Self {
        EngineLimits {
            memory_utilization: DEFAULT_MEMORY_UTILIZATION,
            max_batched_tokens: DEFAULT_MAX_BATCHED_TOKENS,
            max_num_seqs: DEFAULT_MAX_NUM_SEQS,
        }
    }
}

impl EngineLimits {
    /// Checks each setting against its range in [`limits`](crate::limits)
    /// (the rule [`check_replica`](crate::check_replica) applies, with the
    /// library's field names).
    pub fn check(&self) -> Result<()> {
        match check_engine_ranges(self, &Spelling::API).into_iter().next() {
            Some(v) => Err(v.into()),
            None => Ok(()),
        }
    }
}

/// Inputs of the inference memory model.
#[derive(Debug, Clone, Copy)]
pub struct InferenceMemoryInput<'a> {
    /// The model.
    pub model: &'a ModelArch,
    /// The GPU of every member of the replica.
    pub gpu: &'a GpuSpec,
    /// The replica's split.
    pub layout: Layout,
    /// Weight precision.
    pub precision: Precision,
    /// KV-cache precision.
    pub kv_precision: Precision,
    /// Context length (prompt + output tokens) per sequence the cache must hold.
    pub context_len: u64,
    /// Engine settings.
    pub limits: EngineLimits,
}

/// Result of the inference memory model, per GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InferenceMemory {
    /// Whether weights, workspace and at least one full-context sequence fit.
    pub fits: bool,
    /// Capacity the engine sees (advertised × reported fraction), GiB.
    pub gpu_memory_gib: f64,
    /// What the engine may use (capacity × utilisation), GiB.
    pub budget_gib: f64,
    /// Breakdown; `kv_cache_gib` is what is left for the cache.
    pub per_gpu: MemoryBreakdown,
    /// KV bytes per token for the whole model (all layers, all KV heads).
    pub kv_cache_bytes_per_token: f64,
    /// KV bytes per token stored on one GPU (its layers and KV heads).
    pub kv_cache_bytes_per_token_per_gpu: f64,
    /// Tokens the cache holds across the replica.
    pub kv_cache_tokens: u64,
    /// Sequences of `context_len` tokens that fit at once.
    pub max_concurrent_sequences: u64,
    /// Why it does not fit (None when it fits).
    pub reason: Option<String>,
}

/// Activation workspace of one forward pass over `tokens` tokens, per GPU,
/// bytes: hidden-state buffers (residual, normed input, attention output,
/// FFN output: 4·h), the q/k/v projections and the FFN intermediates
/// (gate, up and their product: 3·width) sharded by TP, 2 bytes each; plus
/// fp32 logits for the sampled rows (`seqs` × vocab / TP).
pub fn activation_workspace_bytes(
    model: &ModelArch,
    layout: Layout,
    tokens: u64,
    seqs: u64,
) -> f64 {
    // Products are formed in f64: they cannot wrap, and the catalog's ranges
    // keep them far below 2^53, where f64 is exact.
    let tp = f64::from(layout.tp);
    let h = model.hidden_size as f64;
    let head_dim = model.head_dim as f64;
    let qkv = (model.num_attention_heads as f64 + 2.0 * model.num_kv_heads as f64) * head_dim;
    let ffn_width = match &model.moe {
        Some(moe) => (model.intermediate_size as f64)
            .max(moe.experts_per_token as f64 * moe.expert_intermediate_size as f64),
        None => model.intermediate_size as f64,
    };
    let per_token = 2.0 * (4.0 * h + qkv / tp + 3.0 * ffn_width / tp);
    let logits = seqs.min(tokens) as f64 * model.vocab_size as f64 / tp * 4.0;
    tokens as f64 * per_token + logits
}

/// KV-cache bytes per token on one GPU: its stage's layers × its KV heads
/// (MLA latents are replicated across TP ranks, as vLLM does).
pub fn kv_bytes_per_token_per_gpu(model: &ModelArch, layout: Layout, kv: Precision) -> f64 {
    let layers = layout.layers_per_stage(model) as f64;
    let per_layer = match &model.mla {
        Some(_) => model.kv_elements_per_token_per_layer() as f64,
        None => 2.0 * layout.kv_heads_per_gpu(model) as f64 * model.head_dim as f64,
    };
    layers * per_layer * kv.bytes_per_element() + encoder_kv_bytes_per_token(model, layout, kv)
}

/// Whisper-style encoder-decoder: the decoder's cross-attention K/V over the
/// encoder frames is cached once per sequence; spread over the decoder
/// positions it costs this many bytes per token on one GPU.
fn encoder_kv_bytes_per_token(model: &ModelArch, layout: Layout, kv: Precision) -> f64 {
    match &model.encoder {
        Some(enc) => {
            let per_seq = layout.layers_per_stage(model) as f64
                * 2.0
                * layout.kv_heads_per_gpu(model) as f64
                * model.head_dim as f64
                * enc.positions as f64
                * kv.bytes_per_element();
            per_seq / model.max_position_embeddings as f64
        }
        None => 0.0,
    }
}

/// Why a replica does not fit, in words: nothing left for the KV cache
/// after weights, workspace and runtime, or no room for one sequence of the
/// context length; `None` when it fits. `capacity` is the GPU's usable
/// memory and `budget` the engine's share of it, GiB.
fn does_not_fit_reason(
    input: &InferenceMemoryInput<'_>,
    per_gpu: &MemoryBreakdown,
    (capacity, budget): (f64, f64),
    kv_left: f64,
    (kv_tokens, max_seqs): (u64, u64),
) -> Option<String> {
    let (gpu, layout, precision) = (input.gpu, input.layout, input.precision);
    let (weights, activations, overhead) = (
        per_gpu.weights_gib,
        per_gpu.activations_gib,
        per_gpu.overhead_gib,
    );
    if kv_left <= 0.0 {
        Some(format!(
            "{} × {}, {}: needs {:.1} GiB per GPU before any KV cache (weights {:.1} + workspace {:.1} + runtime {:.1}), has {:.1} GiB ({:.0}% of {:.1})",
            gpu.name,
            layout.gpus(),
            precision,
            weights + activations + overhead,
            weights,
            activations,
            overhead,
            budget,
            input.limits.memory_utilization * 100.0,
            capacity
        ))
    } else if max_seqs == 0 {
        Some(format!(
            "{} × {}, {}: KV cache holds {} tokens per replica, fewer than one {}-token sequence",
            gpu.name,
            layout.gpus(),
            precision,
            kv_tokens,
            input.context_len
        ))
    } else {
        None
    }
}

/// Runs the inference memory model.
pub fn inference_memory(input: &InferenceMemoryInput<'_>) -> Result<InferenceMemory> {
    let InferenceMemoryInput {
        model,
        gpu,
        layout,
        precision,
        kv_precision,
        context_len,
        limits,
    } = *input;
    layout.check(model)?;
    limits.check()?;
    if let Some(v) = check_context(model, context_len, Spelling::API.context) {
        return Err(v.into());
    }
    let capacity = gpu.memory_gib * REPORTED_CAPACITY_FRACTION;
    let budget = capacity * limits.memory_utilization;
    let weights = weight_bytes_per_gpu(model, layout, precision) / GIB;
    let activations = activation_workspace_bytes(
        model,
        layout,
        limits.max_batched_tokens,
        limits.max_num_seqs,
    ) / GIB;
    let overhead = RUNTIME_OVERHEAD_GIB
        + if layout.gpus() > 1 {
            COMMUNICATOR_OVERHEAD_GIB
        } else {
            0.0
        };
    let kv_left = budget - weights - activations - overhead;
    let kv_per_token_gpu = kv_bytes_per_token_per_gpu(model, layout, kv_precision);
    let kv_per_token_model = model.num_layers as f64
        * model.kv_elements_per_token_per_layer() as f64
        * kv_precision.bytes_per_element()
        + encoder_kv_bytes_per_token(model, Layout::SINGLE, kv_precision);
    let kv_tokens = kv_token_count(kv_left * GIB, kv_per_token_gpu)?;
    let max_seqs = kv_tokens / context_len;
    let per_gpu = MemoryBreakdown {
        weights_gib: weights,
        kv_cache_gib: kv_left.max(0.0),
        activations_gib: activations,
        overhead_gib: overhead,
        ..MemoryBreakdown::default()
    }
    .with_total();
    let reason = does_not_fit_reason(
        input,
        &per_gpu,
        (capacity, budget),
        kv_left,
        (kv_tokens, max_seqs),
    );
    Ok(InferenceMemory {
        fits: reason.is_none(),
        gpu_memory_gib: capacity,
        budget_gib: budget,
        per_gpu,
        kv_cache_bytes_per_token: kv_per_token_model,
        kv_cache_bytes_per_token_per_gpu: kv_per_token_gpu,
        kv_cache_tokens: kv_tokens,
        max_concurrent_sequences: max_seqs,
        reason,
    })
}

/// Whole tokens of `bytes_per_token` that fit in `free_bytes` (0 when none is free).
///
/// The conversion to an integer is guarded: a count that is not finite or
/// exceeds 2^53 (where `f64` stops counting exactly; the catalog's ranges
/// keep real counts below 2^45) is an error, never a saturated `u64::MAX`.
fn kv_token_count(free_bytes: f64, bytes_per_token: f64) -> Result<u64> {
    if free_bytes <= 0.0 {
        return Ok(0);
    }
    let tokens = (free_bytes / bytes_per_token).floor();
    if tokens.is_finite() && tokens < MAX_EXACT_COUNT {
        Ok(tokens as u64)
    } else {
        Err(CoreError::invalid(
            "KV cache tokens",
            tokens.to_string(),
            format!(
                "fewer than 2^53: the GPU memory ({free_bytes:e} bytes free) or the model's KV \
                 bytes per token ({bytes_per_token:e}) is out of any real range"
            ),
        ))
    }
}

/// 2^53: the largest count `f64` holds exactly.
const MAX_EXACT_COUNT: f64 = 9_007_199_254_740_992.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{gpu, model};

    #[test]
    fn token_counts_never_saturate() {
        assert_eq!(kv_token_count(-1.0, 2.0).unwrap(), 0);
        assert_eq!(kv_token_count(10.0, 3.0).unwrap(), 3);
        assert!(kv_token_count(1e308 * GIB, 2.0).is_err());
        assert!(kv_token_count(1.0, 0.0).is_err(), "1/0 = inf");
        assert!(kv_token_count(f64::NAN, 2.0).is_err());
    }

    fn run(model_id: &str, gpu_name: &str, tp: u32, p: Precision) -> InferenceMemory {
        let m = model(model_id);
        let g = gpu(gpu_name);
        inference_memory(&InferenceMemoryInput {
            model: &m,
            gpu: g,
            layout: Layout { tp, pp: 1 },
            precision: p,
            kv_precision: if p == Precision::Fp8 {
                Precision::Fp8
            } else {
                Precision::Bf16
            },
            context_len: 2048,
            limits: EngineLimits::default(),
        })
        .unwrap()
    }

    #[test]
    fn llama70b_on_h100() {
        let one = run("llama-3.1-70b", "h100", 1, Precision::Bf16);
        assert!(!one.fits);
        assert!((one.per_gpu.weights_gib - 131.42).abs() < 0.05);
        assert!(one.reason.as_deref().unwrap().contains("weights 131.4"));
        // KV per token: 2 · 80 layers · 8 heads · 128 · 2 bytes = 327,680 bytes
        assert_eq!(one.kv_cache_bytes_per_token, 327_680.0);

        let two = run("llama-3.1-70b", "h100", 2, Precision::Bf16);
        assert!(two.fits);
        // TP2: 4 KV heads per GPU → 163,840 bytes per token per GPU.
        assert_eq!(two.kv_cache_bytes_per_token_per_gpu, 163_840.0);
        // vLLM on 2×H100 at 0.90 reports roughly 20–30k KV tokens for this model.
        assert!(
            (15_000..35_000).contains(&two.kv_cache_tokens),
            "{}",
            two.kv_cache_tokens
        );

        let fp8 = run("llama-3.1-70b", "h100", 1, Precision::Fp8);
        assert!(fp8.fits, "{:?}", fp8.reason);
        assert!(
            fp8.per_gpu.kv_cache_gib < 6.0,
            "{}",
            fp8.per_gpu.kv_cache_gib
        );
    }

    #[test]
    fn mla_cache_is_latent_sized() {
        let m = model("deepseek-v3");
        // 61 layers · (512 + 64) · 1 byte (fp8)
        let b = kv_bytes_per_token_per_gpu(&m, Layout { tp: 8, pp: 1 }, Precision::Fp8);
        assert_eq!(b, 61.0 * 576.0);
    }

    #[test]
    fn kv_heads_replicate_beyond_tp() {
        let m = model("llama-3.1-70b");
        let tp8 = kv_bytes_per_token_per_gpu(&m, Layout { tp: 8, pp: 1 }, Precision::Bf16);
        let tp16 = kv_bytes_per_token_per_gpu(&m, Layout { tp: 16, pp: 1 }, Precision::Bf16);
        assert_eq!(
            tp8, tp16,
            "8 KV heads over 16 GPUs: one head each, replicated"
        );
    }
}
