//! Per-iteration cost of a transformer serving engine on one replica.
//!
//! A [`Deployment`] fixes model × GPU × precision × layout and precomputes
//! the per-token FLOP and byte coefficients, so that [`Deployment::iteration`]
//! is a handful of multiplications: the planner calls it millions of times.

use crate::calibration::Calibration;
use crate::engine::{attention_precision, default_kernel, tensor_tflops, Engine, WeightKernel};
use crate::error::{CoreError, Result};
use crate::layout::{weight_bytes_per_gpu, Layout};
use crate::memory::kv_bytes_per_token_per_gpu;
use gpuplan_catalog::{GpuSpec, ModelArch, Precision};
use serde::Serialize;

/// What limits an iteration (or a phase) most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Tensor-core FLOP/s.
    Compute,
    /// HBM bandwidth (weights, KV cache).
    MemoryBandwidth,
    /// Tensor-parallel all-reduce or pipeline sends.
    Communication,
    /// Fixed per-iteration cost (scheduling, launches).
    Overhead,
    /// KV-cache capacity (how many sequences fit), for throughput.
    KvCapacity,
    /// The engine's batch-size cap.
    BatchCap,
}

impl Bound {
    /// Short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::MemoryBandwidth => "memory-bw",
            Bound::Communication => "comm",
            Bound::Overhead => "overhead",
            Bound::KvCapacity => "kv-capacity",
            Bound::BatchCap => "batch-cap",
        }
    }
}

/// The work of one iteration on one pipeline stage.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct IterationWork {
    /// Sequences in their decode phase (one token each).
    pub decode_seqs: f64,
    /// Sum of the decode sequences' context lengths (tokens attended).
    pub decode_context_sum: f64,
    /// Prompt tokens processed this iteration (prefill, possibly chunked).
    pub prefill_tokens: f64,
    /// Causal attention pairs of those prompt tokens (c·p + c²/2 for a chunk
    /// of c tokens after p cached ones).
    pub prefill_attention_pairs: f64,
    /// Tokens whose logits are computed (one per sequence producing a token).
    pub logit_tokens: f64,
}

/// Time of one iteration and its parts, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct IterationCost {
    /// Total.
    pub total_s: f64,
    /// GEMMs at tensor peak × efficiency.
    pub gemm_compute_s: f64,
    /// GEMM weight and activation traffic at HBM bandwidth × efficiency.
    pub gemm_memory_s: f64,
    /// Attention FLOPs.
    pub attention_compute_s: f64,
    /// KV-cache reads and writes.
    pub attention_memory_s: f64,
    /// All-reduce and pipeline sends.
    pub communication_s: f64,
    /// Fixed per-iteration cost.
    pub overhead_s: f64,
}

impl IterationCost {
    /// The part that dominates.
    pub fn bound(&self) -> Bound {
        let compute = (if self.gemm_compute_s > self.gemm_memory_s {
            self.gemm_compute_s
        } else {
            0.0
        }) + (if self.attention_compute_s > self.attention_memory_s {
            self.attention_compute_s
        } else {
            0.0
        });
        let memory = (if self.gemm_memory_s >= self.gemm_compute_s {
            self.gemm_memory_s
        } else {
            0.0
        }) + (if self.attention_memory_s >= self.attention_compute_s {
            self.attention_memory_s
        } else {
            0.0
        });
        let parts = [
            (Bound::Compute, compute),
            (Bound::MemoryBandwidth, memory),
            (Bound::Communication, self.communication_s),
            (Bound::Overhead, self.overhead_s),
        ];
        parts
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|p| p.0)
            .unwrap_or(Bound::Compute)
    }
}

/// Smooth roofline `(tc^p + tm^p)^(1/p)`: equals max(tc, tm) as p → ∞ and is
/// never below it, so a prediction is never faster than the roofline.
pub fn roofline(compute_s: f64, memory_s: f64, p: f64) -> f64 {
    let m = compute_s.max(memory_s);
    if m <= 0.0 {
        return 0.0;
    }
    if !(compute_s.is_finite() && memory_s.is_finite()) {
        // NaN or infinite inputs propagate as the full formula has them.
        return m * ((compute_s / m).powf(p) + (memory_s / m).powf(p)).powf(1.0 / p);
    }
    // The larger term's ratio is exactly 1 (and 1^p = 1): only the smaller
    // one needs a power. The same value, bit for bit, at a third fewer
    // `pow` calls (the planner's hottest libm call).
    let smaller = compute_s.min(memory_s) / m;
    m * (1.0 + smaller.powf(p)).powf(1.0 / p)
}

