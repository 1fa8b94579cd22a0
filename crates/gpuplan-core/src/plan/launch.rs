//! The serving-engine command that realises a replica: the checkpoint and
//! kernel `engine::serving_choice` picked, with the settings the prediction
//! assumed, in the flags of the plan's engine.

use super::capacity::ReplicaChoice;
use crate::engine::{launch_command, Engine, Launch, LaunchSettings};
use crate::workload::InferenceWorkload;

/// `--max-model-len`: the model's whole context, so no request the model
/// accepts gets an HTTP 400 — but no more than one replica's KV cache holds,
/// since the engines refuse to start when a single maximum-length sequence
/// does not fit. Whole KV pages of the engine; never below the p99 request
/// (the memory model checked that one fits).
pub(crate) fn max_model_len(
    w: &InferenceWorkload,
    choice: &ReplicaChoice,
    context_p99: u64,
) -> u64 {
    let page = choice.dep.engine.profile().kv_block_tokens;
    let kv_tokens = choice.memory.kv_cache_tokens / page * page;
    w.model
        .max_position_embeddings
        .min(kv_tokens)
        .max(context_p99)
}

/// The settings a replica's prediction assumed, for its launch command.
pub(crate) fn launch_settings(
    w: &InferenceWorkload,
    choice: &ReplicaChoice,
    max_model_len: u64,
) -> LaunchSettings {
    let m = &choice.memory.per_gpu;
    LaunchSettings {
        tp: choice.dep.layout.tp,
        pp: choice.dep.layout.pp,
        max_num_seqs: choice.cap.batch,
        max_batched_tokens: w.max_batched_tokens,
        gpu_memory_utilization: w.memory_utilization,
        max_model_len,
        kv_precision: choice.dep.kv_precision,
        gpu_memory_gib: choice.memory.gpu_memory_gib,
        weights_gib: m.weights_gib,
        kv_cache_gib: m.kv_cache_gib,
        other_gib: m.activations_gib + m.overhead_gib,
        max_beam_width: w.beam_width,
    }
}

/// The command line (and files) that start a replica on its engine.
pub(crate) fn replica_launch(
    w: &InferenceWorkload,
    choice: &ReplicaChoice,
    max_model_len: u64,
) -> Launch {
    launch_command(
        choice.dep.engine,
        &choice.serving,
        &launch_settings(w, choice, max_model_len),
    )
}

/// The oldest release of the replica's engine with its kernel and flags.
pub(crate) fn min_engine_version(choice: &ReplicaChoice) -> String {
    let engine = choice.dep.engine;
    let floor = engine.profile().min_version;
    if engine != Engine::Vllm {
        return floor.to_string();
    }
    let kernel = choice.serving.min_vllm_version.as_str();
    let parse = |v: &str| -> Vec<u32> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    if parse(kernel) >= parse(floor) {
        kernel.to_string()
    } else {
        floor.to_string()
    }
}

/// What the operator must know to run the replica: the serving choice's
/// notes in the engine's name, then the engine's own caveats.
pub(crate) fn engine_notes(choice: &ReplicaChoice) -> Vec<String> {
    let engine = choice.dep.engine;
    let mut notes: Vec<String> = choice
        .serving
        .notes
        .iter()
        .map(|n| match engine {
            Engine::Vllm => n.clone(),
            _ => n.replace("vLLM", engine.label()),
        })
        .collect();
    if engine.factor_is_shared() {
        notes.push(format!(
            "{} speed is predicted with vLLM's fitted step time: the development sets hold no {} measurements",
            engine.label(),
            engine.label()
        ));
    }
    notes
}
