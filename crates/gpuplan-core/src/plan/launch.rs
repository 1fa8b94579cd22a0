//! The serving-engine command that realises a replica: the checkpoint and
//! kernel `engine::serving_choice` picked, with the settings the prediction
//! assumed.

use super::capacity::ReplicaChoice;
use crate::engine::{vllm_command as engine_command, LaunchSettings};
use crate::serving::KV_BLOCK_TOKENS;
use crate::workload::InferenceWorkload;

/// `--max-model-len`: the model's whole context, so no request the model
/// accepts gets an HTTP 400 — but no more than one replica's KV cache holds,
/// since vLLM refuses to start when a single maximum-length sequence does
/// not fit. Whole KV blocks; never below the p99 request (the memory model
/// checked that one fits).
pub(crate) fn max_model_len(
    w: &InferenceWorkload,
    choice: &ReplicaChoice,
    context_p99: u64,
) -> u64 {
    let kv_tokens = choice.memory.kv_cache_tokens / KV_BLOCK_TOKENS * KV_BLOCK_TOKENS;
    w.model
        .max_position_embeddings
        .min(kv_tokens)
        .max(context_p99)
}

/// The `vllm serve` command line that realises a replica.
pub(crate) fn vllm_command(
    w: &InferenceWorkload,
    choice: &ReplicaChoice,
    max_model_len: u64,
) -> String {
    engine_command(
        &choice.serving,
        &LaunchSettings {
            tp: choice.dep.layout.tp,
            pp: choice.dep.layout.pp,
            max_num_seqs: choice.cap.batch,
            max_batched_tokens: w.max_batched_tokens,
            gpu_memory_utilization: w.memory_utilization,
            max_model_len,
            kv_precision: choice.dep.kv_precision,
        },
    )
}
