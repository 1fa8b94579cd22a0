//! Training step-time model: one optimizer step of a (TP, PP, DP, ZeRO)
//! layout, from the FLOPs and bytes of each layer's GEMMs at the micro-batch
//! and TP split, flash attention, the non-GEMM kernels, tensor-parallel
//! collectives over the node's scale-up link, data-parallel gradient and
//! parameter collectives over the fabric with a documented overlap, the
//! pipeline bubble, MoE all-to-all and the optimizer update.

use super::fabric::Fabric;
use super::factors::TrainingFactors;
use crate::calibration::Calibration;
use crate::engine::tensor_tflops;
use crate::error::{CoreError, Result};
use crate::perf::roofline;
use crate::training_memory::{
    lora_params_per_layer, FineTuneMethod, Optimizer, PipelineSchedule, Recompute,
};
use gpuplan_catalog::{GpuSpec, MlpType, ModelArch, Precision};
use serde::Serialize;

/// What is trained, and how the framework runs it (independent of the layout).
#[derive(Debug, Clone, Copy)]
pub struct TrainingJob<'a> {
    /// The model.
    pub model: &'a ModelArch,
    /// Full, LoRA or QLoRA.
    pub method: FineTuneMethod,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// bf16, or fp8 (Float8 linear layers, bf16 elsewhere).
    pub precision: Precision,
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Elementwise kernels fused (torch.compile, Transformer Engine, Megatron's fused kernels).
    pub fused_kernels: bool,
    /// Tensor-parallel collectives overlapped with the GEMMs (async TP, TP comm overlap).
    pub async_tp: bool,
    /// Bytes per gradient element in the data-parallel reduction (4 = fp32, 2 = bf16).
    pub grad_reduce_bytes: f64,
    /// Which fused-attention kernels the framework calls.
    pub attention_kernel: AttentionKernel,
}

/// The fused-attention implementation a framework runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AttentionKernel {
    /// PyTorch `scaled_dot_product_attention` (FlashAttention-2 backend): torchtitan, FSDP trainers.
    Sdpa,
    /// cuDNN fused attention through Transformer Engine: Megatron-Core, NeMo, MLPerf submissions.
    Cudnn,
}

impl AttentionKernel {
    /// Name used in factor names.
    pub fn as_str(self) -> &'static str {
        match self {
            AttentionKernel::Sdpa => "sdpa",
            AttentionKernel::Cudnn => "cudnn",
        }
    }
}

/// How one job is split over GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TrainingLayout {
    /// Tensor-parallel degree (inside a node).
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Data-parallel replicas.
    pub dp: u32,
    /// ZeRO stage over DP (1 = distributed optimizer, 3 = FSDP).
    pub zero: u8,
    /// Sequences per micro-batch per GPU.
    pub micro_batch: u64,
    /// Micro-batches per optimizer step per DP rank (accumulation / pipeline).
    pub micro_batches: u64,
    /// Pipeline schedule.
    pub schedule: PipelineSchedule,
    /// Activation recomputation.
    pub recompute: Recompute,
}

impl TrainingLayout {
    /// GPUs used.
    pub fn gpus(&self) -> u64 {
        u64::from(self.tp) * u64::from(self.pp) * u64::from(self.dp)
    }

    /// Sequences per optimizer step.
    pub fn global_batch(&self) -> u64 {
        u64::from(self.dp) * self.micro_batch * self.micro_batches
    }
}

