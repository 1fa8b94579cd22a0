//! `gpuplan estimate --model <diffusion/Whisper/encoder model>`: one request
//! alone, a batch, and the best batch on `--count` GPUs (the work is
//! `gpuplan_core::nonllm::estimate_nonllm`; this file reads flags and prints).

use super::{check_finite, print_json, table};
use crate::cli::EstimateCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::{Catalog, NonLlmFamily, NonLlmModel, Precision};
use gpuplan_core::nonllm::{
    bundled_factors, default_unit, estimate_nonllm, NonLlmEstimate, NonLlmEstimateOutcome, Request,
    Setup, MAX_BATCH, WHISPER_TOKENS_PER_AUDIO_S, WHISPER_WINDOW_S,
};

pub fn run(catalog: &Catalog, model: &NonLlmModel, cmd: &EstimateCmd) -> CliResult {
    let gpu = catalog
        .gpu(&cmd.replica.gpu)
        .map_err(|e| CliError::bad(format!("--gpu: {e}")))?;
    let precision: Precision = cmd
        .replica
        .precision
        .parse()
        .map_err(|e| CliError::bad(format!("--precision: {e}")))?;
    if cmd.replica.tp.is_some_and(|tp| tp > 1) || cmd.replica.pp > 1 {
        return Err(CliError::bad(format!(
            "--tp/--pp: `{}` runs one replica per GPU (no tensor or pipeline split); use --count for more GPUs",
            model.id
        )));
    }
    let gpus = u64::from(cmd.replica.count.unwrap_or(1));
    if let Some(b) = cmd.concurrency.filter(|b| *b > MAX_BATCH) {
        return Err(CliError::bad(format!(
            "--concurrency: {b} requests per batch; expected a whole number from 1 to {MAX_BATCH} for a {} model",
            model.family.as_str()
        )));
    }
    let request = request_of(model, cmd)?;
    let cal = load::calibration(cmd.calibration.as_deref())?;
    let factors = bundled_factors();
    let setup = Setup {
        model,
        gpu,
        precision,
        cal: &cal,
        factors: &factors,
    };
    let outcome = estimate_nonllm(&setup, &request, gpus, cmd.concurrency)
        .map_err(|e| CliError::bad(format!("--precision {precision} on {}: {e}", gpu.name)))?;
    let e = match outcome {
        NonLlmEstimateOutcome::Estimated(e) => e,
        NonLlmEstimateOutcome::DoesNotFit(d) => {
            if cmd.json {
                print_json(&d)?;
            } else {
                println!("DOES NOT FIT: {}", d.reason);
            }
            return Err(CliError::Infeasible);
        }
    };
    if cmd.json {
        return print_json(&e);
    }
    check_finite(&e)?;
    print_text(&e);
    Ok(())
}

