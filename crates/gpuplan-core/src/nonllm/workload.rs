//! `kind = "inference"` workloads whose model is an image-generation,
//! speech-to-text or encoder model: traffic and SLO in that family's units.
//!
//! ```toml
//! name = "product-images"
//! kind = "inference"
//! [model]
//! id = "sdxl-base-1.0"
//! precisions = ["fp16", "fp8"]
//! [request]              # diffusion: resolution, steps, guidance
//! resolution = 1024      # speech: audio_s, beam, tokens_per_audio_s
//! steps = 30             # encoder: tokens, sequences
//! guidance = true
//! [traffic]
//! requests_per_s = 2     # images, transcription requests or embedding requests per second
//! [slo]
//! latency_ms_p99 = 15000 # per image / transcript / embedding request
//! [constraints]          # as for LLM workloads (docs/workload.md)
//! providers = ["aws", "gcp"]
//! ```

use super::service::Request;
use crate::error::{CoreError, Result};
use crate::workload::{validate_constraints, Constraints, RawConstraints};
use crate::workload_text::{parse_document, WorkloadFormat};
use gpuplan_catalog::{Catalog, NonLlmCatalog, NonLlmFamily, NonLlmModel, Precision};
use serde::{Deserialize, Serialize};

/// Whisper's window, seconds (Radford et al. 2022, §2.2).
pub const WHISPER_WINDOW_S: f64 = 30.0;
/// Whisper output tokens per second of speech: 63.46 tokens (TensorRT-LLM
/// count) per MLPerf sample of ≈23.6 s of LibriSpeech (benchmark_datasets.md).
pub const WHISPER_TOKENS_PER_AUDIO_S: f64 = 63.46 / 23.6;

/// The document as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNonLlmWorkload {
    /// A name for reports.
    pub name: Option<String>,
    /// `inference`.
    pub kind: String,
    /// Which model, at which precisions.
    pub model: RawNonLlmModel,
    /// What one request is.
    #[serde(default)]
    pub request: RawRequest,
    /// Peak load.
    pub traffic: RawNonLlmTraffic,
    /// Latency target.
    #[serde(default)]
    pub slo: RawNonLlmSlo,
    /// Where and on what it may run.
    #[serde(default)]
    pub constraints: RawConstraints,
}

/// `[model]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNonLlmModel {
    /// Id, alias or Hugging Face repo of a non-LLM model.
    pub id: String,
    /// Precisions of the main network to consider (default fp16).
    pub precisions: Option<Vec<Precision>>,
}

/// `[request]`: the fields of the model's family.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRequest {
    /// Diffusion: image side, pixels (default: the model's).
    pub resolution: Option<u64>,
    /// Diffusion: denoising steps (default 30).
    pub steps: Option<u64>,
    /// Diffusion: classifier-free guidance (default true).
    pub guidance: Option<bool>,
    /// Speech: audio seconds per request (default 30; split into 30 s windows).
    pub audio_s: Option<f64>,
    /// Speech: beam width (default 1).
    pub beam: Option<u64>,
    /// Speech: output tokens per second of audio (default 2.69, MLPerf's LibriSpeech).
    pub tokens_per_audio_s: Option<f64>,
    /// Encoder: tokens per sequence (default: the model's default length).
    pub tokens: Option<u64>,
    /// Encoder: sequences per request (default 1).
    pub sequences: Option<u64>,
}

/// `[traffic]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNonLlmTraffic {
    /// Peak requests per second.
    pub requests_per_s: f64,
}

/// `[slo]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNonLlmSlo {
    /// p99 latency of one request (image, transcript, embedding request), ms.
    pub latency_ms_p99: Option<f64>,
}