/// Where the time of one step goes (seconds) and what it achieves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepTime {
    /// Wall time of one optimizer step.
    pub step_s: f64,
    /// GEMMs (forward, backward, recomputation) on the critical stage.
    pub gemm_s: f64,
    /// Flash attention.
    pub attention_s: f64,
    /// Non-GEMM kernels (norms, activations, RoPE, residuals, casts, loss).
    pub elementwise_s: f64,
    /// Tensor-parallel collectives left exposed.
    pub tp_comm_s: f64,
    /// Pipeline bubble (idle stage time) plus stage-to-stage transfers.
    pub pipeline_s: f64,
    /// Data-parallel collectives left exposed after overlap.
    pub dp_comm_exposed_s: f64,
    /// Data-parallel collectives in total (before overlap).
    pub dp_comm_total_s: f64,
    /// MoE expert all-to-all.
    pub moe_all_to_all_s: f64,
    /// Optimizer update.
    pub optimizer_s: f64,
    /// Tokens per step.
    pub tokens_per_step: f64,
    /// Tokens per second, all GPUs.
    pub tokens_per_s: f64,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs per token (6·N + attention, PaLM/torchtitan/Megatron-Core convention; 4·N for frozen bases).
    pub model_flops_per_token: f64,
    /// Model TFLOP/s per GPU.
    pub tflops_per_gpu: f64,
    /// Model FLOPs utilisation against the dense 16-bit peak.
    pub mfu: f64,
    /// Whether the GEMM efficiency was fitted for this GPU family and precision.
    pub calibrated: bool,
}

impl StepTime {
    /// The parts of the step in seconds, named for people, in a fixed order;
    /// they sum to `step_s`.
    pub fn parts(&self) -> [(&'static str, f64); 8] {
        [
            ("GEMMs (fwd, bwd, recompute)", self.gemm_s),
            ("flash attention", self.attention_s),
            ("non-GEMM kernels", self.elementwise_s),
            ("tensor-parallel comm (exposed)", self.tp_comm_s),
            ("pipeline bubble + p2p", self.pipeline_s),
            ("data-parallel comm (exposed)", self.dp_comm_exposed_s),
            ("MoE all-to-all", self.moe_all_to_all_s),
            ("optimizer update", self.optimizer_s),
        ]
    }
}

/// One GEMM of a layer: `tokens × k` by `k × n`, after the TP split.
#[derive(Debug, Clone, Copy)]
struct Gemm {
    k: f64,
    n: f64,
    /// Runs at the grouped-GEMM (MoE expert) efficiency.
    expert: bool,
}

/// The linear layers of one decoder layer per GPU (TP-split): column-parallel
/// split their outputs, row-parallel their inputs. MoE experts count as k
/// experts' worth of GEMMs over all tokens (same FLOPs as routing).
fn layer_gemms(m: &ModelArch, tp: f64) -> Vec<Gemm> {
    let h = m.hidden_size as f64;
    let (q, kv) = attention_widths(m);
    let gated = matches!(m.mlp_type, MlpType::Swiglu | MlpType::Geglu);
    let up_factor = if gated { 2.0 } else { 1.0 };
    let mut gemms = vec![
        Gemm {
            k: h,
            n: (q + 2.0 * kv) / tp,
            expert: false,
        },
        Gemm {
            k: q / tp,
            n: h,
            expert: false,
        },
    ];
    match &m.moe {
        Some(moe) => {
            let fe = moe.expert_intermediate_size as f64;
            let k = moe.experts_per_token as f64;
            let shared = moe.num_shared_experts as f64;
            gemms.push(Gemm {
                k: h,
                n: up_factor * fe * k / tp,
                expert: true,
            });
            gemms.push(Gemm {
                k: fe * k / tp,
                n: h,
                expert: true,
            });
            if shared > 0.0 {
                gemms.push(Gemm {
                    k: h,
                    n: up_factor * fe * shared / tp,
                    expert: false,
                });
                gemms.push(Gemm {
                    k: fe * shared / tp,
                    n: h,
                    expert: false,
                });
            }
        }
        None => {
            let f = m.intermediate_size as f64;
            gemms.push(Gemm {
                k: h,
                n: up_factor * f / tp,
                expert: false,
            });
            gemms.push(Gemm {
                k: f / tp,
                n: h,
                expert: false,
            });
        }
    }
    gemms
}

/// Query and key/value widths (heads × head dim).
fn attention_widths(m: &ModelArch) -> (f64, f64) {
    match &m.mla {
        Some(mla) => (
            (m.num_attention_heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim)) as f64,
            (m.num_attention_heads * (mla.qk_nope_head_dim + mla.v_head_dim)) as f64 / 2.0,
        ),
        None => (
            (m.num_attention_heads * m.head_dim) as f64,
            (m.num_kv_heads * m.head_dim) as f64,
        ),
    }
}

