//! Steady-state serving with continuous batching, on top of the
//! per-iteration cost model; and the two benchmark engines the validation
//! rows were measured with (trtllm-bench max-throughput runs, Triton bursts).

use crate::calibration::Calibration;
use crate::error::{CoreError, Result};
use crate::memory::{activation_workspace_bytes, InferenceMemory, GIB};
use crate::perf::{Bound, Deployment, IterationCost, IterationWork};
use gpuplan_catalog::{GpuSpec, ModelArch};
use serde::Serialize;

mod queued;
use queued::queued_run_with_shares;
pub use queued::{queued_run, QueueLimits};

/// Paged-KV block size, tokens (vLLM 16, TensorRT-LLM 32; the larger is the safe reservation).
pub const KV_BLOCK_TOKENS: u64 = 32;

/// Rounds a sequence's tokens up to whole KV blocks.
pub fn block_tokens(tokens: u64) -> u64 {
    tokens.div_ceil(KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS
}

/// The steady state of one replica serving requests of `input_len` prompt
/// and `output_len` generated tokens with `concurrency` sequences in flight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SteadyState {
    /// Sequences in flight.
    pub concurrency: f64,
    /// Iterations a request lives: prefill chunks + output tokens − 1.
    pub lifetime_iterations: f64,
    /// Prefill chunks per prompt.
    pub prefill_chunks: f64,
    /// Time of one full iteration (all pipeline stages), s.
    pub iteration_s: f64,
    /// Time a request occupies a batch slot (its N iterations), s.
    pub service_s: f64,
    /// Time to first token without queueing: the prompt's chunks, each in
    /// an iteration beside the other sequences' decodes, ms.
    pub ttft_ms: f64,
    /// Time per output token, ms.
    pub tpot_ms: f64,
    /// End-to-end latency of a request, ms.
    pub e2e_ms: f64,
    /// Output tokens per second for the replica.
    pub output_tokens_per_s: f64,
    /// Requests per second for the replica.
    pub requests_per_s: f64,
    /// What bounds the mixed iteration.
    pub decode_bound: Bound,
    /// What bounds a prompt's prefill chunk.
    pub prefill_bound: Bound,
    /// Cost breakdown of the steady iteration on one stage.
    pub iteration: IterationCost,
}

/// Iterations a prompt of `prompt_tokens` needs when each iteration's token
/// budget (`max_batched_tokens`) is shared with `decode_seqs` decode tokens
/// (the prompt always gets at least 10% of the budget, as chunked prefill does).
fn prefill_chunks(prompt_tokens: f64, decode_seqs: f64, max_batched_tokens: f64) -> f64 {
    let budget = (max_batched_tokens - decode_seqs)
        .max(max_batched_tokens * 0.1)
        .max(1.0);
    (prompt_tokens / budget).ceil().max(1.0)
}

