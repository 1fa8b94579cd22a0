//! The serving engine's side of a plan (vLLM): which checkpoint to serve, the
//! weight kernel vLLM will pick for it on a GPU, and the launch command.
//!
//! Kernel rules follow vLLM's quantization "Supported Hardware" table
//! (docs.vllm.ai/en/v0.9.2/features/quantization/supported_hardware.html; the
//! same rows through v0.15): AWQ ✗ Volta, ✓ Turing+; GPTQ ✓ Volta+; Marlin
//! (GPTQ/AWQ/FP8) ✓ Ampere+; INT8 W8A8 ✓ Turing+; FP8 W8A8 ✓ Ada, Hopper, AMD;
//! AWQ, GPTQ and INT8 W8A8 ✗ on AMD GPUs. Volta is SM 7.0, Turing 7.5, Ampere
//! 8.0/8.6, Ada 8.9, Hopper 9.0 (same page). [`Deployment`](crate::Deployment)
//! takes its GEMM rate from the kernel chosen here, so `estimate`, `fit` and
//! `plan` share one definition of what runs where.

use gpuplan_catalog::{
    Catalog, Checkpoint, CheckpointFormat, GpuSpec, ModelArch, Precision, Variant,
};
use serde::Serialize;

mod kind;
mod launch;

pub use kind::{Engine, EngineProfile, PrefillPolicy};
pub use launch::{launch_command, vllm_command, Launch, LaunchFile, LaunchSettings};

/// Where a GPU's kernels come from, as vLLM tells platforms apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    /// NVIDIA CUDA; `sm` = compute capability × 10 (Ada 8.9 → 89).
    Cuda {
        /// Compute capability × 10.
        sm: u32,
    },
    /// AMD ROCm on an Instinct GPU of this CDNA generation.
    Rocm {
        /// CDNA generation (MI250X: 2, MI300X/MI325X: 3).
        cdna: u32,
    },
    /// TPU, Neuron, Gaudi and other accelerators: vLLM's quantised GPU kernels
    /// are not modelled there, only 16- and 32-bit weights.
    Other,
}

/// The platform of a catalog GPU, from `gpus.csv` `vendor` and `architecture`.
///
/// Compute capabilities: Kepler K80 3.7, Maxwell M60 5.2, Pascal P100 6.0,
/// Volta 7.0, Turing 7.5, Ampere 8.0/8.6, Ada 8.9, Hopper 9.0, Blackwell 10.0
/// (B200/GB200; RTX 50 and RTX PRO are 12.0, same kernel rules here),
/// Blackwell Ultra 10.3 (NVIDIA CUDA GPU compute capability list).
pub fn platform(gpu: &GpuSpec) -> Platform {
    match gpu.vendor.as_str() {
        "NVIDIA" => {
            let sm = match gpu.architecture.as_str() {
                "Kepler" => 37,
                "Maxwell" => 52,
                "Pascal" => 60,
                "Volta" => 70,
                "Turing" => 75,
                "Ampere" => 80,
                "Ada Lovelace" | "Ada" => 89,
                "Hopper" => 90,
                "Blackwell" => 100,
                "Blackwell Ultra" => 103,
                _ => return Platform::Other,
            };
            Platform::Cuda { sm }
        }
        "AMD" => match gpu.architecture.as_str() {
            "CDNA2" => Platform::Rocm { cdna: 2 },
            "CDNA3" => Platform::Rocm { cdna: 3 },
            _ => Platform::Other,
        },
        _ => Platform::Other,
    }
}

/// The GEMM kernel vLLM runs a model's linear layers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightKernel {
    /// Unquantised 16-bit weights and activations (cuBLAS / hipBLASLt).
    Dense16,
    /// Unquantised FP32 (`--dtype float32`).
    Dense32,
    /// FP8 weights and FP8 activations on FP8 tensor cores (CUTLASS; Ada, Hopper, Blackwell, MI300).
    Fp8W8A8,
    /// FP8 weights dequantised to 16-bit inside FP8 Marlin (Ampere): weight-only W8A16.
    Fp8WeightOnlyMarlin,
    /// AWQ INT4 through vLLM's original AWQ GEMM (Turing, where Marlin does not run).
    AwqW4A16,
    /// AWQ INT4 converted to Marlin at load (Ampere+): W4A16, 16-bit math.
    AwqMarlinW4A16,
    /// GPTQ INT4 through the ExLlama-style GPTQ kernel (Volta, Turing).
    GptqW4A16,
    /// GPTQ INT4 through Marlin (Ampere+): W4A16, 16-bit math.
    GptqMarlinW4A16,
    /// INT8 weights and INT8 activations on INT8 tensor cores (CUTLASS scaled_mm).
    Int8W8A8,
    /// NVFP4 weights and activations on Blackwell FP4 tensor cores.
    NvFp4,
    /// MXFP4 expert weights (gpt-oss) dequantised to 16-bit (Marlin / Triton): W4A16.
    Mxfp4W4A16,
}

