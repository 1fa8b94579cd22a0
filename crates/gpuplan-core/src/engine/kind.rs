//! The serving engines a plan can name — vLLM, SGLang and TensorRT-LLM — and
//! what differs between them, as named parameters.
//!
//! The per-iteration cost model ([`Deployment`](crate::Deployment)) was fitted
//! on one engine per GPU family (TensorRT-LLM on NVIDIA, ROCm vLLM on CDNA3:
//! [`Engine::reference_for`]); an engine's step time relative to the
//! reference is the one calibrated factor per engine (`engine_step_time.*`
//! in `data/calibration.csv`, fitted on that engine's published rows where the
//! development sets have them). Everything else here is documented engine
//! behaviour: KV page size, scheduler defaults, the chunked-prefill policy,
//! the memory setting's meaning and the hardware each engine runs on.

use super::{platform, Platform, ServingChoice, WeightKernel};
use crate::calibration::Calibration;
use gpuplan_catalog::{CheckpointFormat, GpuSpec};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A serving engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// vLLM (`vllm serve`), the default: the most widely deployed.
    Vllm,
    /// SGLang (`python -m sglang.launch_server`).
    Sglang,
    /// NVIDIA TensorRT-LLM (`trtllm-serve`, PyTorch backend).
    Trtllm,
}

/// How an engine schedules prompts beside running decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefillPolicy {
    /// Decodes first, then prompt chunks fill the rest of the step's token
    /// budget (vLLM V1: chunked prefill is always on).
    ChunkedBesideDecodes,
    /// Prompt chunks of at most `--chunked-prefill-size` run in steps of
    /// their own, decodes wait (SGLang's default; `--enable-mixed-chunk`
    /// mixes them).
    ChunkedSeparate,
    /// A whole prompt runs in one step beside the decodes, up to
    /// `--max_num_tokens` (TensorRT-LLM's in-flight batching with chunked
    /// context off, its default).
    WholeBesideDecodes,
}

/// An engine's documented behaviour and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EngineProfile {
    /// Tokens per KV-cache page: a sequence holds whole pages (vLLM
    /// `--block-size` 16 on CUDA; SGLang `--page-size` 1; TensorRT-LLM
    /// `tokens_per_block` 32).
    pub kv_block_tokens: u64,
    /// Default token budget of one step (vLLM `--max-num-batched-tokens`
    /// 8192 for `vllm serve` on large GPUs; SGLang `--chunked-prefill-size`
    /// 8192; TensorRT-LLM `--max_num_tokens` 8192).
    pub default_max_batched_tokens: u64,
    /// Default share of GPU memory the engine takes (vLLM
    /// `--gpu-memory-utilization` 0.90 of the total; SGLang
    /// `--mem-fraction-static` about 0.88 of the total for weights and KV
    /// pool; TensorRT-LLM `--kv_cache_free_gpu_memory_fraction` 0.90 of what
    /// is free after the weights — the launch command converts the plan's
    /// KV pool into each engine's setting).
    pub default_memory_utilization: f64,
    /// How prompts share steps with decodes.
    pub prefill_policy: PrefillPolicy,
    /// Largest batch captured as a CUDA graph by default; larger decode
    /// batches run eagerly (vLLM 512, SGLang 160 on most GPUs,
    /// TensorRT-LLM 128 with `cuda_graph_config` enabled).
    pub cuda_graph_max_batch: u64,
    /// Oldest release whose launch flags the command uses.
    pub min_version: &'static str,
    /// Container image of that release.
    pub image: &'static str,
    /// Default HTTP port of the OpenAI-compatible server.
    pub port: u16,
}

const VLLM: EngineProfile = EngineProfile {
    kv_block_tokens: 16,
    default_max_batched_tokens: 8192,
    default_memory_utilization: 0.90,
    prefill_policy: PrefillPolicy::ChunkedBesideDecodes,
    cuda_graph_max_batch: 512,
    min_version: "0.5.3",
    image: "vllm/vllm-openai",
    port: 8000,
};

const SGLANG: EngineProfile = EngineProfile {
    kv_block_tokens: 1,
    default_max_batched_tokens: 8192,
    default_memory_utilization: 0.88,
    prefill_policy: PrefillPolicy::ChunkedSeparate,
    cuda_graph_max_batch: 160,
    min_version: "0.4.9",
    image: "lmsysorg/sglang",
    port: 30000,
};

const TRTLLM: EngineProfile = EngineProfile {
    kv_block_tokens: 32,
    default_max_batched_tokens: 8192,
    default_memory_utilization: 0.90,
    prefill_policy: PrefillPolicy::WholeBesideDecodes,
    cuda_graph_max_batch: 128,
    min_version: "1.0.0",
    image: "nvcr.io/nvidia/tensorrt-llm/release",
    port: 8000,
};

impl Engine {
    /// Every engine, in the order plans list them.
    pub const ALL: [Engine; 3] = [Engine::Vllm, Engine::Sglang, Engine::Trtllm];

