//! `gpuplan fit` for a non-LLM model: memory, batch time and throughput of
//! one GPU at each batch size, and the largest batch that fits.

use super::service::{NonLlmMemory, Request, Setup, MAX_BATCH};
use gpuplan_catalog::{NonLlmFamily, NonLlmModel};
use serde::Serialize;

/// One batch size on one GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizingRow {
    /// Requests (images, windows, sequences) per batch.
    pub batch: u64,
    /// Memory at this batch.
    pub memory: NonLlmMemory,
    /// Time of one batch, ms (None when it does not fit).
    pub batch_ms: Option<f64>,
    /// Requests per second at this batch, back to back.
    pub requests_per_s: Option<f64>,
}

/// Batches 1, 2, 4 … until the first that does not fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizing {
    /// What one request is.
    pub unit: Request,
    /// Whether batch 1 fits.
    pub fits: bool,
    /// Largest batch that fits (0 = none).
    pub max_batch: u64,
    /// One row per batch tried.
    pub rows: Vec<SizingRow>,
}

/// The family's default request: the model's resolution, 30 steps with
/// guidance; a 30 s window at MLPerf's LibriSpeech token rate; the model's
/// default sequence length.
pub fn default_unit(model: &NonLlmModel) -> Request {
    match model.family {
        NonLlmFamily::Diffusion => Request::Image {
            resolution_px: model.default_resolution.unwrap_or(1024),
            steps: 30,
            guidance: true,
        },
        NonLlmFamily::Speech => Request::Audio {
            output_tokens: super::WHISPER_TOKENS_PER_AUDIO_S * super::WHISPER_WINDOW_S,
            beam: 1,
        },
        NonLlmFamily::Encoder => Request::Text {
            seq_len: model.default_seq_len.unwrap_or(512) as f64,
        },
    }
}

/// Memory and speed of `unit` at batches 1, 2, 4 … up to the first that
/// does not fit (or [`MAX_BATCH`]).
pub fn size(setup: &Setup<'_>, unit: &Request) -> Result<Sizing, String> {
    let mut rows = Vec::new();
    let mut max_batch = 0;
    let mut batch = 1;
    while batch <= MAX_BATCH {
        let memory = setup.memory(unit, batch);
        let fits = memory.fits;
        let t = if fits {
            Some(setup.batch_time(unit, batch)?)
        } else {
            None
        };
        rows.push(SizingRow {
            batch,
            memory,
            batch_ms: t.as_ref().map(|t| t.total_s * 1e3),
            requests_per_s: t.as_ref().map(|t| batch as f64 / t.total_s),
        });
        if !fits {
            break;
        }
        max_batch = batch;
        batch *= 2;
    }
    Ok(Sizing {
        unit: *unit,
        fits: max_batch > 0,
        max_batch,
        rows,
    })
}
