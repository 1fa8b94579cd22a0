//! Training memory model: the peak one GPU holds during a training step.
//!
//! Counts what PyTorch frameworks (FSDP2/torchtitan, Megatron-style ZeRO)
//! really keep: sharded fp32 master weights, unsharded bf16 copies being
//! all-gathered, gradients and their reduce-scatter staging, Adam states,
//! saved activations per recomputation policy (Korthikanti et al. 2022,
//! "Reducing Activation Recomputation in Large Transformer Models", adapted
//! to RMSNorm/SwiGLU/GQA blocks with flash attention, which stores no s×s
//! scores), the logits and cross-entropy buffers, one layer's recompute
//! working set, pipeline micro-batches in flight, and the caching
//! allocator's slack. The result is comparable to
//! `torch.cuda.max_memory_reserved()` plus the CUDA context and NCCL buffers.

use crate::error::{CoreError, Result};
use crate::layout::Layout;
use crate::limits::{self, Count};
use crate::memory::{MemoryBreakdown, GIB, REPORTED_CAPACITY_FRACTION};
use gpuplan_catalog::{GpuSpec, MlpType, ModelArch, Precision};
use serde::Serialize;

/// Caching-allocator slack: reserved = allocated peak × (1 + this). Fitted
/// (minimax) on the torchtitan peak-memory rows of `benchmarks_dev.csv`.
pub const ALLOCATOR_OVERHEAD_FRACTION: f64 = 0.10;
/// CUDA context and cuBLAS/cuDNN workspaces, outside the allocator, GiB.
pub const CUDA_CONTEXT_GIB: f64 = 0.75;
/// NCCL buffers per parallel dimension (DP, TP, PP) larger than 1, GiB.
pub const NCCL_GIB_PER_GROUP: f64 = 0.35;
/// Cross-entropy bytes per logit element, eager `F.cross_entropy(logits.float())`:
/// fp32 log-softmax output + fp32 grad_out + fp32 grad_in.
const CE_EAGER_BYTES: f64 = 12.0;
/// Eager loss-parallel cross-entropy (DTensor, TP > 1): four fp32 buffers.
const CE_LOSS_PARALLEL_BYTES: f64 = 16.0;
/// Compiled or fused cross-entropy: bf16 logits + bf16 gradient.
const CE_FUSED_BYTES: f64 = 4.0;

/// Activation recomputation policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    /// Keep every activation.
    None,
    /// Op-level selective recomputation (save every other matmul output and
    /// the attention output; torchtitan's `selective op`).
    Selective,
    /// Keep only each layer's input; recompute the layer in backward.
    Full,
}

impl Recompute {
    /// The lowercase name used in files and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }
}

/// What is trained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "lowercase")]
pub enum FineTuneMethod {
    /// All weights.
    Full,
    /// LoRA adapters of `rank` on the target matrices; frozen 16-bit base.
    Lora {
        /// Adapter rank.
        rank: u64,
        /// Adapt the FFN matrices too (else attention q/k/v/o only).
        all_linear: bool,
    },
    /// QLoRA: LoRA over a 4-bit NF4 base with double quantisation.
    Qlora {
        /// Adapter rank.
        rank: u64,
        /// Adapt the FFN matrices too (else attention q/k/v/o only).
        all_linear: bool,
    },
}

/// Optimizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// Adam/AdamW with fp32 m and v (8 bytes per trained parameter).
    Adam,
    /// 8-bit Adam (bitsandbytes): 2 bytes + block scales per parameter.
    Adam8bit,
}

/// Pipeline schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PipelineSchedule {
    /// 1F1B: the first stage holds PP micro-batches in flight.
    OneFOneB,
    /// Interleaved 1F1B with this many model chunks per rank.
    Interleaved(u32),
}

