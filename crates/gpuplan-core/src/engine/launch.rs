//! The command line that starts a plan's replica on its engine, with the
//! settings the prediction assumed, in each engine's own flag names:
//! `vllm serve` (docs.vllm.ai "vllm serve" CLI reference),
//! `python -m sglang.launch_server` (docs.sglang.ai "Server Arguments") and
//! `trtllm-serve` (nvidia.github.io/TensorRT-LLM "trtllm-serve" command
//! reference, PyTorch backend).

use super::{Engine, ServingChoice};
use gpuplan_catalog::{CheckpointFormat, Precision};
use serde::Serialize;

/// The settings a plan's prediction assumed, engine-neutral; each command
/// converts the memory split into its engine's setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaunchSettings {
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline-parallel size.
    pub pp: u32,
    /// The batch cap (vLLM `--max-num-seqs`, SGLang `--max-running-requests`,
    /// TensorRT-LLM `--max_batch_size`).
    pub max_num_seqs: u64,
    /// Token budget of one step (vLLM `--max-num-batched-tokens`, SGLang
    /// `--chunked-prefill-size`, TensorRT-LLM `--max_num_tokens`).
    pub max_batched_tokens: u64,
    /// Share of GPU memory the plan budgets (vLLM `--gpu-memory-utilization`).
    pub gpu_memory_utilization: f64,
    /// Longest sequence served (vLLM `--max-model-len`, SGLang
    /// `--context-length`, TensorRT-LLM `--max_seq_len`).
    pub max_model_len: u64,
    /// KV-cache precision (FP8 → each engine's FP8 KV flag).
    pub kv_precision: Precision,
    /// GPU memory, GiB.
    pub gpu_memory_gib: f64,
    /// Weights on one GPU, GiB.
    pub weights_gib: f64,
    /// The KV-cache pool on one GPU the prediction assumed, GiB.
    pub kv_cache_gib: f64,
    /// Activations and runtime overhead on one GPU, GiB.
    pub other_gib: f64,
    /// Beams per request (TensorRT-LLM `--max_beam_width`; 1 = no beam search).
    pub max_beam_width: u32,
}

impl LaunchSettings {
    /// SGLang `--mem-fraction-static`: the share of GPU memory for weights
    /// and the KV pool together (activations live outside it).
    pub fn sglang_mem_fraction_static(&self) -> f64 {
        ((self.weights_gib + self.kv_cache_gib) / self.gpu_memory_gib).clamp(0.05, 0.95)
    }

    /// TensorRT-LLM `--kv_cache_free_gpu_memory_fraction`: the KV pool as a
    /// share of the memory free once weights, activations and the runtime
    /// are in place.
    pub fn trtllm_free_memory_fraction(&self) -> f64 {
        let free = self.gpu_memory_gib - self.weights_gib - self.other_gib;
        if free <= 0.0 {
            return 0.05;
        }
        (self.kv_cache_gib / free).clamp(0.05, 0.95)
    }
}

/// A file the launch command reads, to write beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchFile {
    /// File name, relative to where the command runs.
    pub path: String,
    /// Its contents.
    pub contents: String,
}

/// A launch command and the files it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Launch {
    /// The command line.
    pub command: String,
    /// Files the command reads (TensorRT-LLM's extra LLM API options).
    pub files: Vec<LaunchFile>,
}

/// The launch command of `engine` for a serving choice and settings.
pub fn launch_command(engine: Engine, choice: &ServingChoice, s: &LaunchSettings) -> Launch {
    match engine {
        Engine::Vllm => Launch {
            command: vllm_command(choice, s),
            files: Vec::new(),
        },
        Engine::Sglang => Launch {
            command: sglang_command(choice, s),
            files: Vec::new(),
        },
        Engine::Trtllm => trtllm_command(choice, s),
    }
}

/// The `vllm serve` command line for a serving choice and settings. It never
/// passes `--quantization awq`/`gptq` (vLLM reads the checkpoint's
/// quantization config and picks the Marlin kernel itself).
pub fn vllm_command(choice: &ServingChoice, s: &LaunchSettings) -> String {
    let mut cmd = format!(
        "vllm serve {} --tensor-parallel-size {} --pipeline-parallel-size {} --max-num-seqs {} --max-num-batched-tokens {} --gpu-memory-utilization {:.2} --max-model-len {}",
        choice.repo,
        s.tp,
        s.pp,
        s.max_num_seqs,
        s.max_batched_tokens,
        s.gpu_memory_utilization,
        s.max_model_len
    );
    if choice.dtype != "auto" {
        cmd.push_str(&format!(" --dtype {}", choice.dtype));
    }
    if let Some(q) = &choice.quantization {
        cmd.push_str(&format!(" --quantization {q}"));
    }
    if s.kv_precision == Precision::Fp8 {
        cmd.push_str(" --kv-cache-dtype fp8");
    }
    cmd
}