/// Model × GPU × precision × layout, with per-iteration coefficients precomputed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deployment {
    /// Model id.
    pub model: String,
    /// GPU name.
    pub gpu: String,
    /// TP × PP.
    pub layout: Layout,
    /// Weight precision.
    pub precision: Precision,
    /// KV-cache precision.
    pub kv_precision: Precision,
    /// The weight kernel vLLM runs the linear layers with.
    pub kernel: WeightKernel,
    /// Precision the GEMMs compute in (the kernel's).
    pub compute_precision: Precision,
    /// Precision attention computes in (follows the KV-cache dtype).
    pub attention_precision: Precision,
    /// Weight bytes on the most loaded GPU.
    pub weight_bytes_per_gpu: f64,
    /// KV bytes per token on one GPU.
    pub kv_bytes_per_token_per_gpu: f64,
    /// Layers on one stage.
    layers_per_stage: f64,
    hidden: f64,
    /// Active matmul params outside routed experts (attention, dense FFN, shared experts, router).
    dense_active_params: f64,
    /// LM head params (the embedding matrix when tied).
    lm_head_params: f64,
    /// One routed expert's params, and how many layers/experts.
    expert_params: f64,
    moe_layers: f64,
    num_experts: f64,
    experts_per_token: f64,
    /// FFN width a token passes through (k · expert width for MoE).
    ffn_width_active: f64,
    /// Attention q width (heads · q/k head dim).
    attention_width: f64,
    weight_bytes_linear: f64,
    weight_bytes_other: f64,
    // GPU figures and calibrated rates.
    peak_flops: f64,
    peak_attention_flops: f64,
    /// FLOP/s of the LM head's GEMM: quantised checkpoints keep the head in
    /// 16-bit (ModelOpt and llm-compressor exclude `lm_head`), so it runs at
    /// the 16-bit tensor rate whatever the layers' kernel.
    lm_head_flops_s: f64,
    compute_eff: f64,
    attention_eff: f64,
    bandwidth_bytes_s: f64,
    bandwidth_eff: f64,
    allreduce_bytes_s: f64,
    hop_latency_s: f64,
    p2p_bytes_s: f64,
    overhead_s: f64,
    sequence_overhead_s: f64,
    roof_p: f64,
    moe_eff: f64,
    /// Whether the GPU family has fitted factors.
    pub calibrated_family: bool,
    /// The serving engine the iterations run on.
    pub engine: Engine,
    /// That engine's step time relative to the one the family's factors
    /// were fitted on ([`Engine::step_time_factor`]).
    pub step_time_factor: f64,
    /// Beams each decoding request runs (1 = greedy or sampling). Every
    /// beam is a sequence in the decode step; the prompt is prefilled once.
    pub beam_width: f64,
}

/// A MoE model's experts, experts per token, parameters per expert and
/// the FFN width a token activates (a dense model: none, and its FFN).
fn moe_shape(model: &ModelArch, moe_layers: f64) -> (f64, f64, f64, f64) {
    match &model.moe {
        Some(moe) => {
            let expert = if moe_layers > 0.0 {
                model.params().routed_experts as f64 / (moe_layers * moe.num_experts as f64)
            } else {
                0.0
            };
            (
                moe.num_experts as f64,
                moe.experts_per_token as f64,
                expert,
                (moe.experts_per_token * moe.expert_intermediate_size) as f64,
            )
        }
        None => (0.0, 0.0, 0.0, model.intermediate_size as f64),
    }
}

/// Width of the query-key products over all heads (MLA: the no-RoPE and
/// RoPE parts of each head).
fn attention_width(model: &ModelArch) -> f64 {
    match &model.mla {
        Some(m) => (model.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)) as f64,
        None => (model.num_attention_heads * model.head_dim) as f64,
    }
}