/// Inputs of the training memory model.
#[derive(Debug, Clone, Copy)]
pub struct TrainingMemoryInput<'a> {
    /// The model.
    pub model: &'a ModelArch,
    /// The GPU.
    pub gpu: &'a GpuSpec,
    /// TP × PP split.
    pub layout: Layout,
    /// Data-parallel degree.
    pub dp: u32,
    /// ZeRO stage 0–3 over DP (3 = FSDP).
    pub zero: u8,
    /// Sequences per micro-batch per GPU.
    pub micro_batch: u64,
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Micro-batches per optimizer step (gradient accumulation / PP).
    pub micro_batches: u64,
    /// Pipeline schedule (ignored when PP = 1).
    pub schedule: PipelineSchedule,
    /// Recomputation policy.
    pub recompute: Recompute,
    /// bf16, or fp8 (Float8 linear layers, bf16 elsewhere, fp8 all-gather under FSDP).
    pub precision: Precision,
    /// Full, LoRA or QLoRA.
    pub method: FineTuneMethod,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// Cross-entropy is compiled/fused (no fp32 logits copies).
    pub fused_loss: bool,
    /// Asynchronous tensor parallelism (PyTorch SymmetricMemory fused
    /// all-gather/reduce-scatter matmuls): a workspace holding a layer's
    /// all-gathered input.
    pub async_tp: bool,
}

/// Result of the training memory model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainingMemory {
    /// Whether the peak fits the GPU.
    pub fits: bool,
    /// Capacity the framework sees, GiB.
    pub gpu_memory_gib: f64,
    /// The most loaded GPU's breakdown (weights include unsharded copies).
    pub per_gpu: MemoryBreakdown,
    /// Allocator-reserved peak (comparable to `max_memory_reserved`), GiB.
    pub reserved_peak_gib: f64,
    /// Logits and loss buffers at the start of backward, GiB (included in activations).
    pub logits_gib: f64,
    /// Which phase sets the peak: `loss` or `backward`.
    pub peak_phase: &'static str,
    /// Parameters trained.
    pub trainable_params: u64,
    /// Why it does not fit.
    pub reason: Option<String>,
}

/// Runs the training memory model; with PP the first and last stages are
/// both computed and the larger is reported.
pub fn training_memory(input: &TrainingMemoryInput<'_>) -> Result<TrainingMemory> {
    let m = input.model;
    input.layout.check(m)?;
    let lora_rank = match input.method {
        FineTuneMethod::Full => None,
        FineTuneMethod::Lora { rank, .. } | FineTuneMethod::Qlora { rank, .. } => Some(rank),
    };
    let ranges: [(&str, Option<u64>, Count); 6] = [
        ("dp", Some(u64::from(input.dp)), limits::DP),
        ("zero", Some(u64::from(input.zero)), limits::ZERO_STAGE),
        ("micro_batch", Some(input.micro_batch), limits::MICRO_BATCH),
        ("seq_len", Some(input.seq_len), limits::SEQUENCE_TOKENS),
        (
            "micro_batches",
            Some(input.micro_batches),
            limits::MICRO_BATCHES,
        ),
        ("lora_rank", lora_rank, limits::LORA_RANK),
    ];
    for (field, v, range) in ranges {
        if let Some(v) = v.filter(|v| !range.contains(*v)) {
            return Err(CoreError::invalid(field, v.to_string(), range.describe()));
        }
    }
    if !matches!(
        input.precision,
        Precision::Bf16 | Precision::Fp16 | Precision::Fp8 | Precision::Fp32
    ) {
        return Err(CoreError::invalid(
            "precision",
            input.precision.to_string(),
            "bf16, fp16, fp32 or fp8 for training",
        ));
    }
    let first = rank_memory(input, true, input.layout.pp == 1);
    let result = if input.layout.pp == 1 {
        first
    } else {
        let last = rank_memory(input, false, true);
        if first.reserved_peak_gib >= last.reserved_peak_gib {
            first
        } else {
            last
        }
    };
    Ok(result)
}

/// FFN width that one token's activations go through.
fn token_ffn_width(m: &ModelArch) -> f64 {
    match &m.moe {
        Some(moe) => {
            moe.expert_intermediate_size as f64
                * (moe.experts_per_token + moe.num_shared_experts) as f64
        }
        None => m.intermediate_size as f64,
    }
}