/// Continuous-batching steady state (chunked prefill mixed into decode
/// iterations, as vLLM V1 and TensorRT-LLM in-flight batching run it).
///
/// Every request lives `N = chunks + O − 1` iterations (its last prefill
/// chunk yields the first token). With `C` requests in flight and the
/// pipeline's `pp` micro-batches of `C/pp` each, one stage iteration carries
/// `C/pp · (O−1)/N` decode sequences and `C/pp · I/N` prompt tokens; a full
/// iteration is `pp` stage iterations. By Little's law the replica completes
/// `C / (N · t)` requests per second.
pub fn steady_state(
    dep: &Deployment,
    input_len: f64,
    output_len: f64,
    concurrency: f64,
    max_batched_tokens: f64,
) -> SteadyState {
    let pp = f64::from(dep.layout.pp);
    let c = concurrency.max(1.0);
    let b = c / pp;
    let o = output_len.max(1.0);
    // Each decoding request puts one token per beam into the step's budget.
    let chunks = prefill_chunks(
        input_len,
        b * (o - 1.0) / o * dep.beam_width,
        max_batched_tokens,
    );
    let n = chunks + o - 1.0;
    let decode = b * (o - 1.0) / n;
    let prefill = b * input_len / n;
    let work = IterationWork {
        decode_seqs: decode,
        decode_context_sum: decode * (input_len + o / 2.0),
        prefill_tokens: prefill,
        // over a prompt Σ pairs = I²/2, spread over its N iterations
        prefill_attention_pairs: b / n * input_len * input_len / 2.0,
        // every decode sequence samples a token, and so does each prompt finishing its prefill
        logit_tokens: decode + b / n,
    };
    let stage = dep.iteration(&work);
    let iteration_s = pp * stage.total_s;
    // The prefill alone, for its bound.
    let chunk = (input_len / chunks).max(1.0);
    let prefill_cost = dep.iteration(&IterationWork {
        decode_seqs: 0.0,
        decode_context_sum: 0.0,
        prefill_tokens: chunk,
        prefill_attention_pairs: chunk * chunk / 2.0,
        logit_tokens: 1.0,
    });
    // Time a request holds its slot: N iterations (Little's law below).
    let service_s = n * iteration_s;
    // TTFT: the prompt's own chunks, each in an iteration next to the decodes —
    // the definition `plan` uses for the p99 prompt, so the verbs agree.
    let ttft_s = prefill_under_load_s(dep, input_len, input_len, output_len, c, max_batched_tokens);
    let tpot_s = iteration_s;
    let e2e_s = ttft_s + (o - 1.0) * tpot_s;
    let requests_per_s = c / service_s;
    SteadyState {
        concurrency: c,
        lifetime_iterations: n,
        prefill_chunks: chunks,
        iteration_s,
        service_s,
        ttft_ms: ttft_s * 1e3,
        tpot_ms: tpot_s * 1e3,
        e2e_ms: e2e_s * 1e3,
        output_tokens_per_s: requests_per_s * o,
        requests_per_s,
        decode_bound: stage.bound(),
        prefill_bound: prefill_cost.bound(),
        iteration: stage,
    }
}

/// KV tokens, in whole blocks, one request of `input_len + output_len`
/// tokens reserves: one sequence; with beam search the prompt's blocks once
/// and each beam's output blocks ([`Deployment::kv_tokens_per_request`]).
pub fn request_kv_block_tokens(dep: &Deployment, input_len: u64, output_len: u64) -> f64 {
    if dep.beam_width > 1.0 {
        block_tokens(input_len) as f64 + dep.beam_width * block_tokens(output_len) as f64
    } else {
        block_tokens(input_len + output_len) as f64
    }
}

/// The largest concurrency the KV cache and the batch cap allow for
/// requests of `input_len + output_len` tokens (the engine reserves the full
/// length, in whole blocks, before admitting a request).
pub fn max_concurrency(
    dep: &Deployment,
    kv_tokens: f64,
    input_len: u64,
    output_len: u64,
    batch_cap: f64,
) -> (f64, Bound) {
    let per_seq = request_kv_block_tokens(dep, input_len, output_len);
    let by_kv = (kv_tokens / per_seq).floor();
    if by_kv <= batch_cap {
        (by_kv, Bound::KvCapacity)
    } else {
        (batch_cap, Bound::BatchCap)
    }
}

/// KV tokens TensorRT-LLM allocates: `fraction` of the memory left after
/// weights, activation workspace and its runtime reserve.
pub fn trtllm_kv_tokens(
    dep: &Deployment,
    model: &ModelArch,
    gpu: &GpuSpec,
    cal: &Calibration,
    fraction: f64,
    max_num_tokens: u64,
    max_batch: u64,
) -> f64 {
    let memory = gpu.memory_gib * GIB * TRTLLM_USABLE_MEMORY_FRACTION;
    let free = memory
        - dep.weight_bytes_per_gpu
        - cal.trtllm_reserve_gib() * GIB
        - activation_workspace_bytes(model, dep.layout, max_num_tokens, max_batch);
    (fraction * free / dep.kv_bytes_per_token_per_gpu).max(0.0)
}

/// Device memory TensorRT-LLM sees as a share of the advertised figure
/// (nvidia-smi reports 81,559 MiB of 80 GiB on H100).
pub const TRTLLM_USABLE_MEMORY_FRACTION: f64 = 0.995;

