//! `gpuplan estimate` / `POST /v1/estimate` for an image-generation, speech
//! or encoder model: the request in the family's units from the flags or
//! JSON fields, then `gpuplan_core::nonllm::estimate_nonllm`.

use crate::error::{AppError, AppResult};
use crate::replica::{check_count, FieldNames, ModelRequest, ReplicaRequest};
use gpuplan_catalog::{Catalog, NonLlmCatalog, NonLlmFamily, NonLlmModel, Precision};
use gpuplan_core::limits::{Count, Span};
use gpuplan_core::nonllm::{
    bundled_factors, default_unit, estimate_nonllm, NonLlmEstimateOutcome, Request, Setup,
    MAX_BATCH, WHISPER_TOKENS_PER_AUDIO_S, WHISPER_WINDOW_S,
};
use gpuplan_core::Calibration;
use serde::Deserialize;

/// Denoising steps per image.
pub const DENOISING_STEPS: Count = Count::new(1, 1000);
/// Image side, pixels.
pub const IMAGE_SIDE_PX: Count = Count::new(16, 8192);
/// Seconds of speech in one Whisper window.
pub const AUDIO_WINDOW_S: Span = Span::above(0.0, 30.0);
/// Whisper beam width.
pub const BEAM_WIDTH: Count = Count::new(1, 16);

/// An estimate for a non-LLM model (the JSON body of `/v1/estimate` when
/// `model.id` names one; the CLI's flags of the same names).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NonLlmEstimateRequest {
    /// The model (by id).
    #[serde(default)]
    pub model: ModelRequest,
    /// GPU, count and precision (one replica per GPU: no tp/pp).
    pub replica: ReplicaRequest,
    /// Requests per batch per GPU (default: the best batch).
    pub concurrency: Option<u64>,
    /// Image generation: denoising steps (default 30).
    pub steps: Option<u64>,
    /// Image generation: image side in pixels (default: the model's).
    pub resolution: Option<u64>,
    /// Image generation: no classifier-free guidance.
    #[serde(default)]
    pub no_guidance: bool,
    /// Speech: seconds of speech per request, up to one 30 s window.
    pub audio_seconds: Option<f64>,
    /// Speech: beam width.
    pub beam: Option<u64>,
    /// Encoders: tokens per sequence (default: the model's).
    pub input_len: Option<u64>,
    /// LLMs only; refused here.
    pub output_len: Option<u64>,
}

/// The non-LLM model a request names, if it names one.
pub fn nonllm_model_named(id: &str) -> AppResult<Option<NonLlmModel>> {
    let catalog = NonLlmCatalog::embedded().map_err(|e| AppError::internal(e.to_string()))?;
    Ok(catalog.model(id).cloned())
}

/// How a front end spells a field: `--steps` on the command line, `steps`
/// in JSON.
fn spell(names: &FieldNames, field: &str) -> String {
    if names.input_len.starts_with("--") {
        format!("--{}", field.replace('_', "-"))
    } else {
        field.to_string()
    }
}

/// Predicts one request of `model` on the request's GPUs. `model` is the
/// model to use (the CLI may have read it from `--hf-config`); `None`
/// resolves `req.model.id` in the bundled non-LLM catalog.
pub fn run_nonllm_estimate(
    catalog: &Catalog,
    cal: &Calibration,
    model: Option<&NonLlmModel>,
    req: &NonLlmEstimateRequest,
    names: &FieldNames,
) -> AppResult<NonLlmEstimateOutcome> {
    let resolved;
    let model = match model {
        Some(m) => m,
        None => {
            let id = req.model.id.as_deref().unwrap_or_default();
            resolved = nonllm_model_named(id)?.ok_or_else(|| {
                AppError::bad_field(
                    names.model,
                    format!(
                        "{}: `{id}` is not an image, speech or encoder model",
                        names.model
                    ),
                )
            })?;
            &resolved
        }
    };
    let gpu = catalog.gpu(&req.replica.gpu).map_err(|e| {
        AppError::bad_field(names.replica.gpu, format!("{}: {e}", names.replica.gpu))
    })?;
    let precision: Precision = req.replica.precision.parse().map_err(|e| {
        AppError::bad_field(
            names.replica.precision,
            format!("{}: {e}", names.replica.precision),
        )
    })?;
    if req.replica.tp.is_some_and(|tp| tp > 1) || req.replica.pp > 1 {
        return Err(AppError::bad_field(
            names.replica.tp,
            format!(
                "{}/{}: `{}` runs one replica per GPU (no tensor or pipeline split); use {} for more GPUs",
                names.replica.tp, names.replica.pp, model.id, names.count
            ),
        ));
    }
    let gpus = u64::from(req.replica.count.unwrap_or(1));
    check_count(names.count, gpus, gpuplan_core::limits::GPUS)?;
    if let Some(b) = req.concurrency {
        check_count(names.concurrency, b, Count::new(1, MAX_BATCH))?;
    }
    let request = request_of(model, req, names)?;
    let factors = bundled_factors();
    let setup = Setup {
        model,
        gpu,
        precision,
        cal,
        factors: &factors,
    };
    estimate_nonllm(&setup, &request, gpus, req.concurrency).map_err(|e| {
        AppError::bad_field(
            names.replica.precision,
            format!(
                "{} {precision} on {}: {e}",
                names.replica.precision, gpu.name
            ),
        )
    })
}

