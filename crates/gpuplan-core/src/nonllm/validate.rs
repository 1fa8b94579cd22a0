//! Predicting the published measurements of non-LLM services (MLPerf
//! Inference SDXL, Whisper and BERT; diffusers/TensorRT latencies; embedding
//! servers): the request comes from the row's data set or its stated steps,
//! resolution and lengths; the value from [`Setup`].

use super::service::{Request, Setup};
use crate::calibration::Calibration;
use crate::memory::GIB;
use crate::validate::Prediction;
use gpuplan_catalog::{
    BenchmarkKind, BenchmarkRow, Catalog, NonLlmCatalog, NonLlmFamily, NonLlmModel, Precision,
};

/// MLPerf SDXL sample: one 1024×1024 image, 20 Euler steps, guidance 8
/// (`mlcommons/inference` text_to_image/backend_pytorch.py; benchmark_datasets.md).
const MLPERF_SDXL: Request = Request::Image {
    resolution_px: 1024,
    steps: 20,
    guidance: true,
};
/// MLPerf BERT sample: one SQuAD v1.1 feature of at most 384 tokens; the
/// reference pads to 384 but NVIDIA's harness strips the padding, and the real
/// mean length is not published, so it is a fitted factor
/// (`mlperf_bert_mean_tokens`, data/nonllm_calibration.csv), 384 when absent.
const MLPERF_BERT_MAX_SEQ: f64 = 384.0;
/// Whisper output tokens per MLPerf sample as TensorRT-LLM counts them (mean
/// over 25 v5.1 results: tokens/s ÷ samples/s) and as the reference vLLM
/// harness counts them (4 results); benchmark_datasets.md.
const MLPERF_WHISPER_TOKENS_TRTLLM: f64 = 63.46;
const MLPERF_WHISPER_TOKENS_VLLM: f64 = 74.87;
/// Speech per MLPerf Whisper sample, seconds ((5.4 h + 5.3 h) · 3600 / 1633).
const MLPERF_WHISPER_SPEECH_S: f64 = 23.6;
/// Whisper's window, seconds (Radford et al. 2022, §2.2).
const WHISPER_WINDOW_S: f64 = 30.0;

/// The prediction for `row` when its model is a non-LLM model (None otherwise,
/// and for training rows, which the training model handles).
pub fn predict_nonllm(
    catalog: &Catalog,
    nonllm: &NonLlmCatalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    factors: &Calibration,
) -> Option<Prediction> {
    let model = nonllm.model(&row.model)?;
    if row.kind == BenchmarkKind::Training {
        return None;
    }
    Some(predict(catalog, model, row, cal, factors))
}

fn predict(
    catalog: &Catalog,
    model: &NonLlmModel,
    row: &BenchmarkRow,
    cal: &Calibration,
    factors: &Calibration,
) -> Prediction {
    let gpu = catalog.gpu(&row.gpu).map_err(|e| e.to_string())?;
    let (precision, assumed) = precision_of(row)?;
    let setup = Setup {
        model,
        gpu,
        precision,
        cal,
        factors,
    };
    let request = request_of(model, row, factors)?;
    let gpus = row.gpu_count.unwrap_or(1);
    let per_system = |v: f64| v * gpus as f64;
    let batch = row.batch_or_concurrency.unwrap_or(1);
    let (value, what) = match row.metric.as_str() {
        "samples_per_s" | "output_tokens_per_s" => {
            let (rate, t) = setup.max_throughput(&request)?;
            let per_sample = match (row.metric.as_str(), request) {
                ("output_tokens_per_s", Request::Audio { output_tokens, .. }) => output_tokens,
                ("output_tokens_per_s", _) => {
                    return Err("tokens/s is predicted for speech only".into())
                }
                _ => 1.0,
            };
            (per_system(rate * per_sample), describe(&t))
        }
        "samples_per_s_at_slo" => {
            let bound_ms = row
                .latency_p99_bound_ms
                .ok_or("row states no p99 latency bound (latency_p99_bound_ms)")?;
            let (rate, t) = setup.server_throughput(&request, gpus, bound_ms / 1000.0)?;
            (rate, format!("p99 ≤ {bound_ms} ms, {}", describe(&t)))
        }
        "latency_per_image_s" => {
            let t = setup.batch_time(&request, batch)?;
            (t.total_s, describe(&t))
        }
        "images_per_s" => {
            let t = setup.batch_time(&request, batch)?;
            (per_system(batch as f64 / t.total_s), describe(&t))
        }
        "transcription_time_s" => {
            let audio_s = row
                .audio_s
                .ok_or("row states no audio duration (audio_s)")?;
            let windows = (audio_s / WHISPER_WINDOW_S).ceil();
            let t = setup.batch_time(&request, batch)?;
            (windows / batch as f64 * t.total_s, describe(&t))
        }
        "benchmark_time_s" => {
            let requests = row
                .requests
                .ok_or("row states no request count (requests)")?;
            let t = setup.batch_time(&request, batch)?;
            (requests as f64 * t.total_s, describe(&t))
        }
        "peak_memory_gb" => {
            let m = setup.memory(&request, batch);
            (
                m.total_gib * GIB / 1e9,
                format!("weights {:.1} GiB", m.weights_gib),
            )
        }
        other => {
            return Err(format!(
                "metric `{other}` is not predicted for {} models",
                model.family.as_str()
            ))
        }
    };
    let note = if assumed {
        "; precision not stated, 16-bit assumed"
    } else {
        ""
    };
    Ok((value, Some(format!("{what}{note}"))))
}