    /// The name workloads and flags use (`vllm`, `sglang`, `trtllm`).
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Trtllm => "trtllm",
        }
    }

    /// The product name.
    pub fn label(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::Trtllm => "TensorRT-LLM",
        }
    }

    /// The engine's documented behaviour.
    pub fn profile(self) -> &'static EngineProfile {
        match self {
            Engine::Vllm => &VLLM,
            Engine::Sglang => &SGLANG,
            Engine::Trtllm => &TRTLLM,
        }
    }

    /// The engine a GPU family's efficiency factors were fitted on: ROCm
    /// vLLM for the families fitted on MLPerf AMD rows, TensorRT-LLM for
    /// every other (NVIDIA's published tables; uncalibrated families borrow
    /// their means).
    pub fn reference_for(gpu: &GpuSpec) -> Engine {
        let family = crate::calibration::family(gpu);
        if crate::mlperf_inference::MLPERF_FITTED_FAMILIES.contains(&family) {
            Engine::Vllm
        } else {
            Engine::Trtllm
        }
    }

    /// The calibration factor holding this engine's step time relative to
    /// TensorRT-LLM's; SGLang shares vLLM's (no SGLang rows in the
    /// development sets: see [`Engine::factor_is_shared`]).
    pub fn step_time_factor_name(self) -> Option<&'static str> {
        match self {
            Engine::Vllm | Engine::Sglang => Some("engine_step_time.vllm"),
            Engine::Trtllm => None,
        }
    }

    /// Whether this engine's step-time factor was fitted on another
    /// engine's rows (SGLang uses vLLM's).
    pub fn factor_is_shared(self) -> bool {
        self == Engine::Sglang
    }

    /// Step time on this engine relative to the one the GPU family's
    /// factors stand for ([`Engine::reference_for`]).
    pub fn step_time_factor(self, gpu: &GpuSpec, cal: &Calibration) -> f64 {
        let factor = |e: Engine| {
            e.step_time_factor_name()
                .and_then(|name| cal.get(name))
                .unwrap_or(1.0)
        };
        factor(self) / factor(Engine::reference_for(gpu))
    }

    /// Whether the engine runs this weight kernel on this GPU; `Err` is one
    /// sentence naming the engine, GPU and what is missing. vLLM's own rules
    /// are [`kernel_for`](super::kernel_for)'s; SGLang follows them on the
    /// platforms it supports; TensorRT-LLM (PyTorch backend) needs NVIDIA
    /// Ampere or newer, FP8 tensor cores for FP8 and Blackwell for NVFP4.
    pub fn supports(self, gpu: &GpuSpec, kernel: WeightKernel) -> Result<(), String> {
        let plat = platform(gpu);
        match self {
            Engine::Vllm => Ok(()),
            Engine::Sglang => match plat {
                Platform::Cuda { sm } if sm >= 75 => Ok(()),
                Platform::Cuda { .. } => Err(format!(
                    "SGLang needs an NVIDIA GPU of compute capability 7.5 (Turing) or newer; {} is older",
                    gpu.name
                )),
                Platform::Rocm { cdna } if cdna >= 3 => Ok(()),
                _ => Err(format!(
                    "SGLang runs on NVIDIA (Turing or newer) and AMD Instinct MI300-series GPUs, not on {}",
                    gpu.name
                )),
            },
            Engine::Trtllm => {
                let Platform::Cuda { sm } = plat else {
                    return Err(format!(
                        "TensorRT-LLM runs on NVIDIA GPUs only, not on {}",
                        gpu.name
                    ));
                };
                if sm < 80 {
                    return Err(format!(
                        "TensorRT-LLM's PyTorch backend needs compute capability 8.0 (Ampere) or newer; {} is {}.{}",
                        gpu.name,
                        sm / 10,
                        sm % 10
                    ));
                }
                match kernel {
                    WeightKernel::Fp8WeightOnlyMarlin => Err(format!(
                        "TensorRT-LLM has no weight-only FP8 kernel: FP8 needs FP8 tensor cores (Ada, Hopper, Blackwell), which {} lacks",
                        gpu.name
                    )),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Whether the engine runs beam search inside its batch scheduler (the
    /// beams of a request as sequences of one step, the prompt's KV blocks
    /// shared), as gpuplan models it. TensorRT-LLM does (`max_beam_width`).
    /// vLLM moved beam search out of its engine (vllm-project/vllm#6226): its
    /// front end now re-submits every beam step as a one-token request, a
    /// cost the model does not describe; SGLang has none (sgl-project/sglang#903;
    /// the #15645 proposal was not merged).
    pub fn beam_search(self) -> Result<(), String> {
        match self {
            Engine::Trtllm => Ok(()),
            Engine::Vllm => Err(
                "vLLM runs beam search outside its engine, one request per beam step (vllm-project/vllm#6226), which gpuplan does not model: serve beam search on TensorRT-LLM (engine trtllm)".into(),
            ),
            Engine::Sglang => Err(
                "SGLang does not support beam search: serve it on TensorRT-LLM (engine trtllm)".into(),
            ),
        }
    }

    /// Whether the engine reads checkpoints stored in `format` as quantised
    /// (TensorRT-LLM: 16-bit, ModelOpt FP8 and NVFP4, gpt-oss MXFP4; vLLM
    /// and SGLang: every format the catalog lists).
    pub fn loads_format(self, format: CheckpointFormat) -> bool {
        match self {
            Engine::Trtllm => matches!(
                format,
                CheckpointFormat::Bf16
                    | CheckpointFormat::ModeloptFp8
                    | CheckpointFormat::Nvfp4
                    | CheckpointFormat::Mxfp4
            ),
            Engine::Vllm | Engine::Sglang => true,
        }
    }

    /// Whether the engine loads the serving choice's checkpoint as the
    /// prediction assumes. TensorRT-LLM's PyTorch backend (late 2025) reads
    /// ModelOpt checkpoints (`hf_quant_config.json`: NVFP4, FP8) and gpt-oss
    /// MXFP4, but not the compressed-tensors, AutoAWQ, AutoGPTQ or INT8
    /// W8A8 checkpoints the catalog lists for FP8/INT4/INT8 (it would serve
    /// them unquantised), and it never quantises online.
    pub fn loads(self, choice: &ServingChoice) -> Result<(), String> {
        if self != Engine::Trtllm {
            return Ok(());
        }
        if choice.quantization.is_some() {
            return Err(format!(
                "TensorRT-LLM does not quantise online: quantise `{}` with NVIDIA ModelOpt first",
                choice.repo
            ));
        }
        match choice.format {
            f if self.loads_format(f) => Ok(()),
            other => Err(format!(
                "TensorRT-LLM's PyTorch backend loads ModelOpt-quantised checkpoints, not `{}` ({other}), which it would serve unquantised; quantise with NVIDIA ModelOpt or choose bf16",
                choice.repo
            )),
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Engine {
    type Err = String;

    fn from_str(s: &str) -> Result<Engine, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "vllm" => Ok(Engine::Vllm),
            "sglang" => Ok(Engine::Sglang),
            "trtllm" | "tensorrt-llm" | "tensorrt_llm" => Ok(Engine::Trtllm),
            _ => Err(format!(
                "unknown engine `{s}`: expected one of vllm, sglang, trtllm"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::gpu;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_choices() {
        for e in Engine::ALL {
            assert_eq!(e.as_str().parse::<Engine>(), Ok(e));
            assert_eq!(e.to_string(), e.as_str());
        }
        assert_eq!("TensorRT-LLM".parse::<Engine>(), Ok(Engine::Trtllm));
        let err = "tgi".parse::<Engine>().unwrap_err();
        assert!(err.contains("vllm, sglang, trtllm"), "{err}");
    }

    #[test]
    fn trtllm_is_nvidia_ampere_and_newer_only() {
        let dense = WeightKernel::Dense16;
        assert!(Engine::Trtllm.supports(gpu("H100-SXM-80GB"), dense).is_ok());
        let amd = Engine::Trtllm
            .supports(gpu("MI300X-192GB"), dense)
            .unwrap_err();
        assert!(amd.contains("NVIDIA GPUs only"), "{amd}");
        let t4 = Engine::Trtllm.supports(gpu("T4-16GB"), dense).unwrap_err();
        assert!(t4.contains("7.5"), "{t4}");
        let marlin = Engine::Trtllm
            .supports(gpu("A100-SXM-80GB"), WeightKernel::Fp8WeightOnlyMarlin)
            .unwrap_err();
        assert!(marlin.contains("A100-SXM-80GB"), "{marlin}");
        assert!(Engine::Sglang.supports(gpu("MI300X-192GB"), dense).is_ok());
        assert!(Engine::Sglang
            .supports(gpu("V100-SXM2-32GB"), dense)
            .is_err());
        assert!(Engine::Vllm.supports(gpu("V100-SXM2-32GB"), dense).is_ok());
    }

    #[test]
    fn step_time_is_relative_to_the_engine_a_family_was_fitted_on() {
        let cal = Calibration::bundled();
        let vllm = cal.get("engine_step_time.vllm").unwrap();
        let h100 = gpu("H100-SXM-80GB");
        assert_eq!(Engine::Trtllm.step_time_factor(h100, &cal), 1.0);
        assert_eq!(Engine::Vllm.step_time_factor(h100, &cal), vllm);
        assert_eq!(Engine::Sglang.step_time_factor(h100, &cal), vllm);
        // CDNA3's factors were fitted on ROCm vLLM: vLLM there is the reference.
        let mi300 = gpu("MI300X-192GB");
        assert_eq!(Engine::Vllm.step_time_factor(mi300, &cal), 1.0);
        assert!((Engine::Trtllm.step_time_factor(mi300, &cal) - 1.0 / vllm).abs() < 1e-12);
    }
}