/// `max_batch_size` and `max_num_tokens` as trtllm-bench picks them
/// (tensorrt_llm/bench/build/tuning.py: calc_engine_setting + finetune_setting):
/// the sequences the KV cache could hold at 95% of the memory left after the
/// engine, capped at 4096, split over PP, rounded up.
pub fn trtllm_bench_settings(
    model: &ModelArch,
    gpu: &GpuSpec,
    dep: &Deployment,
    input_len: u64,
    output_len: u64,
) -> (u64, u64) {
    let bytes_per_param = match dep.precision {
        gpuplan_catalog::Precision::Fp8 | gpuplan_catalog::Precision::Int8 => 1.0,
        gpuplan_catalog::Precision::Fp4 | gpuplan_catalog::Precision::Int4 => 0.5,
        gpuplan_catalog::Precision::Fp32 => 4.0,
        _ => 2.0,
    };
    let gpus = f64::from(dep.layout.gpus());
    let kv_heads = model.num_kv_heads.max(u64::from(dep.layout.tp)) as f64;
    let kv_bytes = dep.kv_precision.bytes_per_element();
    let per_token_gib = match &model.mla {
        Some(_) => {
            (model.kv_elements_per_token_per_layer() * model.num_layers) as f64 * kv_bytes / GIB
        }
        None => 2.0 * model.num_layers as f64 * kv_heads * model.head_dim as f64 * kv_bytes / GIB,
    };
    let engine_gib = model.params().total() as f64 * bytes_per_param / GIB;
    let available = gpu.memory_gib * TRTLLM_USABLE_MEMORY_FRACTION * gpus - engine_gib;
    let request_tokens = dep.kv_tokens_per_request(input_len as f64, output_len as f64);
    let max_requests = available * 0.95 / (per_token_gib * request_tokens);
    let raw_batch = max_requests.min(4096.0) / f64::from(dep.layout.pp);
    let raw_tokens = (raw_batch * (1.0 + input_len as f64 / output_len.max(1) as f64)).min(32768.0);
    let round = |x: f64, step: f64| step * (x / step).ceil();
    let batch = if raw_batch < 256.0 {
        round(raw_batch, 32.0).max(64.0)
    } else if raw_batch < 1024.0 {
        round(raw_batch, 128.0)
    } else {
        round(raw_batch, 256.0)
    };
    let tokens = if raw_tokens < 4096.0 {
        round(raw_tokens, 256.0).max(2048.0)
    } else if raw_tokens < 8192.0 {
        round(raw_tokens, 512.0)
    } else {
        round(raw_tokens, 1024.0)
    };
    (batch.max(1.0) as u64, tokens.max(1.0) as u64)
}

/// One static batch run to completion (vLLM's `vllm bench latency`: `batch`
/// identical prompts generated together, nothing admitted meanwhile).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StaticBatch {
    /// Time to the batch's first tokens: the prompts' prefill, ms.
    pub ttft_ms: f64,
    /// Mean time per output token after the first, ms.
    pub tpot_ms: f64,
    /// Time until every sequence has its last token, ms.
    pub e2e_ms: f64,
}