/// The request the fields describe; fields of another family are refused.
fn request_of(
    model: &NonLlmModel,
    req: &NonLlmEstimateRequest,
    names: &FieldNames,
) -> AppResult<Request> {
    refuse_foreign_fields(model, req, names)?;
    match default_unit(model) {
        Request::Image { resolution_px, .. } => image_request(req, names, resolution_px),
        Request::Audio { .. } => audio_request(req, names),
        Request::Text { seq_len } => {
            let max = model.components.first().map(|c| c.positions).unwrap_or(512);
            let tokens = req.input_len.unwrap_or(seq_len.round() as u64);
            check_count(names.input_len, tokens, Count::new(1, max))?;
            Ok(Request::Text {
                seq_len: tokens as f64,
            })
        }
    }
}

/// A field of another family's requests (or an LLM's output length) is an
/// error naming the field and the model's family.
fn refuse_foreign_fields(
    model: &NonLlmModel,
    req: &NonLlmEstimateRequest,
    names: &FieldNames,
) -> AppResult<()> {
    let refuse = |field: String, applies_to: &str| {
        Err(AppError::bad_field(
            field.clone(),
            format!(
                "{field}: applies to {applies_to} models; `{}` is a {} model",
                model.id,
                model.family.as_str()
            ),
        ))
    };
    if req.output_len.is_some() {
        return refuse(names.output_len.to_string(), "LLM");
    }
    let family = model.family;
    let diffusion_field = [
        (req.steps.is_some(), "steps"),
        (req.resolution.is_some(), "resolution"),
        (req.no_guidance, "no_guidance"),
    ]
    .into_iter()
    .find_map(|(set, f)| set.then_some(f));
    let speech_field = [
        (req.audio_seconds.is_some(), "audio_seconds"),
        (req.beam.is_some(), "beam"),
    ]
    .into_iter()
    .find_map(|(set, f)| set.then_some(f));
    if let (Some(f), false) = (diffusion_field, family == NonLlmFamily::Diffusion) {
        return refuse(spell(names, f), "image-generation");
    }
    if let (Some(f), false) = (speech_field, family == NonLlmFamily::Speech) {
        return refuse(spell(names, f), "speech");
    }
    if req.input_len.is_some() && family != NonLlmFamily::Encoder {
        return refuse(names.input_len.to_string(), "LLM and encoder");
    }
    Ok(())
}

/// An image request: the resolution (a multiple of 16 px, the model's
/// default unless given), the denoising steps (30 unless given), guidance.
fn image_request(
    req: &NonLlmEstimateRequest,
    names: &FieldNames,
    default_px: u64,
) -> AppResult<Request> {
    let px = req.resolution.unwrap_or(default_px);
    let field = spell(names, "resolution");
    check_count(&field, px, IMAGE_SIDE_PX)?;
    if !px.is_multiple_of(16) {
        return Err(AppError::bad_field(
            field.clone(),
            format!("{field}: {px} px; expected a multiple of 16 pixels (the VAE downsamples by 8, the denoiser by 2 more)"),
        ));
    }
    let steps = req.steps.unwrap_or(30);
    check_count(&spell(names, "steps"), steps, DENOISING_STEPS)?;
    Ok(Request::Image {
        resolution_px: px,
        steps,
        guidance: !req.no_guidance,
    })
}

/// A speech request: one window of `audio_seconds` (30 s unless given) and
/// its beam; tokens follow the speech in the window (MLPerf's LibriSpeech
/// rate).
fn audio_request(req: &NonLlmEstimateRequest, names: &FieldNames) -> AppResult<Request> {
    let audio_s = req.audio_seconds.unwrap_or(WHISPER_WINDOW_S);
    if !AUDIO_WINDOW_S.contains(audio_s) {
        let field = spell(names, "audio_seconds");
        return Err(AppError::bad_field(
            field.clone(),
            format!("{field} {audio_s}: expected {}", AUDIO_WINDOW_S.describe()),
        ));
    }
    let beam = req.beam.unwrap_or(1);
    check_count(&spell(names, "beam"), beam, BEAM_WIDTH)?;
    Ok(Request::Audio {
        output_tokens: WHISPER_TOKENS_PER_AUDIO_S * audio_s,
        beam,
    })
}