/// FFN width one token passes through (k routed + shared experts for MoE).
fn token_ffn_width(m: &ModelArch) -> f64 {
    match &m.moe {
        Some(moe) => {
            (moe.expert_intermediate_size * (moe.experts_per_token + moe.num_shared_experts)) as f64
        }
        None => m.intermediate_size as f64,
    }
}

/// Model FLOPs per token: 6 per matmul weight (forward 2, backward 4) over the
/// active matmul weights including the LM head, plus attention's
/// 12 · layers · q-width · seq (non-causal, as Megatron-Core's and
/// torchtitan's counters and the PaLM paper's MFU count it). A frozen base
/// (LoRA/QLoRA) needs no weight gradients: 4 per weight.
pub fn model_flops_per_token(m: &ModelArch, seq_len: u64, method: FineTuneMethod) -> f64 {
    let p = m.params();
    let matmul = (p.attention + p.dense_mlp + p.routed_experts_active + p.shared_experts) as f64
        + (m.vocab_size * m.hidden_size) as f64;
    let (q, _) = attention_widths(m);
    let per_weight = match method {
        FineTuneMethod::Full => 6.0,
        FineTuneMethod::Lora { .. } | FineTuneMethod::Qlora { .. } => 4.0,
    };
    per_weight * matmul + per_weight * 2.0 * m.num_layers as f64 * q * seq_len as f64
}

/// Megatron-LM 2021 FLOPs per token (Narayanan et al. 2021, eq. in §5.1):
/// 96·B·s·l·h²·(1 + s/6h + V/16lh) per batch, i.e. four passes of the layer
/// matmuls (forward, recomputed forward, two backward) and three of the LM head.
pub fn megatron_2021_flops_per_token(m: &ModelArch, seq_len: u64) -> f64 {
    let h = m.hidden_size as f64;
    let l = m.num_layers as f64;
    let s = seq_len as f64;
    let v = m.vocab_size as f64;
    96.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
}

/// Checks the layout against the job and the node.
fn check(job: &TrainingJob<'_>, layout: &TrainingLayout, fabric: &Fabric) -> Result<()> {
    crate::layout::Layout {
        tp: layout.tp,
        pp: layout.pp,
    }
    .check(job.model)?;
    if layout.tp > fabric.gpus_per_node {
        return Err(CoreError::invalid(
            "tp",
            layout.tp.to_string(),
            format!(
                "at most the {} GPUs of one node (tensor parallelism stays inside a node)",
                fabric.gpus_per_node
            ),
        ));
    }
    for (field, v) in [
        ("dp", u64::from(layout.dp)),
        ("micro_batch", layout.micro_batch),
        ("micro_batches", layout.micro_batches),
        ("seq_len", job.seq_len),
    ] {
        if v == 0 {
            return Err(CoreError::invalid(field, "0", "a whole number >= 1"));
        }
    }
    if !matches!(
        job.precision,
        Precision::Bf16 | Precision::Fp16 | Precision::Fp8
    ) {
        return Err(CoreError::invalid(
            "precision",
            job.precision.as_str(),
            "bf16, fp16 or fp8 for training",
        ));
    }
    Ok(())
}

/// Rates of one GPU the step model needs.
struct Rates {
    gemm_flops_s: f64,
    expert_flops_s: f64,
    attention_flops_s: f64,
    memory_bytes_s: f64,
    roof_p: f64,
    gemm_bytes: f64,
    calibrated: bool,
    peak16_flops: f64,
}