/// Saved bytes per token per layer with no recomputation: norm inputs and
/// outputs, q/k/v, attention output and log-sum-exp, FFN intermediates.
/// Linear inputs are saved in fp8 under Float8 training.
fn activation_bytes_no_recompute(m: &ModelArch, fp8: bool) -> f64 {
    let h = m.hidden_size as f64;
    let q = (m.num_attention_heads * m.head_dim) as f64;
    let kv = (m.num_kv_heads * m.head_dim) as f64;
    let f = token_ffn_width(m);
    let mm_in = if fp8 { 1.0 } else { 2.0 };
    let attention =
        2.0 * h + mm_in * h + 2.0 * q + 4.0 * kv + 2.0 * q + 4.0 * m.num_attention_heads as f64;
    let ffn = match m.mlp_type {
        // gate out, up out, activation out (2 bytes each) + the product (linear input)
        MlpType::Swiglu | MlpType::Geglu => 2.0 * h + mm_in * h + 6.0 * f + mm_in * f,
        // fc1 out (2 bytes) + activation out (linear input)
        MlpType::Gelu => 2.0 * h + mm_in * h + 2.0 * f + mm_in * f,
    };
    let moe = match &m.moe {
        Some(moe) => {
            (8 * moe.num_experts + 4 * moe.experts_per_token) as f64
                + 4.0 * h * moe.experts_per_token as f64
        }
        None => 0.0,
    };
    attention + ffn + moe
}

/// Saved bytes per token per layer under op-level selective recomputation:
/// the layer input, every other matmul output (q, v, gate/fc1, down), the
/// attention output and log-sum-exp, and the FFN residual.
fn activation_bytes_selective(m: &ModelArch) -> f64 {
    let h = m.hidden_size as f64;
    let q = (m.num_attention_heads * m.head_dim) as f64;
    let kv = (m.num_kv_heads * m.head_dim) as f64;
    2.0 * h
        + 2.0 * q
        + 2.0 * kv
        + (2.0 * q + 4.0 * m.num_attention_heads as f64)
        + 2.0 * token_ffn_width(m)
        + 2.0 * h
}

/// Parameters of the largest decoder layer (MoE layers when there are any).
fn largest_layer_params(m: &ModelArch) -> f64 {
    let p = m.params();
    let layers = m.num_layers as f64;
    let attention_and_norms = (p.attention as f64 + p.norms as f64) / layers;
    let moe_layers = m.moe_layers();
    let dense_layers = m.num_layers - moe_layers;
    let dense = if dense_layers > 0 {
        p.dense_mlp as f64 / dense_layers as f64
    } else {
        0.0
    };
    let moe = if moe_layers > 0 {
        (p.routed_experts as f64 + p.shared_experts as f64 + p.router as f64) / moe_layers as f64
    } else {
        0.0
    };
    attention_and_norms + dense.max(moe)
}

/// LoRA parameters per layer: rank · (d_in + d_out) per adapted matrix.
pub(crate) fn lora_params_per_layer(m: &ModelArch, rank: u64, all_linear: bool) -> f64 {
    let h = m.hidden_size;
    let q = m.num_attention_heads * m.head_dim;
    let kv = m.num_kv_heads * m.head_dim;
    let mut dims = vec![(h, q), (h, kv), (h, kv), (q, h)];
    if all_linear {
        let f = m.intermediate_size;
        dims.extend(match m.mlp_type {
            MlpType::Swiglu | MlpType::Geglu => vec![(h, f), (h, f), (f, h)],
            MlpType::Gelu => vec![(h, f), (f, h)],
        });
    }
    dims.iter()
        .map(|(a, b)| rank as f64 * (*a as f64 + *b as f64))
        .sum()
}

/// Parameters one rank holds before ZeRO, sharded by TP: its layers, and
/// the embedding / head on the first and last pipeline stages.
#[derive(Debug, Clone, Copy)]
struct RankParams {
    /// Transformer layers on this rank.
    layers: f64,
    /// The layers' parameters over TP.
    body: f64,
    /// Embedding, final norm and untied head over TP.
    root: f64,
    /// The largest layer's parameters over TP.
    layer: f64,
}

impl RankParams {
    fn total(&self) -> f64 {
        self.body + self.root
    }
}