impl WeightKernel {
    /// The precision the GEMM math runs in, which sets the tensor-core rate:
    /// weight-only kernels (W4A16, W8A16, MXFP4) dequantise to 16-bit and run at
    /// the BF16/FP16 rate; W8A8 kernels run at the FP8 or INT8 rate; NVFP4 at FP4.
    pub fn compute_precision(self) -> Precision {
        match self {
            WeightKernel::Dense32 => Precision::Fp32,
            WeightKernel::Fp8W8A8 => Precision::Fp8,
            WeightKernel::Int8W8A8 => Precision::Int8,
            WeightKernel::NvFp4 => Precision::Fp4,
            WeightKernel::Dense16
            | WeightKernel::Fp8WeightOnlyMarlin
            | WeightKernel::AwqW4A16
            | WeightKernel::AwqMarlinW4A16
            | WeightKernel::GptqW4A16
            | WeightKernel::GptqMarlinW4A16
            | WeightKernel::Mxfp4W4A16 => Precision::Bf16,
        }
    }

    /// A vLLM release known to carry the kernel (not necessarily the first).
    ///
    /// 0.5.3 (July 2024) has AWQ and GPTQ Marlin (vllm-project/vllm PR #6612,
    /// #6745), FP8 Marlin (PR #5975), FP8 and INT8 W8A8 and the Llama 3.1 FP8
    /// checkpoints (vLLM blog 2024-07-23 "Announcing Llama 3.1 Support").
    /// 0.10.1 (Aug 2025) has NVFP4 on SM100 and SM120 (RFC #18153, PR #21309) and
    /// gpt-oss MXFP4.
    pub fn min_vllm_version(self) -> &'static str {
        match self {
            WeightKernel::NvFp4 | WeightKernel::Mxfp4W4A16 => "0.10.1",
            _ => "0.5.3",
        }
    }

    /// Short name for tables.
    pub fn label(self) -> &'static str {
        match self {
            WeightKernel::Dense16 => "dense 16-bit",
            WeightKernel::Dense32 => "dense fp32",
            WeightKernel::Fp8W8A8 => "fp8 w8a8",
            WeightKernel::Fp8WeightOnlyMarlin => "fp8 marlin w8a16",
            WeightKernel::AwqW4A16 => "awq w4a16",
            WeightKernel::AwqMarlinW4A16 => "awq marlin w4a16",
            WeightKernel::GptqW4A16 => "gptq w4a16",
            WeightKernel::GptqMarlinW4A16 => "gptq marlin w4a16",
            WeightKernel::Int8W8A8 => "int8 w8a8",
            WeightKernel::NvFp4 => "nvfp4 w4a4",
            WeightKernel::Mxfp4W4A16 => "mxfp4 w4a16",
        }
    }
}

/// "H100-SXM-80GB (Hopper, compute capability 9.0)" for messages.
fn describe(gpu: &GpuSpec) -> String {
    match platform(gpu) {
        Platform::Cuda { sm } => format!(
            "{} ({}, compute capability {}.{})",
            gpu.name,
            gpu.architecture,
            sm / 10,
            sm % 10
        ),
        _ => format!("{} ({})", gpu.name, gpu.architecture),
    }
}

