//! `gpuplan estimate` for a non-LLM model: one request alone on a GPU, a
//! batch of requests, and the batch with the most requests per second, in
//! the family's own units (images, seconds of audio, tokens).

use super::service::{BatchTime, NonLlmMemory, Request, Setup};
use super::workload::WHISPER_WINDOW_S;
use gpuplan_catalog::Precision;
use serde::Serialize;

/// The prediction for one model × GPU × precision × request on `gpus` GPUs,
/// each serving its own batches (a replica per GPU).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NonLlmEstimate {
    /// Model id.
    pub model: String,
    /// `diffusion`, `speech` or `encoder`.
    pub family: &'static str,
    /// GPU name.
    pub gpu: String,
    /// GPUs, one replica each.
    pub gpus: u64,
    /// Precision of the main network.
    pub precision: Precision,
    /// What one request is.
    pub unit: Request,
    /// One request alone on an idle GPU: its latency and where the time goes.
    pub single: BatchTime,
    /// The batch asked for (or the best one): time, memory, rates.
    pub batch: BatchEstimate,
    /// The batch with the most requests per second within memory.
    pub best: BatchEstimate,
    /// What one request delivers, in the family's unit (`images`, `audio
    /// seconds`, `tokens`), and how many of them.
    pub unit_name: &'static str,
    /// Units per request (1 image; 30 s of audio; the sequence's tokens).
    pub units_per_request: f64,
}

/// One batch size on one GPU, and what the `gpus` GPUs together deliver.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchEstimate {
    /// Requests per batch per GPU.
    pub batch: u64,
    /// Time of the batch, seconds (also every request's latency in it).
    pub batch_s: f64,
    /// Requests per second, all GPUs, batches back to back.
    pub requests_per_s: f64,
    /// Family units per second, all GPUs (images/s; audio seconds per
    /// second, i.e. the real-time factor; tokens/s).
    pub units_per_s: f64,
    /// Memory of one GPU at this batch.
    pub memory: NonLlmMemory,
    /// Whether compute (not memory traffic) bounds the largest part.
    pub compute_bound: bool,
}

/// Why an estimate has no answer: batch 1 or the asked batch does not fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NonLlmDoesNotFit {
    /// The batch that does not fit.
    pub batch: u64,
    /// Its memory.
    pub memory: NonLlmMemory,
    /// One line for people.
    pub reason: String,
}

/// The outcome of a non-LLM estimate.
#[derive(Debug, Clone, PartialEq)]
pub enum NonLlmEstimateOutcome {
    /// It fits; the prediction.
    Estimated(Box<NonLlmEstimate>),
    /// It does not fit.
    DoesNotFit(Box<NonLlmDoesNotFit>),
}

/// The family's unit and how many a request holds.
fn units(request: &Request) -> (&'static str, f64) {
    match *request {
        Request::Image { .. } => ("images", 1.0),
        Request::Audio { .. } => ("audio seconds", WHISPER_WINDOW_S),
        Request::Text { seq_len } => ("tokens", seq_len),
    }
}

/// Predicts `request` on `gpus` GPUs of `setup`: one request alone, a batch
/// of `batch` per GPU (default: the best batch), and the best batch.
/// `Err` for a request of another family or a GPU without the precision.
pub fn estimate_nonllm(
    setup: &Setup<'_>,
    request: &Request,
    gpus: u64,
    batch: Option<u64>,
) -> Result<NonLlmEstimateOutcome, String> {
    let gpus = gpus.max(1);
    let (unit_name, units_per_request) = units(request);
    let at = |b: u64, t: BatchTime| BatchEstimate {
        batch: b,
        batch_s: t.total_s,
        // b requests every batch time, on each GPU.
        requests_per_s: gpus as f64 * b as f64 / t.total_s,
        units_per_s: gpus as f64 * b as f64 * units_per_request / t.total_s,
        memory: setup.memory(request, b),
        compute_bound: t.compute_bound,
    };
    let does_not_fit = |b: u64| {
        let memory = setup.memory(request, b);
        let reason = format!(
            "batch {b} needs {:.1} GiB per GPU ({:.1} GiB weights), {} has {:.1} GiB usable",
            memory.total_gib, memory.weights_gib, setup.gpu.name, memory.usable_gib
        );
        NonLlmEstimateOutcome::DoesNotFit(Box::new(NonLlmDoesNotFit {
            batch: b,
            memory,
            reason,
        }))
    };
    if !setup.memory(request, 1).fits {
        return Ok(does_not_fit(1));
    }
    if let Some(b) = batch.filter(|b| !setup.memory(request, *b).fits) {
        return Ok(does_not_fit(b));
    }
    let single = setup.batch_time(request, 1)?;
    let (_, best_time) = setup.max_throughput(request)?;
    let best_batch = best_time.batch;
    let best = at(best_batch, best_time);
    let asked = match batch {
        Some(b) if b != best_batch => at(b, setup.batch_time(request, b)?),
        _ => best.clone(),
    };
    Ok(NonLlmEstimateOutcome::Estimated(Box::new(NonLlmEstimate {
        model: setup.model.id.clone(),
        family: setup.model.family.as_str(),
        gpu: setup.gpu.name.clone(),
        gpus,
        precision: setup.precision,
        unit: *request,
        single,
        batch: asked,
        best,
        unit_name,
        units_per_request,
    })))
}
