//! `estimate`: one replica's TTFT, TPOT and throughput, with its memory.

use crate::error::{AppError, AppResult};
use crate::replica::{check, check_count, check_span, FieldNames, ModelRequest, ReplicaRequest};
use gpuplan_catalog::{Catalog, ModelArch, Precision};
use gpuplan_core::limits;
use gpuplan_core::{
    estimate, inference_memory, Bound, Calibration, EngineLimits, Estimate, InferenceMemory,
    MemoryBreakdown, ReplicaSpec, Spelling,
};
use serde::{Deserialize, Serialize};

fn default_max_num_seqs() -> u64 {
    256
}
fn default_max_batched_tokens() -> u64 {
    gpuplan_core::DEFAULT_MAX_BATCHED_TOKENS
}
fn default_memory_utilization() -> f64 {
    gpuplan_core::DEFAULT_MEMORY_UTILIZATION
}

/// What `estimate` takes besides the model (the CLI's flags, the API's JSON).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EstimateRequest {
    /// The model (the CLI passes a model read from `--hf-config` instead).
    #[serde(default)]
    pub model: ModelRequest,
    /// GPU, split and precision.
    pub replica: ReplicaRequest,
    /// Prompt tokens per request.
    pub input_len: u64,
    /// Generated tokens per request.
    pub output_len: u64,
    /// Sequences in flight (default: the most memory and the batch cap allow).
    pub concurrency: Option<u64>,
    /// Engine batch cap.
    #[serde(default = "default_max_num_seqs")]
    pub max_num_seqs: u64,
    /// Engine tokens per iteration.
    #[serde(default = "default_max_batched_tokens")]
    pub max_batched_tokens: u64,
    /// Engine memory utilisation cap.
    #[serde(default = "default_memory_utilization")]
    pub memory_utilization: f64,
    /// Beams per request (beam search; TensorRT-LLM only).
    #[serde(default = "default_beam_width")]
    pub beam_width: u64,
}

fn default_beam_width() -> u64 {
    1
}

/// The memory block, as `fit --json` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryBlock {
    pub fits: bool,
    pub gpu: String,
    pub gpu_memory_gib: f64,
    pub budget_gib: f64,
    pub per_gpu: MemoryBreakdown,
    pub kv_cache_bytes_per_token: f64,
    pub kv_cache_tokens: u64,
    pub max_concurrent_sequences: u64,
}

/// The `estimate --json` document (field names are a contract).
#[derive(Debug, Clone, Serialize)]
pub struct EstimateReport {
    pub model: String,
    pub gpu: String,
    pub gpu_count: u32,
    pub tp: u32,
    pub pp: u32,
    pub precision: Precision,
    pub kv_precision: Precision,
    /// The serving engine predicted for.
    pub engine: gpuplan_core::Engine,
    pub input_len: u64,
    pub output_len: u64,
    /// Beams per request (1 = no beam search).
    pub beam_width: u64,
    pub ttft_ms: f64,
    pub tpot_ms: f64,
    pub e2e_ms: f64,
    pub output_tokens_per_s: f64,
    pub output_tokens_per_s_per_gpu: f64,
    pub requests_per_s: f64,
    pub concurrency: f64,
    pub max_concurrency: f64,
    pub prefill_bound: Bound,
    pub decode_bound: Bound,
    pub concurrency_bound: Option<Bound>,
    pub calibrated: bool,
    pub memory: MemoryBlock,
}

/// The `estimate --json` document when the model does not fit.
#[derive(Debug, Clone, Serialize)]
pub struct DoesNotFit {
    /// Always false.
    pub fits: bool,
    /// How the memory is used.
    pub memory: MemoryBlock,
    /// Why it does not fit.
    pub reason: Option<String>,
}

/// The outcome of `estimate`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum EstimateOutcome {
    /// The replica fits: its performance.
    Estimated(Box<EstimateReport>),
    /// It does not fit (an infeasible answer, not an error).
    DoesNotFit(DoesNotFit),
}

impl EstimateRequest {
    /// Range checks on the numbers (the CLI's flag parsers do the same).
    pub fn check_ranges(&self, names: &FieldNames) -> AppResult<()> {
        self.replica.check_ranges(names)?;
        check_count(names.input_len, self.input_len, limits::SEQUENCE_TOKENS)?;
        check_count(names.output_len, self.output_len, limits::SEQUENCE_TOKENS)?;
        if let Some(c) = self.concurrency {
            check_count(names.concurrency, c, limits::SEQUENCES)?;
        }
        let r = &names.replica;
        check_count(r.max_num_seqs, self.max_num_seqs, limits::SEQUENCES)?;
        check_count(
            r.max_batched_tokens,
            self.max_batched_tokens,
            limits::MAX_BATCHED_TOKENS,
        )?;
        check_span(
            r.memory_utilization,
            self.memory_utilization,
            limits::MEMORY_UTILIZATION,
        )?;
        check_count(names.beam_width, self.beam_width, limits::BEAM_WIDTH)?;
        if self.beam_width > 1 {
            if let Err(why) = self.replica.engine.beam_search() {
                return Err(AppError::bad_field(
                    names.beam_width,
                    format!("{} {}: {why}", names.beam_width, self.beam_width),
                ));
            }
        }
        Ok(())
    }
}