fn rank_params(input: &TrainingMemoryInput<'_>, is_first: bool, is_last: bool) -> RankParams {
    let m = input.model;
    let tp = f64::from(input.layout.tp);
    let h = m.hidden_size as f64;
    let vocab = m.vocab_size as f64;
    let layers = input.layout.layers_per_stage(m) as f64;
    let layer_params = largest_layer_params(m);
    let mut root = 0.0;
    if is_first {
        root += vocab * h;
    }
    if is_last {
        root += if m.tie_word_embeddings {
            0.0
        } else {
            vocab * h
        } + h;
        if m.tie_word_embeddings && !is_first {
            root += vocab * h;
        }
    }
    RankParams {
        layers,
        body: layers * layer_params / tp,
        root: root / tp,
        layer: layer_params / tp,
    }
}

/// Bytes of parameter state on one rank: the trainable parameters, the
/// weights (sharded and all-gathered), gradients and optimizer state.
#[derive(Debug, Clone, Copy)]
struct ParamStates {
    trainable: f64,
    weights: f64,
    unsharded: f64,
    grads: f64,
    optimizer: f64,
}

fn param_states(input: &TrainingMemoryInput<'_>, rank: &RankParams) -> ParamStates {
    let m = input.model;
    let tp = f64::from(input.layout.tp);
    let dp = f64::from(input.dp);
    let fp8 = input.precision == Precision::Fp8;
    let params = rank.total();
    let zero = input.zero;
    let d_opt = if zero >= 1 { dp } else { 1.0 };
    let d_grad = if zero >= 2 { dp } else { 1.0 };
    let (trainable, weights, unsharded, grads, optimizer_scale) = match input.method {
        FineTuneMethod::Full => {
            let (weights, unsharded) = if zero >= 3 {
                // FSDP2: fp32 sharded params (also the master copy) + all-gathered
                // copies (fp8 all-gather under Float8): current and prefetched layer,
                // the unsharded root; with PP the whole stage stays unsharded.
                let gathered = if fp8 { 1.0 } else { 2.0 };
                let unsharded = if input.layout.pp > 1 {
                    gathered * rank.body + 2.0 * rank.root
                } else {
                    2.0 * gathered * rank.layer + 2.0 * rank.root
                };
                (4.0 * params / dp, unsharded)
            } else {
                // 16-bit working copy + fp32 master sharded by ZeRO-1.
                (2.0 * params + 4.0 * params / d_opt, 0.0)
            };
            let grads = if zero >= 3 {
                if input.layout.pp > 1 && input.micro_batches > 1 {
                    // No-sync accumulation across micro-batches: unsharded fp32.
                    4.0 * params
                } else {
                    // fp32 shards + one layer's bf16 and fp32 reduce-scatter staging
                    // + the untied head's gradient.
                    4.0 * params / dp + 6.0 * rank.layer + 2.0 * m.params().lm_head as f64 / tp
                }
            } else {
                4.0 * params / d_grad
            };
            (params, weights, unsharded, grads, d_opt)
        }
        FineTuneMethod::Lora {
            rank: r,
            all_linear,
        }
        | FineTuneMethod::Qlora {
            rank: r,
            all_linear,
        } => {
            let trainable = rank.layers * lora_params_per_layer(m, r, all_linear) / tp;
            // Frozen base: 16-bit (LoRA) or NF4 with double-quantised absmax,
            // 4.127 bits per weight (QLoRA paper, Dettmers et al. 2023); embeddings stay 16-bit.
            let base = if matches!(input.method, FineTuneMethod::Qlora { .. }) {
                4.127 / 8.0
            } else if fp8 {
                // FP8 training keeps the frozen base as FP8 weights (Transformer
                // Engine `fp8_model_init`, as the MLPerf LoRA submissions run it).
                1.0
            } else {
                2.0
            };
            let weights = rank.body * base + 2.0 * rank.root + 4.0 * trainable;
            (trainable, weights, 0.0, 4.0 * trainable, 1.0)
        }
    };
    let optimizer_bytes_per_param = match input.optimizer {
        Optimizer::Adam => 8.0,
        Optimizer::Adam8bit => 2.0 + 8.0 / 2048.0,
    };
    ParamStates {
        trainable,
        weights,
        unsharded,
        grads,
        optimizer: optimizer_bytes_per_param * trainable / optimizer_scale,
    }
}