/// The request the flags describe; flags of another family are refused.
fn request_of(model: &NonLlmModel, cmd: &EstimateCmd) -> CliResult<Request> {
    let family = model.family;
    let refuse = |flag: &str, family_of_flag: &str| {
        Err(CliError::bad(format!(
            "{flag}: applies to {family_of_flag} models; `{}` is a {} model",
            model.id,
            family.as_str()
        )))
    };
    let diffusion_flags = cmd.steps.is_some() || cmd.resolution.is_some() || cmd.no_guidance;
    let speech_flags = cmd.audio_seconds.is_some() || cmd.beam.is_some();
    if cmd.output_len.is_some() {
        return refuse("--output-len", "LLM");
    }
    match (family, default_unit(model)) {
        (NonLlmFamily::Diffusion, Request::Image { resolution_px, .. }) => {
            if speech_flags {
                return refuse("--audio-seconds/--beam", "speech");
            }
            if cmd.input_len.is_some() {
                return refuse("--input-len", "LLM and encoder");
            }
            let px = cmd.resolution.unwrap_or(resolution_px);
            if !px.is_multiple_of(16) {
                return Err(CliError::bad(format!(
                    "--resolution: {px} px; expected a multiple of 16 pixels (the VAE downsamples by 8, the UNet by 2 more)"
                )));
            }
            Ok(Request::Image {
                resolution_px: px,
                steps: cmd.steps.unwrap_or(30),
                guidance: !cmd.no_guidance,
            })
        }
        (NonLlmFamily::Speech, _) => {
            if diffusion_flags {
                return refuse("--steps/--resolution/--no-guidance", "image generation");
            }
            if cmd.input_len.is_some() {
                return refuse("--input-len", "LLM and encoder");
            }
            let audio_s = cmd.audio_seconds.unwrap_or(WHISPER_WINDOW_S);
            // Tokens follow the speech in the window (MLPerf's LibriSpeech rate).
            Ok(Request::Audio {
                output_tokens: WHISPER_TOKENS_PER_AUDIO_S * audio_s,
                beam: cmd.beam.unwrap_or(1),
            })
        }
        (NonLlmFamily::Encoder, Request::Text { seq_len }) => {
            if diffusion_flags {
                return refuse("--steps/--resolution/--no-guidance", "image generation");
            }
            if speech_flags {
                return refuse("--audio-seconds/--beam", "speech");
            }
            let max = model.components.first().map(|c| c.positions).unwrap_or(512);
            let tokens = cmd.input_len.map(|t| t as f64).unwrap_or(seq_len);
            if tokens > max as f64 {
                return Err(CliError::bad(format!(
                    "--input-len: {tokens} tokens; `{}` takes at most {max} positions",
                    model.id
                )));
            }
            Ok(Request::Text { seq_len: tokens })
        }
        (_, unit) => Ok(unit),
    }
}

fn describe(unit: &Request) -> String {
    match *unit {
        Request::Image {
            resolution_px,
            steps,
            guidance,
        } => format!(
            "one {resolution_px}×{resolution_px} image, {steps} steps, {}",
            if guidance {
                "classifier-free guidance"
            } else {
                "no guidance"
            }
        ),
        Request::Audio {
            output_tokens,
            beam,
        } => format!("one 30 s audio window, {output_tokens:.0} tokens decoded, beam {beam}"),
        Request::Text { seq_len } => format!("one sequence of {seq_len:.0} tokens"),
    }
}

fn print_text(e: &NonLlmEstimate) {
    println!(
        "{} ({}) on {} × {}, {} weights; {} per request",
        e.model,
        e.family,
        e.gpus,
        e.gpu,
        e.precision,
        describe(&e.unit)
    );
    let parts = e
        .single
        .parts
        .iter()
        .map(|(name, s)| format!("{name} {:.1} ms", s * 1e3))
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "One request alone: {:.1} ms ({parts}).",
        e.single.total_s * 1e3
    );
    let mut t = table(&[
        "batch / GPU",
        "batch ms",
        "req/s (all GPUs)",
        &format!("{}/s", e.unit_name),
        "GiB / GPU",
        "bound",
    ]);
    let rows = if e.batch.batch == e.best.batch {
        vec![(&e.best, " (best)")]
    } else {
        vec![(&e.batch, ""), (&e.best, " (best)")]
    };
    for (b, tag) in rows {
        t.add_row(vec![
            format!("{}{tag}", b.batch),
            format!("{:.1}", b.batch_s * 1e3),
            format!("{:.2}", b.requests_per_s),
            if b.units_per_s < 10.0 {
                format!("{:.3}", b.units_per_s)
            } else {
                format!("{:.1}", b.units_per_s)
            },
            format!("{:.1} of {:.1}", b.memory.total_gib, b.memory.usable_gib),
            if b.compute_bound { "compute" } else { "memory" }.to_string(),
        ]);
    }
    println!("{t}");
    println!(
        "Latency is the batch time once a batch runs; `plan` adds queueing under your traffic and p99 SLO."
    );
}