/// The kernel vLLM runs weights stored in `format` with on `gpu`, planned at
/// weight precision `precision` (only 16- vs 32-bit matters for unquantised
/// checkpoints); `Err` is one sentence naming the GPU and why.
pub fn kernel_for(
    model: &ModelArch,
    gpu: &GpuSpec,
    format: CheckpointFormat,
    precision: Precision,
) -> Result<WeightKernel, String> {
    let plat = platform(gpu);
    let who = describe(gpu);
    // vLLM's CUDA build needs compute capability 7.0+ (vLLM GPU installation docs).
    if let Platform::Cuda { sm } = plat {
        if sm < 70 {
            return Err(format!(
                "{who}: vLLM needs NVIDIA compute capability 7.0 (Volta) or newer"
            ));
        }
    }
    let not_here = |what: &str, needs: &str| {
        Err(format!(
            "{who} cannot run {what} in vLLM: it needs {needs} (vLLM quantization Supported Hardware table)"
        ))
    };
    // vLLM reads a ModelOpt FP8 checkpoint (quantization `modelopt`, found in
    // its hf_quant_config.json) into the same FP8 linear kernels.
    match (format, plat) {
        (CheckpointFormat::Bf16, _) => Ok(if precision == Precision::Fp32 {
            WeightKernel::Dense32
        } else {
            WeightKernel::Dense16
        }),
        (_, Platform::Other) => Err(format!(
            "{who}: vLLM's quantised kernels ({format}) are modelled for NVIDIA and AMD Instinct GPUs only; use bf16 here"
        )),
        (CheckpointFormat::Fp8 | CheckpointFormat::ModeloptFp8, Platform::Cuda { sm }) if sm >= 89 => Ok(WeightKernel::Fp8W8A8),
        (CheckpointFormat::Fp8 | CheckpointFormat::ModeloptFp8, Platform::Rocm { cdna }) if cdna >= 3 => {
            Ok(WeightKernel::Fp8W8A8)
        }
        // FP8 Marlin is dense-only: the fused-MoE path has no FP8 Marlin
        // (vllm-project/vllm issue #7322; "FP8 MoE models only on Ada Lovelace or
        // Hopper", RedHatAI DeepSeek-Coder-V2-Instruct-FP8 discussion #1).
        (CheckpointFormat::Fp8 | CheckpointFormat::ModeloptFp8, Platform::Cuda { sm }) if sm >= 80 && !model.is_moe() => {
            Ok(WeightKernel::Fp8WeightOnlyMarlin)
        }
        (CheckpointFormat::Fp8 | CheckpointFormat::ModeloptFp8, Platform::Cuda { sm }) if sm >= 80 => not_here(
            "FP8 mixture-of-experts weights",
            "FP8 tensor cores (Ada, Hopper, Blackwell): FP8 Marlin has no fused-MoE path",
        ),
        (CheckpointFormat::Fp8 | CheckpointFormat::ModeloptFp8, _) => not_here(
            "FP8 weights",
            "FP8 tensor cores (Ada, Hopper, Blackwell, MI300) or, weight-only, FP8 Marlin on Ampere",
        ),
        (CheckpointFormat::Awq, Platform::Cuda { sm }) if sm >= 80 => {
            Ok(WeightKernel::AwqMarlinW4A16)
        }
        (CheckpointFormat::Awq, Platform::Cuda { sm }) if sm >= 75 => Ok(WeightKernel::AwqW4A16),
        (CheckpointFormat::Awq, _) => not_here(
            "AWQ INT4",
            "an NVIDIA GPU of compute capability 7.5 (Turing) or newer",
        ),
        (CheckpointFormat::Gptq, Platform::Cuda { sm }) if sm >= 80 => {
            Ok(WeightKernel::GptqMarlinW4A16)
        }
        (CheckpointFormat::Gptq, Platform::Cuda { .. }) => Ok(WeightKernel::GptqW4A16),
        (CheckpointFormat::Gptq, _) => not_here("GPTQ INT4", "an NVIDIA GPU"),
        (CheckpointFormat::W8a8Int8, Platform::Cuda { sm }) if sm >= 75 => {
            Ok(WeightKernel::Int8W8A8)
        }
        (CheckpointFormat::W8a8Int8, _) => not_here(
            "INT8 W8A8",
            "an NVIDIA GPU of compute capability 7.5 (Turing) or newer",
        ),
        (CheckpointFormat::Nvfp4, Platform::Cuda { sm }) if sm >= 100 => Ok(WeightKernel::NvFp4),
        (CheckpointFormat::Nvfp4, _) => not_here("NVFP4", "Blackwell FP4 tensor cores"),
        (CheckpointFormat::Mxfp4, Platform::Cuda { sm }) if sm >= 80 => {
            Ok(WeightKernel::Mxfp4W4A16)
        }
        (CheckpointFormat::Mxfp4, _) => not_here("MXFP4", "an NVIDIA GPU of Ampere or newer"),
    }
}