/// The TP all-reduce's achieved bandwidth (bytes/s) and ring-step latency
/// (s): NVLink where the GPUs of the group share it, else PCIe.
fn allreduce_link(gpu: &GpuSpec, layout: Layout, cal: &Calibration) -> (f64, f64) {
    if layout.tp <= 1 {
        return (f64::INFINITY, 0.0);
    }
    // NVLink where it joins the whole group (a PCIe board's bridge joins
    // pairs, and only the NVL boards are sold bridged), else PCIe.
    if gpu.nvlink_joins(layout.tp) {
        (
            gpu.nvlink_gbps / 2.0 * 1e9 * cal.allreduce_nvlink_efficiency(),
            cal.hop_latency_nvlink_s(),
        )
    } else {
        (pcie_allreduce_bytes_s(gpu, cal), cal.hop_latency_pcie_s())
    }
}

impl Deployment {
    /// Builds the deployment with the kernel vLLM picks for `precision` on this
    /// GPU when no checkpoint is named ([`default_kernel`]); errors when vLLM
    /// cannot run that precision there, the layout does not suit the model, or
    /// the GPU publishes no tensor throughput for the kernel's math.
    pub fn new(
        model: &ModelArch,
        gpu: &GpuSpec,
        layout: Layout,
        precision: Precision,
        kv_precision: Precision,
        cal: &Calibration,
    ) -> Result<Deployment> {
        let kernel = default_kernel(model, gpu, precision).map_err(|why| {
            CoreError::invalid(
                "precision",
                precision.as_str(),
                format!("a precision vLLM runs on this GPU: {why}"),
            )
        })?;
        Deployment::with_kernel(model, gpu, layout, precision, kv_precision, kernel, cal)
    }

    /// Builds the deployment for a given weight kernel (the one a
    /// [`ServingChoice`](crate::ServingChoice) names for its checkpoint).
    pub fn with_kernel(
        model: &ModelArch,
        gpu: &GpuSpec,
        layout: Layout,
        precision: Precision,
        kv_precision: Precision,
        kernel: WeightKernel,
        cal: &Calibration,
    ) -> Result<Deployment> {
        layout.check(model)?;
        // GEMMs run at the rate of the kernel's math: W4A16 and W8A16 at the
        // 16-bit rate, W8A8 at the FP8/INT8 rate, NVFP4 at the FP4 rate.
        let compute_precision = kernel.compute_precision();
        let tflops = tensor_tflops(gpu, compute_precision).ok_or_else(|| {
            CoreError::invalid(
                "gpu",
                &gpu.name,
                format!(
                    "a GPU with a published {} tensor throughput (gpus.csv) for the {} kernel",
                    compute_precision,
                    kernel.label()
                ),
            )
        })?;
        // Attention math follows the KV-cache dtype, not the weights.
        let attention_precision = attention_precision(gpu, kv_precision);
        let attention_tflops = tensor_tflops(gpu, attention_precision).unwrap_or(tflops);
        let p = model.params();
        let moe_layers = model.moe_layers() as f64;
        let (num_experts, k, expert_params, ffn_active) = moe_shape(model, moe_layers);
        let lm_head = (model.vocab_size * model.hidden_size) as f64;
        let attention_width = attention_width(model);
        let linear_bytes = precision.bytes_per_element();
        let other_bytes = if precision == Precision::Fp32 {
            4.0
        } else {
            2.0
        };
        let (allreduce, hop) = allreduce_link(gpu, layout, cal);
        let head_precision = if compute_precision.bytes_per_element() < 2.0 {
            Precision::Bf16
        } else {
            compute_precision
        };
        let lm_head_flops_s = tensor_tflops(gpu, head_precision).unwrap_or(tflops)
            * 1e12
            * cal.compute_efficiency(gpu, head_precision);
        Ok(Deployment {
            model: model.id.clone(),
            gpu: gpu.name.clone(),
            layout,
            precision,
            kv_precision,
            kernel,
            compute_precision,
            attention_precision,
            weight_bytes_per_gpu: weight_bytes_per_gpu(model, layout, precision),
            kv_bytes_per_token_per_gpu: kv_bytes_per_token_per_gpu(model, layout, kv_precision),
            layers_per_stage: model.num_layers as f64 / f64::from(layout.pp),
            hidden: model.hidden_size as f64,
            dense_active_params: (p.attention + p.dense_mlp + p.shared_experts + p.router) as f64,
            lm_head_params: lm_head,
            expert_params,
            moe_layers,
            num_experts,
            experts_per_token: k,
            ffn_width_active: ffn_active,
            attention_width,
            weight_bytes_linear: linear_bytes,
            weight_bytes_other: other_bytes,
            peak_flops: tflops * 1e12,
            peak_attention_flops: attention_tflops * 1e12,
            lm_head_flops_s,
            compute_eff: cal.compute_efficiency(gpu, compute_precision),
            attention_eff: cal.compute_efficiency(gpu, attention_precision),
            bandwidth_bytes_s: gpu.memory_bandwidth_gbps * 1e9,
            bandwidth_eff: cal.bandwidth_efficiency(gpu),
            allreduce_bytes_s: allreduce,
            hop_latency_s: hop,
            p2p_bytes_s: gpu.pcie_gbps_per_direction() * 1e9 * (25.0 / 31.5),
            overhead_s: cal.iteration_overhead_s()
                + cal.layer_overhead_s() * model.num_layers as f64 / f64::from(layout.pp),
            sequence_overhead_s: cal.sequence_overhead_s(),
            roof_p: cal.roofline_exponent(),
            moe_eff: cal.moe_gemm_efficiency(),
            calibrated_family: cal.has_family(gpu),
            engine: Engine::reference_for(gpu),
            step_time_factor: 1.0,
            beam_width: 1.0,
        })
    }