/// Saved activations: per layer per micro-batch, times the layer-micro-batches
/// in flight on this rank (1F1B: PP − stage; interleaved with v chunks: the
/// warm-up of torch's ScheduleInterleaved1F1B).
fn saved_activations(
    input: &TrainingMemoryInput<'_>,
    layers: f64,
    tokens: f64,
    is_first: bool,
) -> f64 {
    let m = input.model;
    let pp = f64::from(input.layout.pp);
    let per_token = match input.recompute {
        Recompute::Full => 2.0 * m.hidden_size as f64,
        Recompute::Selective => activation_bytes_selective(m),
        Recompute::None => activation_bytes_no_recompute(m, input.precision == Precision::Fp8),
    };
    let per_layer = tokens * per_token / f64::from(input.layout.tp);
    let stage = if is_first { 0.0 } else { pp - 1.0 };
    let in_flight = if input.layout.pp == 1 {
        layers
    } else {
        let mb = input.micro_batches as f64;
        match input.schedule {
            PipelineSchedule::OneFOneB => (pp - stage).min(mb) * layers,
            PipelineSchedule::Interleaved(v) => {
                let v = f64::from(v.max(1));
                let warmup = (v - 1.0) * pp + 2.0 * (pp - 1.0 - stage) + 1.0;
                (mb * v).min(warmup) * layers / v
            }
        }
    };
    per_layer * in_flight
}

/// One layer recomputed and back-propagated: its full activations (when
/// recomputing), activation-gradient buffers, and the TP all-gathered
/// inputs; QLoRA dequantises one layer's weights on top.
fn backward_working_set(input: &TrainingMemoryInput<'_>, tokens: f64) -> f64 {
    let m = input.model;
    let tp = f64::from(input.layout.tp);
    let h = m.hidden_size as f64;
    let f = token_ffn_width(m);
    let mut working_set = tokens * (6.0 * f + 2.0 * h) / tp;
    if input.recompute != Recompute::None {
        working_set +=
            tokens * activation_bytes_no_recompute(m, input.precision == Precision::Fp8) / tp;
    }
    if input.layout.tp > 1 {
        working_set += tokens * 4.0 * h * (1.0 - 1.0 / tp);
    }
    if matches!(input.method, FineTuneMethod::Qlora { .. }) {
        working_set += 2.0 * h * m.intermediate_size as f64 / tp;
    }
    working_set
}

/// Logits and cross-entropy on the last stage, bytes.
fn logits_bytes(input: &TrainingMemoryInput<'_>, tokens: f64) -> f64 {
    let tp = f64::from(input.layout.tp);
    let h = input.model.hidden_size as f64;
    let local_vocab = input.model.vocab_size as f64 / tp;
    let ce = if input.fused_loss {
        CE_FUSED_BYTES
    } else if input.layout.tp > 1 {
        CE_LOSS_PARALLEL_BYTES
    } else {
        CE_EAGER_BYTES
    };
    tokens * local_vocab * ce + tokens * (2.0 * h + 2.0 * h / tp)
}