/// The kernel a deployment at `precision` runs with when no checkpoint is named:
/// 16/32-bit dense, FP8, INT8 W8A8, INT4 AWQ (else GPTQ, which Volta runs), NVFP4.
/// `Err` says why vLLM cannot serve this precision on this GPU.
pub fn default_kernel(
    model: &ModelArch,
    gpu: &GpuSpec,
    precision: Precision,
) -> Result<WeightKernel, String> {
    let format = match precision {
        Precision::Fp32 | Precision::Bf16 | Precision::Fp16 => CheckpointFormat::Bf16,
        Precision::Fp8 => CheckpointFormat::Fp8,
        Precision::Int8 => CheckpointFormat::W8a8Int8,
        Precision::Int4 => {
            return kernel_for(model, gpu, CheckpointFormat::Awq, precision)
                .or_else(|_| kernel_for(model, gpu, CheckpointFormat::Gptq, precision));
        }
        Precision::Fp4 => CheckpointFormat::Nvfp4,
    };
    kernel_for(model, gpu, format, precision)
}

/// Dense tensor throughput of `gpu` for GEMMs computing in `compute`, TFLOP/s:
/// exactly that precision's rate, no fallback (a kernel that computes in FP8 on
/// a GPU without a published FP8 rate has no rate).
pub fn tensor_tflops(gpu: &GpuSpec, compute: Precision) -> Option<f64> {
    match compute {
        Precision::Fp32 => gpu.tf32_tflops.or(gpu.fp32_tflops),
        Precision::Bf16 | Precision::Fp16 | Precision::Int4 => gpu.half_tflops(),
        Precision::Fp8 => gpu.fp8_tflops,
        Precision::Int8 => gpu.int8_tops,
        Precision::Fp4 => gpu.fp4_tflops,
    }
}

/// The precision attention math runs in: it follows the KV-cache dtype, not the
/// weights. An FP8 KV cache is read by FP8 attention kernels where the GPU has
/// FP8 tensor cores (FlashAttention-3 / FlashInfer FP8 on Hopper, Ada,
/// Blackwell); elsewhere it is dequantised and attention runs in 16-bit.
pub fn attention_precision(gpu: &GpuSpec, kv_precision: Precision) -> Precision {
    match kv_precision {
        Precision::Fp32 => Precision::Fp32,
        Precision::Fp8 if gpu.fp8_tflops.is_some() => Precision::Fp8,
        _ => Precision::Bf16,
    }
}

/// What to serve for a model release at a precision on a GPU, and how vLLM will run it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingChoice {
    /// Hugging Face repo (or the user's model name) `vllm serve` loads.
    pub repo: String,
    /// How that repo stores its weights.
    pub format: CheckpointFormat,
    /// The kernel vLLM picks for it on the GPU.
    pub kernel: WeightKernel,
    /// A vLLM release known to carry that kernel.
    pub min_vllm_version: String,
    /// Whether the repo is already quantised (false for online FP8 of a 16-bit repo).
    pub prequantized: bool,
    /// `--quantization` to pass: only `fp8` for online quantisation of a 16-bit
    /// repo; pre-quantised repos are detected from their config (an explicit
    /// `awq`/`gptq` would force the slow non-Marlin kernel).
    pub quantization: Option<String>,
    /// `--dtype`: `auto`, `bfloat16`, `half` or `float32`.
    pub dtype: String,
    /// The precision the weights occupy on the GPUs while loading: the 16-bit
    /// checkpoint for online FP8 (vLLM loads the model at original precision
    /// before quantising, vLLM FP8 docs "Online Dynamic Quantization"), else the
    /// checkpoint's own.
    pub load_precision: Precision,
    /// Things the operator must know (arm64 hosts, weight-only fallbacks ...).
    pub notes: Vec<String>,
}