/// The `python -m sglang.launch_server` command line. SGLang binds to
/// 127.0.0.1 by default, so the command asks for all interfaces (a
/// container's port must be reachable); like vLLM it reads AWQ/GPTQ/FP8
/// checkpoint configs itself and takes `--quantization fp8` only for online
/// quantisation.
pub fn sglang_command(choice: &ServingChoice, s: &LaunchSettings) -> String {
    let mut cmd = format!(
        "python -m sglang.launch_server --model-path {} --tp-size {} --pp-size {} --max-running-requests {} --chunked-prefill-size {} --context-length {} --mem-fraction-static {:.2} --host 0.0.0.0 --port {}",
        choice.repo,
        s.tp,
        s.pp,
        s.max_num_seqs,
        s.max_batched_tokens,
        s.max_model_len,
        s.sglang_mem_fraction_static(),
        Engine::Sglang.profile().port
    );
    if choice.dtype != "auto" {
        cmd.push_str(&format!(" --dtype {}", choice.dtype));
    }
    if let Some(q) = &choice.quantization {
        cmd.push_str(&format!(" --quantization {q}"));
    } else if choice.format == CheckpointFormat::ModeloptFp8 {
        // SGLang's documented flag for NVIDIA's ModelOpt FP8 repos.
        cmd.push_str(" --quantization modelopt_fp8");
    }
    if s.kv_precision == Precision::Fp8 {
        cmd.push_str(" --kv-cache-dtype fp8_e4m3");
    }
    cmd
}

/// Name of the extra LLM API options file the TensorRT-LLM command reads.
pub const TRTLLM_EXTRA_OPTIONS: &str = "trtllm-extra-llm-api-options.yaml";

/// The `trtllm-serve` command line (PyTorch backend) and its extra LLM API
/// options file: the FP8 KV cache (`kv_cache_config.dtype`) has no flag of
/// its own. Which checkpoints it loads is [`Engine::loads`]'s rule.
pub fn trtllm_command(choice: &ServingChoice, s: &LaunchSettings) -> Launch {
    let mut command = format!(
        "trtllm-serve {} --backend pytorch --tp_size {} --pp_size {} --max_batch_size {} --max_num_tokens {} --max_seq_len {} --kv_cache_free_gpu_memory_fraction {:.2} --host 0.0.0.0 --port {}",
        choice.repo,
        s.tp,
        s.pp,
        s.max_num_seqs,
        s.max_batched_tokens,
        s.max_model_len,
        s.trtllm_free_memory_fraction(),
        Engine::Trtllm.profile().port
    );
    if s.max_beam_width > 1 {
        command.push_str(&format!(" --max_beam_width {}", s.max_beam_width));
    }
    let mut files = Vec::new();
    if s.kv_precision == Precision::Fp8 {
        command.push_str(&format!(" --extra_llm_api_options {TRTLLM_EXTRA_OPTIONS}"));
        files.push(LaunchFile {
            path: TRTLLM_EXTRA_OPTIONS.to_string(),
            contents: "kv_cache_config:\n  dtype: fp8\n".to_string(),
        });
    }
    Launch { command, files }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> LaunchSettings {
        LaunchSettings {
            tp: 2,
            pp: 1,
            max_num_seqs: 64,
            max_batched_tokens: 8192,
            gpu_memory_utilization: 0.9,
            max_model_len: 8192,
            kv_precision: Precision::Bf16,
            gpu_memory_gib: 80.0,
            weights_gib: 40.0,
            kv_cache_gib: 26.0,
            other_gib: 6.0,
            max_beam_width: 1,
        }
    }

    #[test]
    fn memory_settings_describe_the_same_kv_pool() {
        let s = settings();
        // SGLang: weights + KV = 66 of 80 GiB.
        assert!((s.sglang_mem_fraction_static() - 66.0 / 80.0).abs() < 1e-12);
        // TensorRT-LLM: KV 26 of the 34 GiB left after weights and the rest.
        assert!((s.trtllm_free_memory_fraction() - 26.0 / 34.0).abs() < 1e-12);
        // Nothing free: the smallest fraction, never a negative or NaN one.
        let full = LaunchSettings {
            weights_gib: 80.0,
            ..s
        };
        assert_eq!(full.trtllm_free_memory_fraction(), 0.05);
    }
}