/// A validated non-LLM workload.
#[derive(Debug, Clone, Serialize)]
pub struct NonLlmWorkload {
    /// Name.
    pub name: String,
    /// The model.
    pub model: NonLlmModel,
    /// Precisions to consider.
    pub precisions: Vec<Precision>,
    /// One unit of work: an image, a 30 s window, a sequence.
    pub unit: Request,
    /// Units per request (windows per transcript, sequences per embedding request).
    pub units_per_request: u64,
    /// Peak requests per second.
    pub requests_per_s: f64,
    /// p99 latency per request, ms.
    pub latency_ms_p99: Option<f64>,
    /// Constraints.
    #[serde(skip)]
    pub constraints: Constraints,
}

/// The non-LLM model a workload document names, if it names one (None for
/// LLM workloads and unreadable documents, which the LLM parser reports).
pub fn nonllm_model_of(text: &str, format: WorkloadFormat) -> Option<NonLlmModel> {
    let id = match format {
        WorkloadFormat::Json => serde_json::from_str::<serde_json::Value>(text)
            .ok()?
            .get("model")?
            .get("id")?
            .as_str()?
            .to_string(),
        WorkloadFormat::Toml => toml::from_str::<toml::Table>(text)
            .ok()?
            .get("model")?
            .get("id")?
            .as_str()?
            .to_string(),
    };
    NonLlmCatalog::embedded().ok()?.model(&id).cloned()
}

/// Parses and validates a non-LLM workload; errors name the file and field.
pub fn parse_nonllm_workload(
    name: &str,
    text: &str,
    format: WorkloadFormat,
    catalog: &Catalog,
) -> Result<NonLlmWorkload> {
    let raw: RawNonLlmWorkload = parse_document(name, text, format)?;
    let bad = |field: &str, value: String, expected: &str| {
        CoreError::invalid(field, value, expected.to_string())
    };
    if raw.kind != "inference" {
        return Err(bad("kind", raw.kind.clone(), "inference"));
    }
    let model = NonLlmCatalog::embedded()
        .ok()
        .and_then(|c| c.model(&raw.model.id).cloned())
        .ok_or_else(|| bad("model.id", raw.model.id.clone(), "a non-LLM model id"))?;
    let rate = raw.traffic.requests_per_s;
    if !(rate > 0.0 && rate <= 1e7) {
        return Err(bad(
            "traffic.requests_per_s",
            rate.to_string(),
            "a number > 0 and at most 1e7",
        ));
    }
    if let Some(l) = raw.slo.latency_ms_p99 {
        if !(l > 0.0 && l <= 86_400_000.0) {
            return Err(bad(
                "slo.latency_ms_p99",
                l.to_string(),
                "a number > 0 and at most 86400000 (a day)",
            ));
        }
    }
    let (unit, units_per_request) = unit_of(&model, &raw.request)?;
    Ok(NonLlmWorkload {
        name: raw.name.clone().unwrap_or_else(|| model.id.clone()),
        precisions: raw
            .model
            .precisions
            .clone()
            .unwrap_or(vec![Precision::Fp16]),
        unit,
        units_per_request,
        requests_per_s: rate,
        latency_ms_p99: raw.slo.latency_ms_p99,
        constraints: validate_constraints(&raw.constraints, catalog)?,
        model,
    })
}

/// One unit of work and how many make a request; fields of another family are errors.
fn unit_of(model: &NonLlmModel, r: &RawRequest) -> Result<(Request, u64)> {
    reject_foreign_fields(model.family, r)?;
    match model.family {
        NonLlmFamily::Diffusion => image_unit(model, r),
        NonLlmFamily::Speech => audio_unit(r),
        NonLlmFamily::Encoder => text_unit(model, r),
    }
}