/// Predicts one replica's serving performance. `model` overrides the
/// request's (the CLI's `--hf-config`).
pub fn run_estimate(
    catalog: &Catalog,
    cal: &Calibration,
    model: Option<&ModelArch>,
    req: &EstimateRequest,
    names: &FieldNames,
) -> AppResult<EstimateOutcome> {
    req.check_ranges(names)?;
    let resolved;
    let model = match model {
        Some(m) => m,
        None => {
            resolved = req.model.resolve(catalog, names)?;
            &resolved
        }
    };
    let (gpu, precision, kv_precision) = req.replica.resolve(catalog, names)?;
    let layout = req.replica.inference_layout(names)?;
    let limits = EngineLimits {
        memory_utilization: req.memory_utilization,
        max_batched_tokens: req.max_batched_tokens,
        max_num_seqs: req.max_num_seqs,
    };
    let context = if names.input_len.starts_with("--") {
        "--input-len + --output-len"
    } else {
        "input_len + output_len"
    };
    // Both lengths are at most 2^27 (checked above), so their sum cannot overflow.
    let spec = ReplicaSpec {
        model,
        gpu,
        precision,
        kv_precision,
        layout,
        limits,
        context_len: req.input_len + req.output_len,
        engine: req.replica.engine,
        spelling: Spelling {
            context,
            ..req.replica.spelling(names)
        },
    };
    let checked = check(catalog, &spec, req.replica.variant)?;
    let memory = inference_memory(&checked.memory_input())?;
    let block = MemoryBlock::of(&gpu.name, &memory);
    if !memory.fits {
        return Ok(EstimateOutcome::DoesNotFit(DoesNotFit {
            fits: false,
            memory: block,
            reason: memory.reason.clone(),
        }));
    }
    // Both within their ranges (checked above): 1 to 32 beams.
    let dep = checked.deployment(cal)?.with_beams(req.beam_width as u32);
    let e = estimate(
        &dep,
        &memory,
        req.input_len,
        req.output_len,
        req.concurrency,
        req.max_num_seqs,
        req.max_batched_tokens,
    )?;
    let replica = ReplicaShape {
        model: &model.id,
        gpu: &gpu.name,
        layout,
        precision,
        kv_precision,
    };
    Ok(EstimateOutcome::Estimated(Box::new(EstimateReport::of(
        replica, req, &e, block,
    ))))
}

/// The replica an estimate describes, for its report.
struct ReplicaShape<'a> {
    model: &'a str,
    gpu: &'a str,
    layout: gpuplan_core::Layout,
    precision: Precision,
    kv_precision: Precision,
}

impl MemoryBlock {
    /// The memory part of the report for `gpu`.
    fn of(gpu: &str, memory: &InferenceMemory) -> Self {
        MemoryBlock {
            fits: memory.fits,
            gpu: gpu.to_string(),
            gpu_memory_gib: memory.gpu_memory_gib,
            budget_gib: memory.budget_gib,
            per_gpu: memory.per_gpu,
            kv_cache_bytes_per_token: memory.kv_cache_bytes_per_token,
            kv_cache_tokens: memory.kv_cache_tokens,
            max_concurrent_sequences: memory.max_concurrent_sequences,
        }
    }
}

impl EstimateReport {
    /// The report of estimate `e` of `replica` serving `req`.
    fn of(
        replica: ReplicaShape<'_>,
        req: &EstimateRequest,
        e: &Estimate,
        memory: MemoryBlock,
    ) -> Self {
        let ReplicaShape {
            model,
            gpu,
            layout,
            precision,
            kv_precision,
        } = replica;
        EstimateReport {
            model: model.to_string(),
            gpu: gpu.to_string(),
            gpu_count: layout.gpus(),
            tp: layout.tp,
            pp: layout.pp,
            precision,
            kv_precision,
            engine: req.replica.engine,
            input_len: req.input_len,
            output_len: req.output_len,
            beam_width: req.beam_width,
            ttft_ms: e.ttft_ms,
            tpot_ms: e.tpot_ms,
            e2e_ms: e.e2e_ms,
            output_tokens_per_s: e.output_tokens_per_s,
            output_tokens_per_s_per_gpu: e.output_tokens_per_s_per_gpu,
            requests_per_s: e.requests_per_s,
            concurrency: e.concurrency,
            max_concurrency: e.max_concurrency,
            prefill_bound: e.prefill_bound,
            decode_bound: e.decode_bound,
            concurrency_bound: e.concurrency_bound,
            calibrated: e.calibrated,
            memory,
        }
    }
}