    /// The same deployment served by `engine`: every iteration takes that
    /// engine's step time ([`Engine::step_time_factor`]). Errors when the
    /// engine does not run this kernel or KV-cache precision on the GPU.
    pub fn on_engine(
        mut self,
        engine: Engine,
        gpu: &GpuSpec,
        cal: &Calibration,
    ) -> Result<Deployment> {
        engine.supports(gpu, self.kernel).map_err(|why| {
            CoreError::invalid(
                "engine",
                engine.as_str(),
                format!("an engine that runs this deployment: {why}"),
            )
        })?;
        self.engine = engine;
        self.step_time_factor = engine.step_time_factor(gpu, cal);
        Ok(self)
    }

    /// The same deployment with every request decoding `beams` beams
    /// (beam search): each beam is one more sequence in every decode step,
    /// reading its own context, and samples from its own logits.
    pub fn with_beams(mut self, beams: u32) -> Deployment {
        self.beam_width = f64::from(beams.max(1));
        self
    }

    /// KV-cache tokens one request holds at its end: the prompt once (its
    /// blocks are shared by the beams, as TensorRT-LLM's KV cache manager
    /// and vLLM's prefix sharing keep them) and each beam's own output.
    pub fn kv_tokens_per_request(&self, input_tokens: f64, output_tokens: f64) -> f64 {
        input_tokens + self.beam_width * output_tokens
    }

    /// Time of one iteration on one pipeline stage (one TP group).
    pub fn iteration(&self, w: &IterationWork) -> IterationCost {
        if self.beam_width > 1.0 {
            // A decoding request is `beam_width` sequences: in the GEMMs, in
            // the KV it reads and in the logits it samples from.
            let beams = self.beam_width;
            return self.sequence_iteration(&IterationWork {
                decode_seqs: w.decode_seqs * beams,
                decode_context_sum: w.decode_context_sum * beams,
                logit_tokens: w.logit_tokens + (beams - 1.0) * w.decode_seqs,
                ..*w
            });
        }
        self.sequence_iteration(w)
    }