fn rank_memory(input: &TrainingMemoryInput<'_>, is_first: bool, is_last: bool) -> TrainingMemory {
    let tp = f64::from(input.layout.tp);
    // In f64: micro_batch × seq_len is at most 2^43 (limits), exact and unwrappable.
    let tokens = input.micro_batch as f64 * input.seq_len as f64;
    let rank = rank_params(input, is_first, is_last);
    let states = param_states(input, &rank);
    let activations = saved_activations(input, rank.layers, tokens, is_first);
    let working_set = backward_working_set(input, tokens);
    // Async TP keeps a symmetric-memory workspace for the all-gathered 16-bit
    // layer input (tokens × hidden), allocated once and reused by every layer.
    let async_tp_workspace = if input.async_tp && input.layout.tp > 1 {
        tokens * input.model.hidden_size as f64 * 2.0
    } else {
        0.0
    };
    let logits = if is_last {
        logits_bytes(input, tokens)
    } else {
        0.0
    };

    let static_bytes = states.weights
        + states.unsharded
        + states.grads
        + states.optimizer
        + activations
        + async_tp_workspace;
    let peak_phase = if logits >= working_set {
        "loss"
    } else {
        "backward"
    };
    let allocated = static_bytes + logits.max(working_set);
    let reserved = allocated * (1.0 + ALLOCATOR_OVERHEAD_FRACTION);
    let groups = [input.dp, input.layout.tp, input.layout.pp]
        .iter()
        .filter(|&&x| x > 1)
        .count() as f64;
    let non_torch = (CUDA_CONTEXT_GIB + NCCL_GIB_PER_GROUP * groups) * GIB;

    let per_gpu = MemoryBreakdown {
        weights_gib: (states.weights + states.unsharded) / GIB,
        kv_cache_gib: 0.0,
        activations_gib: (activations + logits.max(working_set)) / GIB,
        gradients_gib: states.grads / GIB,
        optimizer_gib: states.optimizer / GIB,
        overhead_gib: (reserved - allocated + non_torch) / GIB,
        total_gib: 0.0,
    }
    .with_total();
    let capacity = input.gpu.memory_gib * REPORTED_CAPACITY_FRACTION;
    let fits = per_gpu.total_gib <= capacity;
    let reason = (!fits).then(|| {
        format!(
            "{} × {}: training needs {:.1} GiB on the most loaded GPU, has {:.1} GiB",
            input.gpu.name,
            input.layout.gpus() * input.dp,
            per_gpu.total_gib,
            capacity
        )
    });
    TrainingMemory {
        fits,
        gpu_memory_gib: capacity,
        per_gpu,
        reserved_peak_gib: reserved / GIB,
        logits_gib: logits / GIB,
        peak_phase,
        trainable_params: (states.trainable * tp) as u64,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{gpu, model};

    fn input<'a>(m: &'a ModelArch, g: &'a GpuSpec) -> TrainingMemoryInput<'a> {
        TrainingMemoryInput {
            model: m,
            gpu: g,
            layout: Layout::SINGLE,
            dp: 1,
            zero: 0,
            micro_batch: 1,
            seq_len: 2048,
            micro_batches: 1,
            schedule: PipelineSchedule::OneFOneB,
            recompute: Recompute::None,
            precision: Precision::Bf16,
            method: FineTuneMethod::Full,
            optimizer: Optimizer::Adam,
            fused_loss: false,
            async_tp: false,
        }
    }

    fn close(a: f64, b: f64, what: &str) {
        assert!((a - b).abs() < 0.01 * b.max(0.1), "{what}: {a} vs {b}");
    }

    /// Llama-3.1-8B, FSDP over 8 GPUs, micro-batch 2 × 8192, selective AC, eager loss.
    /// Hand check: P_layer = 218,112,000; fp32 shard 4·P/8 = 3.74 GiB; Adam 8·P/8 = 7.48 GiB;
    /// activations 16384 tokens · 63,616 B · 32 layers = 31.06 GiB; logits 16384 · 128256 · 12
    /// + 16384 · 4h = 23.73 GiB; allocated 74.72 GiB; reserved ×1.1 = 82.19 GiB.
    #[test]
    fn llama8b_fsdp8_selective() {
        let m = model("llama-3.1-8b");
        let g = gpu("H100-96GB-HBM2e-500W");
        let r = training_memory(&TrainingMemoryInput {
            dp: 8,
            zero: 3,
            micro_batch: 2,
            seq_len: 8192,
            recompute: Recompute::Selective,
            ..input(&m, g)
        })
        .unwrap();
        close(
            activation_bytes_selective(&m),
            63_616.0,
            "selective bytes/token/layer",
        );
        close(r.optimizer_gib(), 7.4788, "optimizer");
        close(r.logits_gib, 23.7344, "logits");
        close(r.reserved_peak_gib, 82.19, "reserved");
    }

    /// Llama-3.2-1B (tied), one GPU, ZeRO-0, 1 × 2048, no recomputation:
    /// weights 6 B/param = 6.906 GiB, grads 4.604, Adam 9.207, activations 2.816
    /// (92,288 B/token/layer), logits 2.951; reserved 29.13 GiB.
    #[test]
    fn llama1b_single_gpu_no_recompute() {
        let m = model("llama-3.2-1b");
        let g = gpu("A100-80GB");
        let r = training_memory(&input(&m, g)).unwrap();
        close(
            activation_bytes_no_recompute(&m, false),
            92_288.0,
            "bytes/token/layer",
        );
        close(r.per_gpu.weights_gib, 6.9057, "weights");
        close(r.per_gpu.gradients_gib, 4.6038, "grads");
        close(r.reserved_peak_gib, 29.133, "reserved");
    }

    /// Llama-3.1-70B QLoRA r16 on all linears, 1 × 4096, full AC: 207,093,760
    /// trainable; base 4.127 bits; reserved 55.97 GiB.
    #[test]
    fn llama70b_qlora() {
        let m = model("llama-3.1-70b");
        let g = gpu("A100-80GB");
        let r = training_memory(&TrainingMemoryInput {
            seq_len: 4096,
            recompute: Recompute::Full,
            method: FineTuneMethod::Qlora {
                rank: 16,
                all_linear: true,
            },
            ..input(&m, g)
        })
        .unwrap();
        assert_eq!(r.trainable_params, 207_093_760);
        close(r.reserved_peak_gib, 55.972, "reserved");
        assert!(r.fits);
    }

    /// 2^32 × 2^32 tokens used to wrap to 0 in u64 and report 0 GiB of activations.
    #[test]
    fn out_of_range_inputs_name_their_field() {
        let m = model("llama-3.1-8b");
        let g = gpu("H100");
        for (patch, needle) in [
            (
                TrainingMemoryInput {
                    micro_batch: 1 << 32,
                    seq_len: 1 << 32,
                    ..input(&m, g)
                },
                "`micro_batch` = 4294967296",
            ),
            (
                TrainingMemoryInput {
                    seq_len: 1 << 32,
                    ..input(&m, g)
                },
                "`seq_len` = 4294967296",
            ),
            (
                TrainingMemoryInput {
                    micro_batches: 0,
                    ..input(&m, g)
                },
                "`micro_batches` = 0",
            ),
            (
                TrainingMemoryInput {
                    dp: 0,
                    ..input(&m, g)
                },
                "`dp` = 0",
            ),
        ] {
            let e = training_memory(&patch).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }

    #[test]
    fn async_tp_adds_one_gathered_layer_input_and_only_with_tp() {
        let m = model("llama-3.1-70b");
        let g = gpu("H100");
        let at = |tp: u32, async_tp: bool| {
            training_memory(&TrainingMemoryInput {
                layout: Layout { tp, pp: 1 },
                dp: 8,
                zero: 3,
                micro_batch: 2,
                seq_len: 4096,
                recompute: Recompute::Full,
                async_tp,
                ..input(&m, g)
            })
            .unwrap()
            .reserved_peak_gib
        };
        let gathered_gib = 2.0 * 4096.0 * 8192.0 * 2.0 / GIB;
        let added = at(8, true) - at(8, false);
        assert!(
            (added - gathered_gib * (1.0 + ALLOCATOR_OVERHEAD_FRACTION)).abs() < 1e-6,
            "{added} GiB"
        );
        assert_eq!(at(1, true), at(1, false));
    }

    #[test]
    fn zero_stages_shrink_memory() {
        let m = model("llama-3.1-8b");
        let g = gpu("H100");
        let totals: Vec<f64> = (0..=3)
            .map(|z| {
                training_memory(&TrainingMemoryInput {
                    dp: 8,
                    zero: z,
                    recompute: Recompute::Full,
                    ..input(&m, g)
                })
                .unwrap()
                .per_gpu
                .total_gib
            })
            .collect();
        assert!(totals.windows(2).all(|w| w[1] < w[0]), "{totals:?}");
    }

    impl TrainingMemory {
        fn optimizer_gib(&self) -> f64 {
            self.per_gpu.optimizer_gib
        }
    }
}