fn rates(
    job: &TrainingJob<'_>,
    gpu: &GpuSpec,
    cal: &Calibration,
    f: &TrainingFactors,
) -> Result<Rates> {
    let gemm_precision = match job.precision {
        Precision::Fp8 => Precision::Fp8,
        _ => Precision::Bf16,
    };
    let peak = tensor_tflops(gpu, gemm_precision).ok_or_else(|| {
        CoreError::invalid(
            "precision",
            job.precision.as_str(),
            format!("a precision {} has tensor cores for (gpus.csv)", gpu.name),
        )
    })? * 1e12;
    let peak16 = tensor_tflops(gpu, Precision::Bf16).unwrap_or(peak / 2.0 * 1e-12) * 1e12;
    // Transformer Engine runs FP8 dot-product attention (cuDNN) in FP8 training;
    // PyTorch SDPA stays in 16 bits.
    let attention_peak = match (job.attention_kernel, gemm_precision) {
        (AttentionKernel::Cudnn, Precision::Fp8) => peak,
        _ => peak16,
    };
    let gemm_eff = f.gemm_efficiency(gpu, gemm_precision);
    Ok(Rates {
        gemm_flops_s: peak * gemm_eff,
        expert_flops_s: peak * gemm_eff * cal.moe_gemm_efficiency(),
        attention_flops_s: attention_peak * f.attention_efficiency(job.attention_kernel),
        memory_bytes_s: gpu.memory_bandwidth_gbps * 1e9 * cal.bandwidth_efficiency(gpu),
        roof_p: cal.roofline_exponent(),
        gemm_bytes: if gemm_precision == Precision::Fp8 {
            1.0
        } else {
            2.0
        },
        calibrated: f.has_family(gpu, gemm_precision),
        peak16_flops: peak16,
    })
}

/// Compute time of one micro-batch on the critical pipeline stage, split by kind.
#[derive(Debug, Clone, Copy, Default)]
struct MicroBatchCompute {
    gemm_s: f64,
    attention_s: f64,
    elementwise_s: f64,
    tp_comm_s: f64,
    moe_s: f64,
}

impl MicroBatchCompute {
    fn total(&self) -> f64 {
        self.gemm_s + self.attention_s + self.elementwise_s + self.tp_comm_s + self.moe_s
    }
}

/// Passes over the layer GEMMs per micro-batch: forward 1, backward 2 (input
/// and weight gradients; 1 for a frozen base), plus recomputed forwards.
fn gemm_passes(job: &TrainingJob<'_>, recompute: Recompute) -> f64 {
    let backward = match job.method {
        FineTuneMethod::Full => 2.0,
        _ => 1.0,
    };
    let recomputed = match recompute {
        Recompute::None => 0.0,
        // torchtitan's op-level policy recomputes every other matmul.
        Recompute::Selective => 0.5,
        Recompute::Full => 1.0,
    };
    1.0 + backward + recomputed
}

/// Passes over the layer GEMMs per micro-batch (forward = 1).
pub fn gemm_passes_of(job: &TrainingJob<'_>, recompute: Recompute) -> f64 {
    gemm_passes(job, recompute)
}

/// Forward elementwise bytes per token per layer on one GPU: RMSNorm and
/// residual adds over the hidden state, RoPE over q and k, the gated
/// activation over the FFN width. Eager PyTorch runs each op as its own
/// pass (an eager RMSNorm upcasts, squares, reduces, scales and casts back:
/// ≈36 bytes per element); fused kernels read and write each tensor once.
fn elementwise_bytes_per_token_layer(m: &ModelArch, fused: bool, tp: f64) -> f64 {
    let h = m.hidden_size as f64;
    let (q, kv) = attention_widths(m);
    let f = token_ffn_width(m);
    let (norm_and_residual, rope, activation) = if fused {
        // fused add+norm: read residual and input, write both (2 bytes each)
        (8.0, 4.0, 6.0)
    } else {
        // residual add (6) + eager RMSNorm (36); eager complex RoPE; silu then mul
        (42.0, 20.0, 10.0)
    };
    (2.0 * norm_and_residual * h + rope * (q + kv) + activation * f) / tp
}