/// A static batch of `batch` requests of `input_len` prompt and
/// `output_len` generated tokens: the prompts prefill in chunks of at most
/// `max_batched_tokens` tokens (the last chunk samples every first token),
/// then `output_len − 1` decode steps of the whole batch, each attending to
/// its growing context. With PP, the batch's micro-batches fill the stages
/// as in the burst harness.
pub fn static_batch(
    dep: &Deployment,
    batch: u64,
    input_len: u64,
    output_len: u64,
    max_batched_tokens: u64,
) -> StaticBatch {
    let pp = f64::from(dep.layout.pp);
    let (b, isl) = (batch.max(1) as f64, input_len as f64);
    let prompt_tokens = b * isl;
    let chunks = (prompt_tokens / max_batched_tokens.max(1) as f64)
        .ceil()
        .max(1.0);
    // Each chunk carries 1/chunks of the tokens and of the causal pairs (b·isl²/2).
    let chunk = dep.iteration(&IterationWork {
        decode_seqs: 0.0,
        decode_context_sum: 0.0,
        prefill_tokens: prompt_tokens / chunks / pp,
        prefill_attention_pairs: b * isl * isl / 2.0 / chunks / pp,
        logit_tokens: b / chunks / pp,
    });
    let ttft_s = chunks * pp * chunk.total_s;
    let mut decode_s = 0.0;
    for step in 1..output_len.max(1) {
        let stage = dep.iteration(&IterationWork {
            decode_seqs: b / pp,
            decode_context_sum: b * (isl + step as f64) / pp,
            prefill_tokens: 0.0,
            prefill_attention_pairs: 0.0,
            logit_tokens: b / pp,
        });
        decode_s += pp * stage.total_s;
    }
    let steps = output_len.saturating_sub(1).max(1) as f64;
    StaticBatch {
        ttft_ms: ttft_s * 1e3,
        tpot_ms: decode_s / steps * 1e3,
        e2e_ms: (ttft_s + decode_s) * 1e3,
    }
}

/// trtllm-bench's engine for a run of `input_len`/`output_len` requests:
/// its `max_batch_size` and `max_num_tokens` and the KV tokens it allocates
/// (`kv_cache_free_gpu_mem_fraction` 0.95).
fn trtllm_bench_engine(
    model: &ModelArch,
    gpu: &GpuSpec,
    dep: &Deployment,
    cal: &Calibration,
    input_len: u64,
    output_len: u64,
) -> (u64, u64, f64) {
    let (max_batch, max_tokens) = trtllm_bench_settings(model, gpu, dep, input_len, output_len);
    let kv = trtllm_kv_tokens(dep, model, gpu, cal, 0.95, max_tokens, max_batch);
    (max_batch, max_tokens, kv)
}

/// The error of a deployment without room for one request's KV cache.
fn no_room_for_one_request(gpu: &GpuSpec, dep: &Deployment) -> CoreError {
    CoreError::invalid(
        "deployment",
        format!("{} × {} {}", gpu.name, dep.layout.gpus(), dep.precision),
        "enough memory for one request's KV cache",
    )
}

/// A trtllm-bench max-throughput run: all requests queued, fixed lengths,
/// KV cache at `kv_cache_free_gpu_mem_fraction` 0.95, the tool's own batch
/// and token limits. Returns the steady state and what limits concurrency.
pub fn trtllm_bench_throughput(
    model: &ModelArch,
    gpu: &GpuSpec,
    dep: &Deployment,
    cal: &Calibration,
    input_len: u64,
    output_len: u64,
) -> Result<(SteadyState, Bound)> {
    let (max_batch, max_tokens, kv) =
        trtllm_bench_engine(model, gpu, dep, cal, input_len, output_len);
    let pp = f64::from(dep.layout.pp);
    // A request's share of a step's token budget: a token per beam, and its
    // prompt spread over its output steps.
    let token_cap =
        max_tokens as f64 / (dep.beam_width + input_len as f64 / output_len.max(1) as f64);
    let cap = (pp * max_batch as f64).min(pp * token_cap);
    let (c, limit) = max_concurrency(dep, kv, input_len, output_len, cap);
    if c < 1.0 {
        return Err(no_room_for_one_request(gpu, dep));
    }
    let state = steady_state(
        dep,
        input_len as f64,
        output_len as f64,
        c,
        max_tokens as f64,
    );
    Ok((state, limit))
}