/// Picks the checkpoint to serve: the pre-quantised checkpoint of the release
/// at that precision; for FP8 without one, online quantisation of the 16-bit
/// repo; INT8/INT4/FP4 without a published checkpoint are an `Err`. Models
/// without rows in `checkpoints.csv` (parametric ids, user HF configs) serve
/// `hf_repo` (or the id) at 16-bit or online FP8 only. `Err` is one sentence
/// naming the model, GPU and precision.
pub fn serving_choice(
    catalog: &Catalog,
    model: &ModelArch,
    variant: Variant,
    gpu: &GpuSpec,
    precision: Precision,
) -> Result<ServingChoice, String> {
    serving_choice_on(catalog, model, variant, gpu, precision, Engine::Vllm)
}

/// The repo and format to load for `precision` on `engine`, and whether
/// vLLM quantises it online (FP8 from the 16-bit release); `notes` gets
/// what the user should check.
fn pick_checkpoint(
    catalog: &Catalog,
    model: &ModelArch,
    variant: Variant,
    gpu: &GpuSpec,
    precision: Precision,
    engine: Engine,
    notes: &mut Vec<String>,
) -> Result<(String, CheckpointFormat, bool), String> {
    let rows: Vec<&Checkpoint> = catalog
        .checkpoints()
        .iter()
        .filter(|c| c.model == model.id)
        .collect();
    let sixteen_bit = matches!(
        precision,
        Precision::Bf16 | Precision::Fp16 | Precision::Fp32
    );
    let choice = if rows.is_empty() {
        let repo = model.hf_repo.clone().unwrap_or_else(|| model.id.clone());
        if !(sixteen_bit || precision == Precision::Fp8) {
            return Err(format!(
                "{} has no published {precision} checkpoint in checkpoints.csv; quantise one yourself or choose bf16 or fp8",
                model.id
            ));
        }
        notes.push(format!(
            "`{repo}` is not in checkpoints.csv: check that it names the {variant} release you mean"
        ));
        (repo, CheckpointFormat::Bf16, precision == Precision::Fp8)
    } else {
        if !rows.iter().any(|c| c.variant == variant) {
            let other: Vec<String> = rows.iter().map(|c| c.variant.to_string()).collect();
            return Err(format!(
                "{} has no {variant} release (published: {})",
                model.id,
                dedup(other).join(", ")
            ));
        }
        let stored = if sixteen_bit {
            Precision::Bf16
        } else {
            precision
        };
        let candidates = catalog.checkpoints_of(&model.id, variant, stored);
        // The preferred checkpoint whose kernel runs on this GPU (INT4: AWQ,
        // else GPTQ, which Volta runs); else the preferred one, whose kernel
        // error explains the rejection below.
        let runs = |c: &&&Checkpoint| kernel_for(model, gpu, c.format, precision).is_ok();
        let pick = candidates
            .iter()
            .filter(|c| engine.loads_format(c.format))
            .find(runs)
            .or_else(|| candidates.iter().find(runs))
            .or(candidates.first());
        match pick {
            Some(c) => (c.repo.clone(), c.format, false),
            None => {
                let bf16 = catalog.checkpoint(&model.id, variant, Precision::Bf16);
                match (precision, bf16) {
                    (Precision::Fp8, Some(c)) => (c.repo.clone(), c.format, true),
                    _ => {
                        let published: Vec<String> = rows
                            .iter()
                            .filter(|c| c.variant == variant)
                            .map(|c| c.format.to_string())
                            .collect();
                        return Err(format!(
                            "no published {} checkpoint of {} ({variant}) in checkpoints.csv (published: {}); quantise one yourself or choose another precision",
                            wanted_format(precision),
                            model.id,
                            dedup(published).join(", ")
                        ));
                    }
                }
            }
        }
    };
    Ok(choice)
}