/// One layer's GEMMs on one GPU for `tokens`: seconds per pass over the
/// frozen-or-trained weights, seconds of LoRA adapter GEMMs (all passes), and
/// the bytes of Float8 casts and NF4 dequantisation they add.
fn layer_gemms_time(job: &TrainingJob<'_>, r: &Rates, tokens: f64, tp: f64) -> (f64, f64, f64) {
    let fp8 = job.precision == Precision::Fp8;
    let (mut per_pass_s, mut adapter_s, mut cast_bytes) = (0.0, 0.0, 0.0);
    for g in layer_gemms(job.model, tp) {
        // Smooth roofline of FLOPs against operand traffic.
        let flops = 2.0 * tokens * g.k * g.n;
        let bytes = r.gemm_bytes * (tokens * g.k + g.k * g.n) + 2.0 * tokens * g.n;
        let rate = if g.expert {
            r.expert_flops_s
        } else {
            r.gemm_flops_s
        };
        per_pass_s += roofline(flops / rate, bytes / r.memory_bytes_s, r.roof_p);
        if fp8 {
            // Float8 tensorwise scaling: amax read + cast of inputs, weights and output gradients.
            cast_bytes += 5.0 * (2.0 * tokens * g.k + g.k * g.n + tokens * g.n);
        }
        if let FineTuneMethod::Qlora { .. } = job.method {
            // NF4 base dequantised to bf16 before each forward and backward GEMM.
            cast_bytes += 2.0 * g.k * g.n * (0.5 + 2.0 + 2.0);
        }
        if let FineTuneMethod::Lora { rank, .. } | FineTuneMethod::Qlora { rank, .. } = job.method {
            // Adapter GEMMs (rank r): forward 2·T·r·(k+n) FLOPs, backward twice that; memory-bound.
            let adapter_bytes = 2.0 * tokens * (g.k + g.n + 2.0 * rank as f64);
            adapter_s += 3.0
                * roofline(
                    2.0 * tokens * rank as f64 * (g.k + g.n) / r.gemm_flops_s,
                    adapter_bytes / r.memory_bytes_s,
                    r.roof_p,
                );
        }
    }
    (per_pass_s, adapter_s, cast_bytes)
}

/// One layer's tensor-parallel collectives, seconds: with sequence
/// parallelism 2 all-gathers + 2 reduce-scatters of the T·h activations per
/// pass (forward, backward, recomputed forward); async TP hides them behind
/// the GEMMs they feed, so only what the GEMMs cannot cover shows.
fn layer_tp_comm_time(
    job: &TrainingJob<'_>,
    layout: &TrainingLayout,
    fabric: &Fabric,
    f: &TrainingFactors,
    tokens: f64,
    layer_gemm_s: f64,
) -> f64 {
    if layout.tp <= 1 {
        return 0.0;
    }
    let tp = f64::from(layout.tp);
    let bytes = 4.0 * (tp - 1.0) / tp * tokens * job.model.hidden_size as f64 * 2.0;
    let passes = if layout.recompute == Recompute::Full {
        3.0
    } else {
        2.0
    };
    let comm_s = bytes * passes / (fabric.intra_node_bytes_s * f.collective_efficiency());
    if job.async_tp {
        (comm_s - layer_gemm_s).max(0.0)
    } else {
        comm_s
    }
}

/// One MoE layer's dispatch and combine all-to-all of the routed tokens over
/// the experts spread inside the node, forward and backward, seconds.
fn moe_layer_all_to_all_time(
    m: &ModelArch,
    fabric: &Fabric,
    f: &TrainingFactors,
    tokens: f64,
    tp: f64,
) -> f64 {
    let Some(moe) = &m.moe else { return 0.0 };
    let ep = (f64::from(fabric.gpus_per_node) / tp)
        .max(1.0)
        .min(moe.num_experts as f64);
    if ep <= 1.0 {
        return 0.0;
    }
    // Each routed token's hidden state (2 bytes) leaves the GPU with probability (ep − 1)/ep.
    let bytes =
        2.0 * tokens * moe.experts_per_token as f64 * m.hidden_size as f64 * 2.0 * (ep - 1.0) / ep;
    2.0 * bytes / (fabric.intra_node_bytes_s * f.collective_efficiency())
}