/// A trtllm-bench max-throughput run of `requests` identical requests (the
/// data set's size): trtllm-bench's batch and token limits and KV cache as
/// in [`trtllm_bench_throughput`], the run simulated from the first
/// admission to the last token ([`queued_run`]), so a run of a few batches'
/// worth of requests pays for its ramp-up and its drain. Returns the run and
/// what limits concurrency.
pub fn trtllm_bench_run(
    model: &ModelArch,
    gpu: &GpuSpec,
    dep: &Deployment,
    cal: &Calibration,
    input_len: u64,
    output_len: u64,
    requests: u64,
) -> Result<(BurstResult, Bound)> {
    if requests == 0 {
        return Err(CoreError::invalid("requests", "0", "a whole number >= 1"));
    }
    let (max_batch, max_tokens, kv) =
        trtllm_bench_engine(model, gpu, dep, cal, input_len, output_len);
    let pp = f64::from(dep.layout.pp);
    let (slots, limit) = max_concurrency(dep, kv, input_len, output_len, pp * max_batch as f64);
    if slots < 1.0 {
        return Err(no_room_for_one_request(gpu, dep));
    }
    let run = queued_run(
        dep,
        QueueLimits {
            slots,
            max_tokens: max_tokens as f64,
            chunked_prefill: true,
        },
        input_len,
        &[output_len as f64],
        requests,
    );
    Ok((run, limit))
}

/// Result of a burst of identical requests queued at once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BurstResult {
    /// Time until the last request finishes, s.
    pub makespan_s: f64,
    /// Mean over requests of (finish − first token) / (output − 1), ms.
    pub tpot_ms: f64,
    /// Requests per second over the burst.
    pub requests_per_s: f64,
    /// Output tokens per second over the burst.
    pub output_tokens_per_s: f64,
    /// Most sequences in flight at once.
    pub peak_concurrency: f64,
    /// What bounded most of the burst's time.
    pub bound: Bound,
}

/// Iteration-level simulation of `requests` requests queued at t = 0 on an
/// engine without chunked prefill (TensorRT-LLM v0.14 with the Triton
/// backend: max batch 2048, max 8192 tokens per iteration, KV cache at 90%
/// of free memory). Output length `i` is taken by `shares[i]` of the
/// requests (one length for identical requests; a data set's distribution
/// otherwise, its body in a few groups and its longest answers one by one,
/// since those set the drain): every admission takes them in these shares,
/// so the long answers keep decoding, in a shrinking batch, after the short
/// ones are done. Requests admitted together with one length form a cohort.
#[allow(clippy::too_many_arguments)]
pub fn burst(
    model: &ModelArch,
    gpu: &GpuSpec,
    dep: &Deployment,
    cal: &Calibration,
    input_len: u64,
    output_lens: &[f64],
    shares: &[f64],
    requests: u64,
) -> Result<BurstResult> {
    let shares_sum: f64 = shares.iter().sum();
    if output_lens.is_empty()
        || output_lens.iter().any(|l| !(l.is_finite() && *l >= 1.0))
        || shares.len() != output_lens.len()
        || shares.iter().any(|w| !(w.is_finite() && *w >= 0.0))
        || (shares_sum - 1.0).abs() > 1e-6
    {
        return Err(CoreError::invalid(
            "output_lens",
            format!("{output_lens:?} with shares {shares:?}"),
            "one or more output lengths of at least 1 token, with shares that sum to 1",
        ));
    }
    let output_mean = output_lens
        .iter()
        .zip(shares)
        .map(|(l, w)| l * w)
        .sum::<f64>();
    const MAX_BATCH: u64 = 2048;
    const MAX_TOKENS: u64 = 8192;
    let pp = f64::from(dep.layout.pp);
    let kv = trtllm_kv_tokens(dep, model, gpu, cal, 0.90, MAX_TOKENS, MAX_BATCH);
    // Each request reserves KV for its own prompt and answer: the mean one.
    let slots = ((MAX_BATCH as f64) * pp)
        .min((kv / request_kv_block_tokens(dep, input_len, output_mean.round() as u64)).floor());
    if slots < 1.0 || input_len > MAX_TOKENS {
        return Err(CoreError::invalid(
            "deployment",
            format!("{} × {} {}", gpu.name, dep.layout.gpus(), dep.precision),
            "room for one request",
        ));
    }
    // Step by step: a burst's rows measure TPOT, which strides only approximate.
    Ok(queued_run_with_shares(
        dep,
        QueueLimits {
            slots,
            max_tokens: MAX_TOKENS as f64,
            chunked_prefill: false,
        },
        input_len,
        output_lens,
        shares,
        requests,
        1.0,
    ))
}

