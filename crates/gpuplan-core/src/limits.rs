//! The sane range of every number a workload, a layout or a training run
//! takes, in one place. The CLI flags use the same constants.
//!
//! As in [`gpuplan_catalog::limits`], each bound is far beyond any real
//! deployment, so no real input is rejected, but it stops absurd input
//! (`1e308` requests per second, `2^31` replicas, a 1e-300 utilisation cap)
//! at the boundary, with the field, the value and the range in words, before
//! it can overflow or saturate a count and come out as a plausible number.
//! Together they bound what the planner derives: replicas of a plan are at
//! most `peak / (capacity × max_utilization)`, and with these bounds the
//! planner's inputs stay finite and within a few orders of magnitude.

pub use gpuplan_catalog::limits::{Count, Span};

// ---- Workload (`docs/workload.md`) ----

/// `traffic.requests_per_s` and `mean_requests_per_s`: > 0 and at most 10
/// million requests per second, 100× the largest public LLM API's peak.
pub const REQUESTS_PER_S: Span = Span::above(0.0, 1e7);
/// Token lengths (`mean`, `p99`): > 0 and at most the longest context any
/// model in the catalog may declare (2^27 tokens).
pub const TOKENS: Span = Span::above(0.0, (1u64 << 27) as f64);
/// The tokens of one histogram bucket: a length a request can have, from 1
/// to 2^27 (the simulator draws requests of exactly these lengths, so a
/// bucket of 0.3 tokens, which a mean may be, is no length at all).
pub const HISTOGRAM_TOKENS: Span = Span::from(1.0, (1u64 << 27) as f64);
/// A histogram bucket's weight: relative, from 0 to 10^15 (the sum of a
/// thousand such weights stays exact enough in `f64`).
pub const HISTOGRAM_WEIGHT: Span = Span::from(0.0, 1e15);
/// Coefficient of variation of inter-arrival times: > 0 and at most 100
/// (real traffic is below 10; 100 makes every queue degenerate).
pub const ARRIVAL_CV: Span = Span::above(0.0, 100.0);
/// Latency targets, ms: > 0 and at most one day (86,400,000 ms).
pub const LATENCY_MS: Span = Span::above(0.0, 86_400_000.0);
/// `constraints.min_replicas`: 1 to 100,000 replicas (a fleet of 100k model
/// copies is beyond any service; 2^31 would wrap the planner's counts).
pub const MIN_REPLICAS: Count = Count::new(1, 100_000);
/// `constraints.max_gpus_per_replica`: 1 to [`TP`]'s maximum.
pub const MAX_GPUS_PER_REPLICA: Count = Count::new(1, 1024);
/// `constraints.max_usd_per_hour`: > 0 and at most 10^9 USD per hour.
pub const BUDGET_USD_PER_HOUR: Span = Span::above(0.0, 1e9);
/// `constraints.max_utilization`: from 1% to 99% of a replica's throughput at
/// peak. Below 1% a plan needs 100× the replicas it serves with; 1e-300
/// would make the replica count overflow. 100% has no headroom at all.
pub const MAX_UTILIZATION: Span = Span::from(0.01, 0.99);
/// `pricing.spot_preemptions_per_hour`: 0 to 60 (one a minute).
pub const SPOT_PREEMPTIONS_PER_HOUR: Span = Span::from(0.0, 60.0);
/// `pricing.spot_replacement_minutes`: > 0 and at most a week (10,080 minutes).
pub const SPOT_REPLACEMENT_MINUTES: Span = Span::above(0.0, 10_080.0);
/// `engine.memory_utilization` / `--memory-utilization`: a fraction in (0, 1].
pub const MEMORY_UTILIZATION: Span = Span::above(0.0, 1.0);

// ---- Replica layout and engine flags (`fit`, `estimate`) ----

/// Tensor-parallel degree: 1 to 1024 (real deployments use at most 64).
pub const TP: Count = Count::new(1, 1024);
/// Pipeline-parallel degree: 1 to 1024 (real runs use at most 128).
pub const PP: Count = Count::new(1, 1024);
/// Data-parallel degree: 1 to 2^20 (the largest clusters have ~10^5 GPUs).
pub const DP: Count = Count::new(1, 1 << 20);
/// GPUs in total (`--count`): 1 to 2^20, so tp × pp × dp fits easily in `u32`.
pub const GPUS: Count = Count::new(1, 1 << 20);
/// A context, prompt, output or training sequence length, tokens: 1 to 2^27
/// (the longest context a catalog model may declare).
pub const SEQUENCE_TOKENS: Count = Count::new(1, 1 << 27);
/// `engine.max_batched_tokens` and `--max-batched-tokens` (vLLM
/// `--max-num-batched-tokens`), one rule for every verb: 256 to 2^24.
///
/// vLLM requires `max_num_batched_tokens >= max_num_seqs` (its scheduler
/// config refuses to start otherwise), and without chunked prefill also
/// `>= max_model_len`. gpuplan models chunked prefill (vLLM V1's default), so
/// the context needs no floor here; the floor is 256, vLLM's default
/// `max_num_seqs` ([`DEFAULT_MAX_NUM_SEQS`](crate::DEFAULT_MAX_NUM_SEQS)), so
/// the default batch cap is always valid. [`check_replica`](crate::check_replica)
/// also checks the pair (`max_batched_tokens >= max_num_seqs`).
pub const MAX_BATCHED_TOKENS: Count = Count::new(256, 1 << 24);
/// `traffic.beam_width`: beams per request, 1 (no beam search) to 32.
pub const BEAM_WIDTH: Count = Count::new(1, 32);
/// `--max-num-seqs` and `--concurrency`: 1 to 2^20 sequences.
pub const SEQUENCES: Count = Count::new(1, 1 << 20);
/// Sequences per micro-batch per GPU (training): 1 to 65,536.
pub const MICRO_BATCH: Count = Count::new(1, 1 << 16);
/// Micro-batches per optimizer step (training): 1 to 2^20.
pub const MICRO_BATCHES: Count = Count::new(1, 1 << 20);
/// LoRA rank: 1 to 65,536 (real ranks are 4 to 256).
pub const LORA_RANK: Count = Count::new(1, 1 << 16);
/// ZeRO stage: 0 to 3.
pub const ZERO_STAGE: Count = Count::new(0, 3);

// The layout bounds keep every GPU count the CLI and the planner form inside
// `u32`, and training tokens per micro-batch exact in `f64` (< 2^53).
const _: () = assert!(TP.max * PP.max <= u32::MAX as u64);
const _: () = assert!(GPUS.max * TP.max <= u32::MAX as u64);
const _: () = assert!(MIN_REPLICAS.max * MAX_GPUS_PER_REPLICA.max <= u32::MAX as u64);
const _: () = assert!(MICRO_BATCH.max * SEQUENCE_TOKENS.max < 1 << 53);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_bounds_are_inclusive_fractions() {
        assert!(MAX_UTILIZATION.contains(0.8));
        assert!(!MAX_UTILIZATION.contains(1e-300));
        assert!(!MAX_UTILIZATION.contains(1.0));
        assert_eq!(MAX_UTILIZATION.describe(), "a number from 0.01 to 0.99");
    }
}