fn micro_batch_compute(
    job: &TrainingJob<'_>,
    layout: &TrainingLayout,
    fabric: &Fabric,
    r: &Rates,
    f: &TrainingFactors,
) -> MicroBatchCompute {
    let m = job.model;
    let tp = f64::from(layout.tp);
    let tokens = layout.micro_batch as f64 * job.seq_len as f64;
    let layers = m.num_layers.div_ceil(u64::from(layout.pp)) as f64;
    let (per_pass_s, adapter_s, cast_bytes) = layer_gemms_time(job, r, tokens, tp);
    let per_layer_gemm = per_pass_s * gemm_passes(job, layout.recompute) + adapter_s;
    // Flash attention: causal QKᵀ and PV, 4·T·(s/2)·q-width FLOPs forward;
    // backward recomputes the scores: 2.5× the forward.
    let (q, _) = attention_widths(m);
    let attention_fwd = 4.0 * tokens * (job.seq_len as f64 / 2.0) * q / tp / r.attention_flops_s;
    let attention_passes = if layout.recompute == Recompute::Full {
        4.5
    } else {
        3.5
    };
    // Non-GEMM kernels: forward traffic, backward twice it, recomputation once more.
    let elementwise_passes = if layout.recompute == Recompute::None {
        3.0
    } else {
        4.0
    };
    let elementwise_bytes =
        tokens * elementwise_bytes_per_token_layer(m, job.fused_kernels, tp) * elementwise_passes
            + cast_bytes;
    let tp_comm_s = layer_tp_comm_time(job, layout, fabric, f, tokens, per_layer_gemm);
    let moe_fraction = m.moe_layers() as f64 / m.num_layers as f64;
    let moe_s = moe_layer_all_to_all_time(m, fabric, f, tokens, tp);
    // Last stage: LM head GEMMs (forward, and backward passes when trained) and
    // the loss over the vocabulary slice.
    let v = m.vocab_size as f64 / tp;
    let head_passes = if matches!(job.method, FineTuneMethod::Full) {
        3.0
    } else {
        2.0
    };
    let head_s = head_passes * 2.0 * tokens * m.hidden_size as f64 * v / r.gemm_flops_s;
    // Cross-entropy bytes per logit: eager fp32 upcast, log-softmax and its gradient (≈34), fused 8.
    let loss_bytes = tokens * v * if job.fused_kernels { 8.0 } else { 34.0 };
    MicroBatchCompute {
        gemm_s: layers * per_layer_gemm + head_s,
        attention_s: layers * attention_fwd * attention_passes,
        elementwise_s: (layers * elementwise_bytes + loss_bytes) / r.memory_bytes_s,
        tp_comm_s: layers * tp_comm_s,
        moe_s: layers * moe_fraction * moe_s,
    }
}

/// Data-parallel bandwidth one rank gets, bytes/s: NVLink when the DP group
/// sits in one node, else the node's network shared by the `tp·pp` groups
/// on it (k = GPUs per node / (tp·pp) ranks of the group per node).
pub(crate) fn dp_bandwidth(layout: &TrainingLayout, fabric: &Fabric, f: &TrainingFactors) -> f64 {
    let model_parallel = u64::from(layout.tp) * u64::from(layout.pp);
    let node = u64::from(fabric.gpus_per_node);
    let eff = f.collective_efficiency();
    if layout.gpus() <= node {
        return fabric.intra_node_bytes_s * eff;
    }
    let ranks_per_node = (node / model_parallel.max(1)).max(1) as f64;
    let network = ranks_per_node * fabric.network_bytes_s_per_gpu * eff;
    network.min(fabric.intra_node_bytes_s * eff)
}