/// An `estimate` for a vLLM-style engine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Time to first token, ms.
    pub ttft_ms: f64,
    /// Time per output token, ms.
    pub tpot_ms: f64,
    /// End-to-end latency, ms.
    pub e2e_ms: f64,
    /// Output tokens/s of the replica.
    pub output_tokens_per_s: f64,
    /// Output tokens/s per GPU.
    pub output_tokens_per_s_per_gpu: f64,
    /// Requests/s of the replica.
    pub requests_per_s: f64,
    /// Sequences in flight.
    pub concurrency: f64,
    /// The largest concurrency the KV cache (and batch cap) allows.
    pub max_concurrency: f64,
    /// What bounds prefill.
    pub prefill_bound: Bound,
    /// What bounds decode (the mixed steady iteration).
    pub decode_bound: Bound,
    /// What bounds throughput at the max-throughput point (KV capacity or batch cap); None when concurrency was given.
    pub concurrency_bound: Option<Bound>,
    /// Whether the GPU family has calibrated factors (else extrapolated from other families).
    pub calibrated: bool,
}

/// Estimates a replica's serving performance at `concurrency` (or, when
/// None, at the largest concurrency the KV cache and `max_num_seqs` allow).
pub fn estimate(
    dep: &Deployment,
    memory: &InferenceMemory,
    input_len: u64,
    output_len: u64,
    concurrency: Option<u64>,
    max_num_seqs: u64,
    max_batched_tokens: u64,
) -> Result<Estimate> {
    if !memory.fits {
        return Err(CoreError::invalid(
            "deployment",
            memory.reason.clone().unwrap_or_default(),
            "a deployment that fits in memory",
        ));
    }
    let (kv_max, kv_bound) = max_concurrency(
        dep,
        memory.kv_cache_tokens as f64,
        input_len,
        output_len,
        max_num_seqs as f64,
    );
    if kv_max < 1.0 {
        return Err(CoreError::invalid(
            "input_len + output_len",
            (input_len + output_len).to_string(),
            format!(
                "at most the {} tokens the KV cache holds",
                memory.kv_cache_tokens
            ),
        ));
    }
    let (c, bound) = match concurrency {
        Some(c) if c as f64 > kv_max => {
            return Err(CoreError::invalid(
                "concurrency",
                c.to_string(),
                format!(
                    "at most {kv_max} (KV cache: {} tokens, {} per sequence; --max-num-seqs {max_num_seqs})",
                    memory.kv_cache_tokens,
                    request_kv_block_tokens(dep, input_len, output_len)
                ),
            ))
        }
        Some(0) => return Err(CoreError::invalid("concurrency", "0", "a whole number >= 1")),
        Some(c) => (c as f64, None),
        None => (kv_max, Some(kv_bound)),
    };
    let s = steady_state(
        dep,
        input_len as f64,
        output_len as f64,
        c,
        max_batched_tokens as f64,
    );
    Ok(Estimate {
        ttft_ms: s.ttft_ms,
        tpot_ms: s.tpot_ms,
        e2e_ms: s.e2e_ms,
        output_tokens_per_s: s.output_tokens_per_s,
        output_tokens_per_s_per_gpu: s.output_tokens_per_s / f64::from(dep.layout.gpus()),
        requests_per_s: s.requests_per_s,
        concurrency: c,
        max_concurrency: kv_max,
        prefill_bound: s.prefill_bound,
        decode_bound: s.decode_bound,
        concurrency_bound: bound,
        calibrated: dep.calibrated_family,
    })
}