/// A request field that belongs to another family's requests is an error.
fn reject_foreign_fields(family: NonLlmFamily, r: &RawRequest) -> Result<()> {
    let foreign: &[(&str, bool)] = &[
        (
            "request.resolution",
            r.resolution.is_some() && family != NonLlmFamily::Diffusion,
        ),
        (
            "request.steps",
            r.steps.is_some() && family != NonLlmFamily::Diffusion,
        ),
        (
            "request.guidance",
            r.guidance.is_some() && family != NonLlmFamily::Diffusion,
        ),
        (
            "request.audio_s",
            r.audio_s.is_some() && family != NonLlmFamily::Speech,
        ),
        (
            "request.beam",
            r.beam.is_some() && family != NonLlmFamily::Speech,
        ),
        (
            "request.tokens_per_audio_s",
            r.tokens_per_audio_s.is_some() && family != NonLlmFamily::Speech,
        ),
        (
            "request.tokens",
            r.tokens.is_some() && family != NonLlmFamily::Encoder,
        ),
        (
            "request.sequences",
            r.sequences.is_some() && family != NonLlmFamily::Encoder,
        ),
    ];
    match foreign.iter().find(|(_, bad)| *bad) {
        Some((field, _)) => Err(CoreError::invalid(
            *field,
            "set",
            format!("only fields of a {} model's request", family.as_str()),
        )),
        None => Ok(()),
    }
}

/// `v` when it is a whole number from 1 to `max`, else an error naming `field`.
fn in_range(field: &str, v: u64, max: u64) -> Result<u64> {
    if (1..=max).contains(&v) {
        Ok(v)
    } else {
        Err(CoreError::invalid(
            field,
            v.to_string(),
            format!("a whole number from 1 to {max}"),
        ))
    }
}

/// One image (resolution a multiple of 16 px, steps, guidance) per request.
fn image_unit(model: &NonLlmModel, r: &RawRequest) -> Result<(Request, u64)> {
    let px = r.resolution.or(model.default_resolution).unwrap_or(1024);
    let px = in_range("request.resolution", px, 8192)?;
    if px % 16 != 0 {
        return Err(CoreError::invalid(
            "request.resolution",
            px.to_string(),
            "a multiple of 16 pixels",
        ));
    }
    let request = Request::Image {
        resolution_px: px,
        steps: in_range("request.steps", r.steps.unwrap_or(30), 1000)?,
        guidance: r.guidance.unwrap_or(true),
    };
    Ok((request, 1))
}

/// One 30 s audio window per unit, as many as the clip needs.
fn audio_unit(r: &RawRequest) -> Result<(Request, u64)> {
    let audio_s = r.audio_s.unwrap_or(WHISPER_WINDOW_S);
    if !(audio_s > 0.0 && audio_s <= 86_400.0) {
        return Err(CoreError::invalid(
            "request.audio_s",
            audio_s.to_string(),
            "a number > 0 and at most 86400",
        ));
    }
    let rate = r.tokens_per_audio_s.unwrap_or(WHISPER_TOKENS_PER_AUDIO_S);
    if !(rate > 0.0 && rate <= 50.0) {
        return Err(CoreError::invalid(
            "request.tokens_per_audio_s",
            rate.to_string(),
            "a number > 0 and at most 50",
        ));
    }
    let windows = (audio_s / WHISPER_WINDOW_S).ceil().max(1.0);
    // Every window is padded to 30 s; its tokens follow the speech in it.
    let request = Request::Audio {
        output_tokens: rate * audio_s.min(WHISPER_WINDOW_S),
        beam: in_range("request.beam", r.beam.unwrap_or(1), 16)?,
    };
    Ok((request, windows as u64))
}

/// One sequence of at most the encoder's positions per unit, `sequences`
/// per request.
fn text_unit(model: &NonLlmModel, r: &RawRequest) -> Result<(Request, u64)> {
    let max = model.components.first().map(|c| c.positions).unwrap_or(512);
    let tokens = r.tokens.or(model.default_seq_len).unwrap_or(max);
    let tokens = in_range("request.tokens", tokens, max)?;
    let sequences = in_range("request.sequences", r.sequences.unwrap_or(1), 1 << 20)?;
    Ok((
        Request::Text {
            seq_len: tokens as f64,
        },
        sequences,
    ))
}
