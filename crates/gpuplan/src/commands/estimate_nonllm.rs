//! `gpuplan estimate --model <diffusion/Whisper/encoder model>`: one request
//! alone, a batch, and the best batch on `--count` GPUs (the work is
//! `gpuplan_app::run_nonllm_estimate`; this file reads flags and prints).

use super::fit::replica_request;
use super::{check_finite, print_json, table};
use crate::cli::EstimateCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_app::{run_nonllm_estimate, FieldNames, NonLlmEstimateRequest};
use gpuplan_catalog::{Catalog, NonLlmModel};
use gpuplan_core::nonllm::{NonLlmEstimate, NonLlmEstimateOutcome, Request};

pub fn run(catalog: &Catalog, model: &NonLlmModel, cmd: &EstimateCmd) -> CliResult {
    let request = NonLlmEstimateRequest {
        model: gpuplan_app::ModelRequest {
            id: Some(model.id.clone()),
            hf_config_inline: None,
        },
        replica: replica_request(&cmd.replica),
        concurrency: cmd.concurrency,
        steps: cmd.steps,
        resolution: cmd.resolution,
        no_guidance: cmd.no_guidance,
        audio_seconds: cmd.audio_seconds,
        beam: cmd.beam,
        input_len: cmd.input_len,
        output_len: cmd.output_len,
    };
    let cal = load::calibration(cmd.calibration.as_deref())?;
    let outcome = run_nonllm_estimate(catalog, &cal, Some(model), &request, &FieldNames::FLAGS)?;
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