    /// Time of one iteration whose work counts sequences (beams), not requests.
    fn sequence_iteration(&self, w: &IterationWork) -> IterationCost {
        let tp = f64::from(self.layout.tp);
        let pp = f64::from(self.layout.pp);
        let per_gpu = 1.0 / (tp * pp);
        let tokens = w.decode_seqs + w.prefill_tokens;
        let expert_active = self.moe_layers * self.experts_per_token * self.expert_params;
        // GEMM FLOPs: 2 per weight per token (dense part, routed experts at
        // their grouped-GEMM efficiency, the LM head for the sampled tokens).
        let gemm_flops = 2.0 * self.dense_active_params * tokens * per_gpu
            + 2.0 * expert_active * tokens * per_gpu
                / if self.moe_layers > 0.0 {
                    self.moe_eff
                } else {
                    1.0
                };
        // The LM head sits on the last stage only (the stage the pipeline
        // waits for), TP-split, at its own 16-bit rate.
        let lm_head_flops = 2.0 * self.lm_head_params * w.logit_tokens / tp;
        // Weight bytes read once per iteration; a MoE layer reads only the
        // experts its tokens route to: E·(1 − (1 − k/E)^n) distinct experts expected.
        let experts_read = if self.moe_layers > 0.0 && tokens > 0.0 {
            self.num_experts
                * (1.0 - (1.0 - self.experts_per_token / self.num_experts).powf(tokens))
        } else {
            0.0
        };
        let weight_bytes = (self.dense_active_params
            + self.moe_layers * experts_read * self.expert_params)
            * self.weight_bytes_linear
            * per_gpu
            + self.lm_head_params * self.weight_bytes_other / tp;
        // Activation traffic: residual/norm buffers (4·h) and the FFN intermediate, 2 bytes each.
        let activation_bytes = tokens
            * self.layers_per_stage
            * (4.0 * self.hidden + 2.0 * self.ffn_width_active / tp)
            * 2.0;
        let gemm_compute_s = gemm_flops / (self.peak_flops * self.compute_eff)
            + lm_head_flops / self.lm_head_flops_s;
        let gemm_memory_s =
            (weight_bytes + activation_bytes) / (self.bandwidth_bytes_s * self.bandwidth_eff);
        // Attention: QK^T and PV, 2 FLOPs each per (query, key) pair per head dim:
        // 4 · layers · width · pairs; KV cache read by decode, written by prefill.
        let pairs = w.decode_context_sum + w.prefill_attention_pairs;
        let attention_flops = 4.0 * self.layers_per_stage * self.attention_width / tp * pairs;
        let kv_bytes = (w.decode_context_sum + w.prefill_tokens) * self.kv_bytes_per_token_per_gpu;
        let attention_compute_s =
            attention_flops / (self.peak_attention_flops * self.attention_eff);
        let attention_memory_s = kv_bytes / (self.bandwidth_bytes_s * self.bandwidth_eff);
        // TP: two all-reduces per layer of tokens·hidden·2 bytes; ring cost
        // 2(t−1)/t · bytes / bandwidth + 2(t−1) hop latencies.
        let mut communication_s = 0.0;
        if self.layout.tp > 1 {
            let message = tokens * self.hidden * 2.0;
            communication_s += 2.0
                * self.layers_per_stage
                * (2.0 * (tp - 1.0) / tp * message / self.allreduce_bytes_s
                    + 2.0 * (tp - 1.0) * self.hop_latency_s);
        }
        // PP: the stage sends its activations to the next one.
        if self.layout.pp > 1 {
            communication_s += tokens * self.hidden * 2.0 / self.p2p_bytes_s + 10e-6;
        }
        // Host work per sequence runs in one serial loop: a stage's share is
        // its micro-batch's sequences times the pipeline depth.
        let overhead_s = self.overhead_s + self.sequence_overhead_s * w.decode_seqs * pp;
        let gemm = roofline(gemm_compute_s, gemm_memory_s, self.roof_p);
        let attention = roofline(attention_compute_s, attention_memory_s, self.roof_p);
        // The engine's step time relative to the one the factors were fitted
        // on scales every part alike (the roofline is homogeneous).
        let e = self.step_time_factor;
        IterationCost {
            total_s: (gemm + attention + communication_s + overhead_s) * e,
            gemm_compute_s: gemm_compute_s * e,
            gemm_memory_s: gemm_memory_s * e,
            attention_compute_s: attention_compute_s * e,
            attention_memory_s: attention_memory_s * e,
            communication_s: communication_s * e,
            overhead_s: overhead_s * e,
        }
    }

    /// The fastest a decode step at batch `b` could ever be on this hardware:
    /// this GPU's weights (the experts a batch of `b` touches) and the KV read
    /// at peak bandwidth, or the FLOPs at peak tensor throughput, whichever is
    /// larger. No calibrated factor enters it.
    pub fn decode_roofline_s(&self, batch: f64, context: f64) -> f64 {
        let tp = f64::from(self.layout.tp);
        let pp = f64::from(self.layout.pp);
        let per_gpu = 1.0 / (tp * pp);
        let experts_read = if self.moe_layers > 0.0 {
            self.num_experts * (1.0 - (1.0 - self.experts_per_token / self.num_experts).powf(batch))
        } else {
            0.0
        };
        let bytes = ((self.dense_active_params
            + self.moe_layers * experts_read * self.expert_params)
            * self.weight_bytes_linear
            + self.lm_head_params * self.weight_bytes_other)
            * per_gpu
            + batch * context * self.kv_bytes_per_token_per_gpu;
        let expert_active = self.moe_layers * self.experts_per_token * self.expert_params;
        let flops = 2.0
            * (self.dense_active_params + expert_active + self.lm_head_params)
            * batch
            * per_gpu;
        (bytes / self.bandwidth_bytes_s).max(flops / self.peak_flops)
    }