/// Data-parallel traffic per step per GPU (bytes) and how much of the
/// compute it may hide behind (seconds).
fn dp_comm(
    job: &TrainingJob<'_>,
    layout: &TrainingLayout,
    params_per_gpu: f64,
    trainable_per_gpu: f64,
    compute: &MicroBatchCompute,
) -> (f64, f64) {
    if layout.dp <= 1 {
        return (0.0, 0.0);
    }
    let dp = f64::from(layout.dp);
    let share = (dp - 1.0) / dp;
    let m = layout.micro_batches as f64;
    let param_bytes = if job.precision == Precision::Fp8 {
        1.0
    } else {
        2.0
    };
    let grads = share * trainable_per_gpu * job.grad_reduce_bytes;
    let mb_compute = compute.gemm_s + compute.attention_s + compute.elementwise_s;
    match layout.zero {
        // FSDP: all-gather the (frozen or trained) weights before forward and
        // backward of every micro-batch, reduce-scatter gradients each backward;
        // prefetching hides them behind all the compute.
        3 => (
            m * (2.0 * share * params_per_gpu * param_bytes + grads),
            m * mb_compute,
        ),
        // DDP / distributed optimizer: one gradient reduction per step (all-reduce
        // = reduce-scatter + all-gather of the updated weights), bucketed behind
        // the last micro-batch's backward and the next step's first forward.
        _ => (
            grads
                + if layout.zero >= 1 {
                    share * trainable_per_gpu * param_bytes
                } else {
                    grads
                },
            mb_compute,
        ),
    }
}

/// Bytes the optimizer reads and writes per trained parameter: fp32 master
/// weight, gradient and states read and written, the 16-bit copy written.
fn optimizer_bytes_per_param(optimizer: Optimizer) -> f64 {
    match optimizer {
        // read p, g, m, v (16) + write p, m, v (12) + bf16 copy (2)
        Optimizer::Adam => 30.0,
        // 8-bit m, v with block scales
        Optimizer::Adam8bit => 4.0 + 4.0 + 2.0 + 4.0 + 2.0 + 2.0,
    }
}

/// Idle micro-batch slots of the pipeline: 1F1B runs (m + p − 1) micro-batch
/// slots; interleaving with v chunks shrinks the bubble to (p − 1)/v slots
/// (Narayanan et al. 2021).
fn bubble_slots(layout: &TrainingLayout) -> f64 {
    let pp = f64::from(layout.pp);
    match layout.schedule {
        _ if layout.pp <= 1 => 0.0,
        PipelineSchedule::OneFOneB => pp - 1.0,
        PipelineSchedule::Interleaved(v) => (pp - 1.0) / f64::from(v.max(1)),
    }
}

/// Stage-to-stage activations and gradients (T·h bf16 each way), over the
/// network when a stage spans a node boundary, v times with interleaving, s.
fn pipeline_p2p_s(
    job: &TrainingJob<'_>,
    layout: &TrainingLayout,
    fabric: &Fabric,
    factors: &TrainingFactors,
) -> f64 {
    if layout.pp <= 1 {
        return 0.0;
    }
    let chunks = match layout.schedule {
        PipelineSchedule::Interleaved(v) => f64::from(v.max(1)),
        PipelineSchedule::OneFOneB => 1.0,
    };
    let tp = f64::from(layout.tp);
    let bytes =
        2.0 * layout.micro_batch as f64 * job.seq_len as f64 * job.model.hidden_size as f64 * 2.0
            / tp;
    let link = if u64::from(layout.tp) * u64::from(layout.pp) > u64::from(fabric.gpus_per_node) {
        fabric.network_bytes_s_per_gpu
    } else {
        fabric.intra_node_bytes_s
    } * factors.collective_efficiency();
    layout.micro_batches as f64 * chunks * bytes / link
}