/// [`serving_choice`] for `engine`: among the published checkpoints, one
/// the engine loads comes first (TensorRT-LLM takes NVIDIA's ModelOpt FP8
/// repo where the catalog lists one beside a compressed-tensors one).
pub fn serving_choice_on(
    catalog: &Catalog,
    model: &ModelArch,
    variant: Variant,
    gpu: &GpuSpec,
    precision: Precision,
    engine: Engine,
) -> Result<ServingChoice, String> {
    let mut notes = Vec::new();
    let (repo, format, online_fp8) =
        pick_checkpoint(catalog, model, variant, gpu, precision, engine, &mut notes)?;
    let kernel_format = if online_fp8 {
        CheckpointFormat::Fp8
    } else {
        format
    };
    let kernel = kernel_for(model, gpu, kernel_format, precision)
        .map_err(|why| format!("{} {precision}: {why}", model.id))?;
    let plat = platform(gpu);
    let no_bf16 = matches!(plat, Platform::Cuda { sm } if sm < 80);
    let dtype = match precision {
        Precision::Fp32 => "float32",
        Precision::Fp16 => "half",
        // BF16 needs compute capability 8.0 (vLLM falls back to FP16 below it).
        _ if no_bf16 => "half",
        Precision::Bf16 => "bfloat16",
        _ => "auto",
    };
    if no_bf16 && precision == Precision::Bf16 {
        notes.push(format!(
            "{} has no BF16 support: vLLM runs the model in FP16 (--dtype half), which can overflow for BF16-trained models",
            gpu.name
        ));
    }
    if online_fp8 {
        notes.push(format!(
            "no pre-quantised FP8 checkpoint of {} ({variant}): vLLM quantises `{repo}` online and first loads it at 16 bits, so each GPU must hold its 16-bit share of the weights (about {:.0} GB in all); a pre-quantised FP8 checkpoint avoids that",
            model.id,
            model.params().total() as f64 * 2.0 / 1e9
        ));
    }
    match kernel {
        WeightKernel::Fp8WeightOnlyMarlin => notes.push(format!(
            "{} has no FP8 tensor cores: vLLM runs the FP8 weights weight-only through FP8 Marlin, GEMMs in 16-bit",
            gpu.name
        )),
        WeightKernel::AwqW4A16 => notes.push(format!(
            "{} predates Marlin (Ampere): vLLM uses its plain AWQ GEMM kernel, slower at large batches",
            gpu.name
        )),
        WeightKernel::GptqW4A16 => notes.push(format!(
            "{} predates Marlin (Ampere): vLLM uses its ExLlama-style GPTQ kernel",
            gpu.name
        )),
        _ => {}
    }
    // Grace Hopper / Grace Blackwell superchips have an arm64 (Neoverse V2) host.
    if gpu.form_factor == "Superchip" {
        notes.push(format!(
            "{} is a Grace superchip with an arm64 host: use an arm64 (aarch64) vLLM image or wheel",
            gpu.name
        ));
    }
    Ok(ServingChoice {
        repo,
        format,
        kernel,
        min_vllm_version: kernel.min_vllm_version().to_string(),
        prequantized: format != CheckpointFormat::Bf16,
        quantization: online_fp8.then(|| "fp8".to_string()),
        dtype: dtype.to_string(),
        load_precision: if online_fp8 {
            Precision::Bf16
        } else {
            format.precision()
        },
        notes,
    })
}