/// Time to prefill one long prompt of `prompt_tokens` while the replica
/// carries its steady load of `concurrency` sequences (mean lengths
/// `input_len`, `output_len`): the prompt goes in chunks of what the decode
/// tokens leave of `max_batched_tokens`, each chunk sharing an iteration
/// with the decoding sequences, s.
pub fn prefill_under_load_s(
    dep: &Deployment,
    prompt_tokens: f64,
    input_len: f64,
    output_len: f64,
    concurrency: f64,
    max_batched_tokens: f64,
) -> f64 {
    let pp = f64::from(dep.layout.pp);
    let b = concurrency.max(1.0) / pp;
    let o = output_len.max(1.0);
    let decode = b * (o - 1.0) / o;
    let chunks = prefill_chunks(prompt_tokens, decode * dep.beam_width, max_batched_tokens);
    let chunk = prompt_tokens / chunks;
    let stage = dep.iteration(&IterationWork {
        decode_seqs: decode,
        decode_context_sum: decode * (input_len + o / 2.0),
        prefill_tokens: chunk,
        // the chunks of one prompt attend to Σ = prompt²/2 pairs in all
        prefill_attention_pairs: prompt_tokens * prompt_tokens / 2.0 / chunks,
        logit_tokens: decode + 1.0,
    });
    chunks * pp * stage.total_s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use crate::test_support::{gpu, model};
    use gpuplan_catalog::Precision;

    fn h100_8b() -> (ModelArch, Deployment) {
        let m = model("llama-3.1-8b");
        let dep = Deployment::new(
            &m,
            gpu("H100"),
            Layout::SINGLE,
            Precision::Bf16,
            Precision::Bf16,
            &Calibration::bundled(),
        )
        .unwrap();
        (m, dep)
    }

    #[test]
    fn a_burst_of_varied_answers_drains_in_a_shrinking_batch() {
        let (m, dep) = h100_8b();
        let cal = Calibration::bundled();
        let equal = |outputs: &[f64]| vec![1.0 / outputs.len() as f64; outputs.len()];
        let run = |outputs: &[f64]| {
            burst(
                &m,
                gpu("H100"),
                &dep,
                &cal,
                200,
                outputs,
                &equal(outputs),
                500,
            )
            .unwrap()
        };
        let fixed = run(&[214.0]);
        // Lengths that average 214: the same tokens, but the long answers
        // decode on after the short ones leave, in a small batch.
        let varied = run(&[50.0, 100.0, 200.0, 506.0]);
        assert!((fixed.output_tokens_per_s * fixed.makespan_s / 500.0 - 214.0).abs() < 1e-9);
        assert!((varied.output_tokens_per_s * varied.makespan_s / 500.0 - 214.0).abs() < 1e-9);
        // (A fifth longer at least: the 506-token answers alone take
        // 506 steps against the fixed burst's 214 fuller ones.)
        assert!(
            varied.makespan_s > fixed.makespan_s * 1.2,
            "{varied:?} vs {fixed:?}"
        );
        assert!(varied.output_tokens_per_s < fixed.output_tokens_per_s);
        // The makespan is at least the longest answer's own decode.
        let one_step = dep
            .iteration(&IterationWork {
                decode_seqs: 1.0,
                decode_context_sum: 400.0,
                prefill_tokens: 0.0,
                prefill_attention_pairs: 0.0,
                logit_tokens: 1.0,
            })
            .total_s;
        assert!(varied.makespan_s > 505.0 * one_step);
        // Equal lengths given twice are the fixed burst.
        let twice = run(&[214.0, 214.0]);
        assert!((twice.makespan_s / fixed.makespan_s - 1.0).abs() < 1e-9);
        // One long answer in a hundred weighs as much as one lane in a hundred.
        let mut hundred = vec![200.0; 99];
        hundred.push(1600.0);
        let weighted = burst(
            &m,
            gpu("H100"),
            &dep,
            &cal,
            200,
            &[200.0, 1600.0],
            &[0.99, 0.01],
            500,
        )
        .unwrap();
        let spelled_out = run(&hundred);
        assert!((weighted.makespan_s / spelled_out.makespan_s - 1.0).abs() < 1e-9);
        assert!(burst(&m, gpu("H100"), &dep, &cal, 200, &[], &[], 500).is_err());
        assert!(burst(&m, gpu("H100"), &dep, &cal, 200, &[f64::NAN], &[1.0], 500).is_err());
        assert!(burst(&m, gpu("H100"), &dep, &cal, 200, &[100.0], &[0.5], 500).is_err());
    }
}