    /// The fastest a prefill of `tokens` prompt tokens could be: linear FLOPs at peak.
    pub fn prefill_roofline_s(&self, tokens: f64) -> f64 {
        let tp = f64::from(self.layout.tp);
        let pp = f64::from(self.layout.pp);
        let expert_active = self.moe_layers * self.experts_per_token * self.expert_params;
        2.0 * (self.dense_active_params + expert_active) * tokens / (tp * pp) / self.peak_flops
    }
}

/// Effective ring all-reduce bandwidth over PCIe, bytes/s (gen5 doubles gen4).
fn pcie_allreduce_bytes_s(gpu: &GpuSpec, cal: &Calibration) -> f64 {
    let gen = gpu.pcie_gen.unwrap_or(4) as i32;
    cal.allreduce_pcie_gen4_gbps() * 1e9 * 2f64.powi(gen - 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{gpu, model};

    fn deployment(gpu_name: &str, p: Precision, kv: Precision) -> Result<Deployment> {
        Deployment::new(
            &model("llama-3.1-70b"),
            gpu(gpu_name),
            Layout { tp: 2, pp: 1 },
            p,
            kv,
            &Calibration::bundled(),
        )
    }

    #[test]
    fn attention_rate_follows_the_kv_cache_not_the_weights() {
        // H100 SXM (gpus.csv): BF16 989.4, FP8 1978.9 TFLOP/s dense.
        let fp8_bf16kv = deployment("H100-SXM-80GB", Precision::Fp8, Precision::Bf16).unwrap();
        assert_eq!(fp8_bf16kv.kernel, WeightKernel::Fp8W8A8);
        assert_eq!(fp8_bf16kv.peak_flops, 1978.9e12);
        assert_eq!(fp8_bf16kv.attention_precision, Precision::Bf16);
        assert_eq!(fp8_bf16kv.peak_attention_flops, 989.4e12);
        let fp8_fp8kv = deployment("H100-SXM-80GB", Precision::Fp8, Precision::Fp8).unwrap();
        assert_eq!(fp8_fp8kv.peak_attention_flops, 1978.9e12);
    }

    #[test]
    fn gemm_rate_follows_the_kernel() {
        // INT4 AWQ-Marlin is W4A16: 16-bit rate; INT8 W8A8: INT8 rate (1978.9 TOPS).
        let int4 = deployment("H100-SXM-80GB", Precision::Int4, Precision::Bf16).unwrap();
        assert_eq!(int4.compute_precision, Precision::Bf16);
        assert_eq!(int4.peak_flops, 989.4e12);
        let int8 = deployment("H100-SXM-80GB", Precision::Int8, Precision::Bf16).unwrap();
        assert_eq!(int8.compute_precision, Precision::Int8);
        assert_eq!(int8.peak_flops, 1978.9e12);
        // Ampere FP8 is weight-only Marlin: A100 BF16 312 TFLOP/s.
        let a100 = deployment("A100-SXM-80GB", Precision::Fp8, Precision::Fp8).unwrap();
        assert_eq!(a100.kernel, WeightKernel::Fp8WeightOnlyMarlin);
        assert_eq!(a100.peak_flops, 312e12);
        assert_eq!(a100.peak_attention_flops, 312e12);
    }

    fn on_layout(p: Precision, tp: u32, pp: u32) -> Deployment {
        Deployment::new(
            &model("llama-3.1-70b"),
            gpu("H100-SXM-80GB"),
            Layout { tp, pp },
            p,
            Precision::Fp8,
            &Calibration::bundled(),
        )
        .unwrap()
    }

    fn sampled(d: &Deployment, logit_tokens: f64) -> IterationCost {
        d.iteration(&IterationWork {
            decode_seqs: 0.0,
            decode_context_sum: 0.0,
            prefill_tokens: 0.0,
            prefill_attention_pairs: 0.0,
            logit_tokens,
        })
    }

    /// The LM head stays 16-bit in FP8 checkpoints and sits whole on the
    /// last pipeline stage: its GEMM runs at the BF16 rate, split by TP only.
    #[test]
    fn the_lm_head_runs_at_16_bit_on_the_last_stage() {
        let cal = Calibration::bundled();
        let h100 = gpu("H100-SXM-80GB");
        let head = (128_256 * 8192) as f64;
        let tokens = 1000.0;
        let bf16_rate = 989.4e12 * cal.compute_efficiency(h100, Precision::Bf16);
        for (tp, pp) in [(1, 1), (2, 1), (1, 2), (2, 4)] {
            let d = on_layout(Precision::Fp8, tp, pp);
            let extra = sampled(&d, tokens).gemm_compute_s - sampled(&d, 0.0).gemm_compute_s;
            let want = 2.0 * head * tokens / f64::from(tp) / bf16_rate;
            assert!(
                (extra / want - 1.0).abs() < 1e-9,
                "TP{tp} PP{pp}: {extra} vs {want}"
            );
        }
    }

    /// Per-iteration overheads: a fixed part per stage, a part per layer on
    /// the stage, and a part per decoding sequence that a pipeline pays once
    /// per full iteration (a stage's share is its micro-batch times the depth).
    #[test]
    fn overheads_count_stages_layers_and_sequences() {
        let cal = Calibration::bundled();
        let decode = |d: &Deployment, seqs: f64| {
            d.iteration(&IterationWork {
                decode_seqs: seqs,
                decode_context_sum: seqs * 100.0,
                prefill_tokens: 0.0,
                prefill_attention_pairs: 0.0,
                logit_tokens: seqs,
            })
            .overhead_s
        };
        for pp in [1u32, 2, 4] {
            let d = on_layout(Precision::Fp8, 1, pp);
            let layers = 80.0 / f64::from(pp);
            let idle = cal.iteration_overhead_s() + cal.layer_overhead_s() * layers;
            assert!((decode(&d, 0.0) / idle - 1.0).abs() < 1e-12, "PP{pp}");
            // 64 sequences per micro-batch cost 64·depth sequences of host time.
            let per_seq = (decode(&d, 64.0) - decode(&d, 0.0)) / (64.0 * f64::from(pp));
            assert!(
                (per_seq / cal.sequence_overhead_s() - 1.0).abs() < 1e-9,
                "PP{pp}"
            );
        }
        assert!(cal.layer_overhead_s() > 0.0 && cal.sequence_overhead_s() > 0.0);
    }

    #[test]
    fn unsupported_precisions_are_errors_naming_the_gpu() {
        for (g, p) in [
            ("T4-16GB", Precision::Fp8),
            ("Inferentia2-32GB", Precision::Fp8),
            ("V100-SXM2-32GB", Precision::Int8),
            ("H100-SXM-80GB", Precision::Fp4),
        ] {
            let err = deployment(g, p, Precision::Bf16).unwrap_err().to_string();
            assert!(err.contains(g), "{g} {p}: {err}");
        }
    }

    #[test]
    fn roofline_never_beats_max() {
        for (c, m) in [(1.0, 2.0), (3.0, 0.5), (1.0, 1.0), (0.0, 0.0)] {
            let t = roofline(c, m, 1.38);
            assert!(t >= c.max(m) - 1e-15);
        }
        assert!((roofline(1.0, 2.0, 200.0) - 2.0).abs() < 1e-6);
    }

    #[test]
    fn roofline_is_the_full_formula_bit_for_bit() {
        let full = |c: f64, m: f64, p: f64| {
            let top = c.max(m);
            top * ((c / top).powf(p) + (m / top).powf(p)).powf(1.0 / p)
        };
        for (c, m) in [
            (1e-3, 2.5e-3),
            (7.3e-4, 1.1e-4),
            (0.0, 4e-3),
            (5e-3, 0.0),
            (2e-3, 2e-3),
        ] {
            for p in [1.0, 1.5251, 2.7, 20.0] {
                assert_eq!(
                    roofline(c, m, p).to_bits(),
                    full(c, m, p).to_bits(),
                    "{c} {m} {p}"
                );
            }
        }
        assert!(roofline(f64::NAN, 1.0, 1.5).is_nan());
    }
}