/// The checkpoint formats that would serve a precision, for messages.
fn wanted_format(precision: Precision) -> &'static str {
    match precision {
        Precision::Int4 => "AWQ/GPTQ INT4",
        Precision::Int8 => "INT8 W8A8",
        Precision::Fp4 => "NVFP4/MXFP4",
        Precision::Fp8 => "FP8",
        Precision::Fp32 | Precision::Bf16 | Precision::Fp16 => "16-bit",
    }
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{catalog, gpu, model};

    fn kernel(model_id: &str, gpu_name: &str, p: Precision) -> Result<WeightKernel, String> {
        default_kernel(&model(model_id), gpu(gpu_name), p)
    }

    #[test]
    fn volta_rejects_awq_but_runs_gptq() {
        let m = model("llama-3.1-8b");
        let v100 = gpu("V100-SXM2-16GB");
        let err = kernel_for(&m, v100, CheckpointFormat::Awq, Precision::Int4).unwrap_err();
        assert!(err.contains("V100-SXM2-16GB"), "{err}");
        assert!(err.contains("7.5"), "{err}");
        assert_eq!(
            kernel_for(&m, v100, CheckpointFormat::Gptq, Precision::Int4),
            Ok(WeightKernel::GptqW4A16)
        );
        // Llama 3.1 8B has AWQ and GPTQ checkpoints: Volta gets the GPTQ one.
        let c = serving_choice(catalog(), &m, Variant::Instruct, v100, Precision::Int4).unwrap();
        assert_eq!(
            c.repo,
            "hugging-quants/Meta-Llama-3.1-8B-Instruct-GPTQ-INT4"
        );
        assert_eq!(c.kernel, WeightKernel::GptqW4A16);
        // Qwen2.5 7B publishes AWQ only: not servable at INT4 on Volta.
        let qwen = model("qwen2.5-7b");
        let err =
            serving_choice(catalog(), &qwen, Variant::Instruct, v100, Precision::Int4).unwrap_err();
        assert!(err.contains("AWQ"), "{err}");
        assert!(err.contains("V100-SXM2-16GB"), "{err}");
    }

    #[test]
    fn ampere_fp8_is_weight_only_marlin_computing_in_bf16() {
        let k = kernel("llama-3.1-70b", "A100-SXM-80GB", Precision::Fp8).unwrap();
        assert_eq!(k, WeightKernel::Fp8WeightOnlyMarlin);
        assert_eq!(k.compute_precision(), Precision::Bf16);
        // No FP8 Marlin for MoE layers.
        assert!(kernel("mixtral-8x7b", "A100-SXM-80GB", Precision::Fp8).is_err());
    }

    #[test]
    fn hopper_int8_is_w8a8_at_the_int8_rate() {
        let h100 = gpu("H100-SXM-80GB");
        let k = kernel("llama-3.1-70b", "H100-SXM-80GB", Precision::Int8).unwrap();
        assert_eq!(k, WeightKernel::Int8W8A8);
        assert_eq!(k.compute_precision(), Precision::Int8);
        // gpus.csv: H100 SXM INT8 1978.9 TOPS dense vs BF16 989.4 TFLOP/s.
        assert_eq!(tensor_tflops(h100, k.compute_precision()), Some(1978.9));
    }

    #[test]
    fn int4_is_w4a16_at_the_16_bit_rate() {
        let k = kernel("llama-3.1-70b", "H100-SXM-80GB", Precision::Int4).unwrap();
        assert_eq!(k, WeightKernel::AwqMarlinW4A16);
        assert_eq!(k.compute_precision(), Precision::Bf16);
        assert_eq!(
            kernel("llama-3.1-70b", "T4-16GB", Precision::Int4),
            Ok(WeightKernel::AwqW4A16)
        );
    }

    #[test]
    fn attention_follows_the_kv_cache_dtype() {
        let h100 = gpu("H100-SXM-80GB");
        assert_eq!(attention_precision(h100, Precision::Bf16), Precision::Bf16);
        assert_eq!(attention_precision(h100, Precision::Fp8), Precision::Fp8);
        // Ampere has no FP8 tensor cores: an FP8 cache is read by 16-bit attention.
        let a100 = gpu("A100-SXM-80GB");
        assert_eq!(attention_precision(a100, Precision::Fp8), Precision::Bf16);
    }

    #[test]
    fn fp8_and_fp4_need_the_hardware() {
        assert!(kernel("llama-3.1-8b", "T4-16GB", Precision::Fp8).is_err());
        assert!(kernel("llama-3.1-8b", "Inferentia2-32GB", Precision::Fp8).is_err());
        assert!(kernel("llama-3.1-8b", "H100-SXM-80GB", Precision::Fp4).is_err());
        assert_eq!(
            kernel("llama-3.1-8b", "B200-180GB", Precision::Fp4),
            Ok(WeightKernel::NvFp4)
        );
        assert_eq!(
            kernel("llama-3.1-8b", "MI300X-192GB", Precision::Fp8),
            Ok(WeightKernel::Fp8W8A8)
        );
        assert!(kernel("llama-3.1-8b", "MI300X-192GB", Precision::Int4).is_err());
        assert!(kernel("llama-3.1-8b", "P100-PCIe-16GB", Precision::Bf16).is_err());
    }

    #[test]
    fn instruct_and_base_name_their_own_repos() {
        let m = model("llama-3.1-70b");
        let h100 = gpu("H100-SXM-80GB");
        let c = serving_choice(catalog(), &m, Variant::Instruct, h100, Precision::Bf16).unwrap();
        assert_eq!(c.repo, "meta-llama/Llama-3.1-70B-Instruct");
        let c = serving_choice(catalog(), &m, Variant::Base, h100, Precision::Bf16).unwrap();
        assert_eq!(c.repo, "meta-llama/Llama-3.1-70B");
        let m33 = model("llama-3.3-70b");
        let c = serving_choice(catalog(), &m33, Variant::Instruct, h100, Precision::Bf16).unwrap();
        assert_eq!(c.repo, "meta-llama/Llama-3.3-70B-Instruct");
        let err =
            serving_choice(catalog(), &m33, Variant::Base, h100, Precision::Bf16).unwrap_err();
        assert!(err.contains("no base release"), "{err}");
    }

    #[test]
    fn awq_checkpoint_is_served_without_a_quantization_flag() {
        let m = model("llama-3.1-70b");
        let c = serving_choice(
            catalog(),
            &m,
            Variant::Instruct,
            gpu("A100-SXM-80GB"),
            Precision::Int4,
        )
        .unwrap();
        assert_eq!(
            c.repo,
            "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4"
        );
        assert_eq!(c.kernel, WeightKernel::AwqMarlinW4A16);
        let cmd = vllm_command(&c, &settings(Precision::Bf16));
        assert!(!cmd.contains("--quantization"), "{cmd}");
        assert!(cmd.starts_with("vllm serve hugging-quants/"), "{cmd}");
    }

    fn settings(kv: Precision) -> LaunchSettings {
        LaunchSettings {
            tp: 2,
            pp: 1,
            max_num_seqs: 64,
            max_batched_tokens: 8192,
            gpu_memory_utilization: 0.9,
            max_model_len: 8192,
            kv_precision: kv,
            gpu_memory_gib: 80.0,
            weights_gib: 40.0,
            kv_cache_gib: 26.0,
            other_gib: 6.0,
            max_beam_width: 1,
        }
    }

    #[test]
    fn fp8_prefers_the_prequantised_checkpoint_then_online() {
        let h100 = gpu("H100-SXM-80GB");
        let c = serving_choice(
            catalog(),
            &model("llama-3.1-70b"),
            Variant::Instruct,
            h100,
            Precision::Fp8,
        )
        .unwrap();
        assert!(c.prequantized);
        assert_eq!(c.quantization, None);
        assert_eq!(c.load_precision, Precision::Fp8);
        // No FP8 checkpoint of the base release: online quantisation, with a note.
        let c = serving_choice(
            catalog(),
            &model("llama-3.1-70b"),
            Variant::Base,
            h100,
            Precision::Fp8,
        )
        .unwrap();
        assert_eq!(c.repo, "meta-llama/Llama-3.1-70B");
        assert_eq!(c.quantization.as_deref(), Some("fp8"));
        assert_eq!(c.load_precision, Precision::Bf16);
        let cmd = vllm_command(&c, &settings(Precision::Fp8));
        assert!(
            cmd.ends_with("--quantization fp8 --kv-cache-dtype fp8"),
            "{cmd}"
        );
        assert!(
            c.notes.iter().any(|n| n.contains("online")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn missing_quantised_checkpoints_are_reasoned_errors() {
        let err = serving_choice(
            catalog(),
            &model("mixtral-8x22b"),
            Variant::Instruct,
            gpu("H100-SXM-80GB"),
            Precision::Int4,
        )
        .unwrap_err();
        assert!(
            err.contains("no published AWQ/GPTQ INT4 checkpoint of mixtral-8x22b"),
            "{err}"
        );
        assert!(err.contains("quantise one yourself"), "{err}");
        // DeepSeek-V3 is published in FP8 only.
        let err = serving_choice(
            catalog(),
            &model("deepseek-v3"),
            Variant::Instruct,
            gpu("H200-SXM-141GB"),
            Precision::Bf16,
        )
        .unwrap_err();
        assert!(err.contains("published: fp8"), "{err}");
    }

    #[test]
    fn grace_superchips_need_an_arm64_build() {
        let c = serving_choice(
            catalog(),
            &model("llama-3.1-70b"),
            Variant::Instruct,
            gpu("GH200-96GB"),
            Precision::Fp8,
        )
        .unwrap();
        assert!(c.notes.iter().any(|n| n.contains("arm64")), "{:?}", c.notes);
    }

    #[test]
    fn user_models_serve_their_repo_at_16_bit_or_online_fp8() {
        let m = model("gpt-h4096-l32-a32");
        let h100 = gpu("H100-SXM-80GB");
        let c = serving_choice(catalog(), &m, Variant::Instruct, h100, Precision::Bf16).unwrap();
        assert_eq!(c.repo, "gpt-h4096-l32-a32");
        assert!(!c.notes.is_empty());
        assert!(serving_choice(catalog(), &m, Variant::Instruct, h100, Precision::Int4).is_err());
    }
}