/// The data-parallel gradient exchange (all of it, and the part compute
/// does not hide) and the optimizer update of the parameters on the
/// critical stage per GPU (the trainable ones, sharded over DP with ZeRO),
/// s.
fn data_parallel_and_optimizer_s(
    job: &TrainingJob<'_>,
    layout: &TrainingLayout,
    fabric: &Fabric,
    factors: &TrainingFactors,
    r: &Rates,
    mb: &MicroBatchCompute,
) -> (f64, f64, f64) {
    let m = job.model;
    let (tp, pp) = (f64::from(layout.tp), f64::from(layout.pp));
    let params_per_gpu = m.params().total() as f64 / (tp * pp);
    let trainable_per_gpu = match job.method {
        FineTuneMethod::Full => params_per_gpu,
        FineTuneMethod::Lora { rank, all_linear } | FineTuneMethod::Qlora { rank, all_linear } => {
            lora_params_per_layer(m, rank, all_linear) * m.num_layers as f64 / (tp * pp)
        }
    };
    let (dp_bytes, overlappable) = dp_comm(job, layout, params_per_gpu, trainable_per_gpu, mb);
    let dp_total = dp_bytes / dp_bandwidth(layout, fabric, factors);
    let dp_exposed = (dp_total - factors.dp_overlap() * overlappable).max(0.0);
    let optimizer_shards = if layout.zero >= 1 {
        f64::from(layout.dp)
    } else {
        1.0
    };
    let optimizer_s = trainable_per_gpu / optimizer_shards
        * optimizer_bytes_per_param(job.optimizer)
        / r.memory_bytes_s;
    (dp_total, dp_exposed, optimizer_s)
}

/// One optimizer step of `job` split as `layout` on `gpu`s connected by `fabric`.
pub fn step_time(
    job: &TrainingJob<'_>,
    layout: &TrainingLayout,
    gpu: &GpuSpec,
    fabric: &Fabric,
    cal: &Calibration,
    factors: &TrainingFactors,
) -> Result<StepTime> {
    check(job, layout, fabric)?;
    let r = rates(job, gpu, cal, factors)?;
    let m = job.model;
    let mb = micro_batch_compute(job, layout, fabric, &r, factors);
    let micro = layout.micro_batches as f64;
    let t_mb = mb.total();
    let bubble_slots = bubble_slots(layout);
    let p2p_s = pipeline_p2p_s(job, layout, fabric, factors);
    let pipeline_total = (micro + bubble_slots) * t_mb + p2p_s;
    let (dp_total, dp_exposed, optimizer_s) =
        data_parallel_and_optimizer_s(job, layout, fabric, factors, &r, &mb);
    let step_s = pipeline_total + dp_exposed + optimizer_s;
    let tokens_per_step = layout.global_batch() as f64 * job.seq_len as f64;
    let tokens_per_s = tokens_per_step / step_s;
    let gpus = layout.gpus() as f64;
    let flops_per_token = model_flops_per_token(m, job.seq_len, job.method);
    let tflops = tokens_per_s / gpus * flops_per_token / 1e12;
    Ok(StepTime {
        step_s,
        gemm_s: micro * mb.gemm_s,
        attention_s: micro * mb.attention_s,
        elementwise_s: micro * mb.elementwise_s,
        tp_comm_s: micro * mb.tp_comm_s,
        pipeline_s: bubble_slots * t_mb + p2p_s,
        dp_comm_exposed_s: dp_exposed,
        dp_comm_total_s: dp_total,
        moe_all_to_all_s: micro * mb.moe_s,
        optimizer_s,
        tokens_per_step,
        tokens_per_s,
        tokens_per_s_per_gpu: tokens_per_s / gpus,
        model_flops_per_token: flops_per_token,
        tflops_per_gpu: tflops,
        mfu: tflops * 1e12 / r.peak16_flops,
        calibrated: r.calibrated,
    })
}
