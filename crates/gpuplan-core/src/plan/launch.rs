//! The serving-engine command that realises a replica.

use super::capacity::ReplicaChoice;
use crate::workload::InferenceWorkload;
use gpuplan_catalog::Precision;

/// The `vllm serve` command line that realises a replica.
pub(crate) fn vllm_command(
    w: &InferenceWorkload,
    choice: &ReplicaChoice,
    max_model_len: u64,
) -> String {
    let repo = w
        .model
        .hf_repo
        .clone()
        .unwrap_or_else(|| w.model.id.clone());
    let mut cmd = format!(
        "vllm serve {repo} --tensor-parallel-size {} --pipeline-parallel-size {} --max-num-seqs {} --max-num-batched-tokens {} --gpu-memory-utilization {:.2} --max-model-len {max_model_len}",
        choice.dep.layout.tp, choice.dep.layout.pp, choice.cap.batch, w.max_batched_tokens, w.memory_utilization
    );
    if choice.dep.kv_precision == Precision::Fp8 {
        cmd.push_str(" --kv-cache-dtype fp8");
    }
    match choice.dep.precision {
        Precision::Fp8 => cmd.push_str(" --quantization fp8"),
        Precision::Int4 => cmd.push_str(" --quantization awq  # use an AWQ/GPTQ INT4 checkpoint"),
        Precision::Int8 => cmd.push_str(" --quantization gptq  # use a W8 checkpoint"),
        Precision::Fp4 => cmd.push_str(" --quantization modelopt_fp4  # use an NVFP4 checkpoint"),
        _ => {}
    }
    cmd
}