/// One line on what bounds the prediction.
fn describe(t: &super::service::BatchTime) -> String {
    let top = t
        .parts
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|p| p.0.as_str())
        .unwrap_or("");
    format!(
        "{}, batch {}, {} {:.0}%",
        if t.compute_bound {
            "compute"
        } else {
            "memory-bw"
        },
        t.batch,
        top,
        100.0 * t.parts.iter().map(|p| p.1).fold(0.0, f64::max) / t.total_s
    )
}

/// The row's precision (its first word: `int8-dynamic (bf16 rest)` → int8),
/// or 16 bits when the row states none (flagged in the output).
fn precision_of(row: &BenchmarkRow) -> Result<(Precision, bool), String> {
    let first = row.precision.split([' ', '-', '(']).next().unwrap_or("");
    if first.is_empty() {
        return Ok((Precision::Fp16, true));
    }
    first.parse().map(|p| (p, false))
}

/// The request one sample of the row is.
fn request_of(
    model: &NonLlmModel,
    row: &BenchmarkRow,
    factors: &Calibration,
) -> Result<Request, String> {
    match (model.family, row.dataset.as_str()) {
        (NonLlmFamily::Diffusion, "stable-diffusion-xl") => Ok(MLPERF_SDXL),
        (NonLlmFamily::Diffusion, _) => {
            let steps = row
                .steps
                .ok_or("row states no denoising step count (steps)")?;
            // The stated side, else the model's default.
            let resolution_px = row
                .resolution_px
                .or(model.default_resolution)
                .ok_or("row states no resolution (resolution_px)")?;
            // Consistency-distilled and turbo models sample without guidance
            // (guidance = false); guided unless the row says otherwise.
            let guidance = row.guidance.unwrap_or(true);
            Ok(Request::Image {
                resolution_px,
                steps,
                guidance,
            })
        }
        (NonLlmFamily::Speech, "whisper") => Ok(Request::Audio {
            output_tokens: if row.engine == "vllm" {
                MLPERF_WHISPER_TOKENS_VLLM
            } else {
                MLPERF_WHISPER_TOKENS_TRTLLM
            },
            beam: 1,
        }),
        (NonLlmFamily::Speech, _) => Ok(Request::Audio {
            // Tokens per second of speech as MLPerf's data gives them, over a full window.
            output_tokens: MLPERF_WHISPER_TOKENS_TRTLLM / MLPERF_WHISPER_SPEECH_S
                * WHISPER_WINDOW_S,
            beam: row.beam.unwrap_or(1),
        }),
        (NonLlmFamily::Encoder, "bert-99") => Ok(Request::Text {
            seq_len: factors
                .get("mlperf_bert_mean_tokens")
                .unwrap_or(MLPERF_BERT_MAX_SEQ)
                .min(MLPERF_BERT_MAX_SEQ),
        }),
        // One sentence of `input_len` tokens (mean over the run's sentences).
        (NonLlmFamily::Encoder, _) => Ok(Request::Text {
            seq_len: row
                .input_len
                .ok_or("row states no tokens per sentence (input_len)")?
                as f64,
        }),
    }
}
