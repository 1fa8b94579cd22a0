//! `gpuplan estimate`: one replica's TTFT, TPOT and throughput.

use super::fit::replica_request;
use super::{check_finite, print_json, table};
use crate::cli::EstimateCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_app::{run_estimate, EstimateOutcome, EstimateReport, EstimateRequest, FieldNames};
use gpuplan_catalog::Catalog;

pub fn run(catalog: &Catalog, cmd: EstimateCmd) -> CliResult {
    if cmd.training {
        return super::estimate_training::run(catalog, &cmd);
    }
    if let Some(m) = load::nonllm_model(&cmd.model)? {
        return super::estimate_nonllm::run(catalog, &m, &cmd);
    }
    reject_media_flags(&cmd)?;
    let model = load::model(catalog, &cmd.model)?;
    let model_request = gpuplan_app::ModelRequest {
        id: Some(model.id.clone()),
        hf_config_inline: None,
    };
    let (Some(input_len), Some(output_len)) = (cmd.input_len, cmd.output_len) else {
        return Err(CliError::bad(
            "--input-len and --output-len are required for an LLM (or --training)",
        ));
    };
    let cal = load::calibration(cmd.calibration.as_deref())?;
    let request = EstimateRequest {
        model: model_request,
        replica: replica_request(&cmd.replica),
        input_len,
        output_len,
        concurrency: cmd.concurrency,
        max_num_seqs: cmd.max_num_seqs,
        max_batched_tokens: cmd.max_batched_tokens,
        memory_utilization: cmd.memory_utilization,
        beam_width: cmd.beam.unwrap_or(1),
    };
    let report = match run_estimate(catalog, &cal, Some(&model), &request, &FieldNames::FLAGS)? {
        EstimateOutcome::Estimated(report) => report,
        EstimateOutcome::DoesNotFit(d) => {
            if cmd.json {
                print_json(&d)?;
            } else {
                println!("DOES NOT FIT: {}", d.reason.unwrap_or_default());
            }
            return Err(CliError::Infeasible);
        }
    };
    if cmd.json {
        return print_json(&report);
    }
    print_report(catalog, &report, input_len, output_len)
}

/// Flags that only image-generation and speech models take.
fn reject_media_flags(cmd: &EstimateCmd) -> CliResult {
    for (set, flag) in [
        (cmd.steps.is_some(), "--steps"),
        (cmd.resolution.is_some(), "--resolution"),
        (cmd.no_guidance, "--no-guidance"),
        (cmd.audio_seconds.is_some(), "--audio-seconds"),
    ] {
        if set {
            return Err(CliError::bad(format!(
                "{flag}: applies to image-generation and speech models, not to LLMs"
            )));
        }
    }
    Ok(())
}

/// The human-readable estimate: the setup line, the latency/throughput
/// table, the memory line and the calibration note.
fn print_report(
    catalog: &Catalog,
    report: &EstimateReport,
    input_len: u64,
    output_len: u64,
) -> CliResult {
    let (e, memory, layout, precision, kv_precision) = (
        report,
        &report.memory,
        (report.tp, report.pp),
        report.precision,
        report.kv_precision,
    );
    check_finite(report)?;
    println!(
        "{} on {} × {} [TP{} × PP{}], {} weights, {} KV cache, {}; {input_len} in / {output_len} out tokens{}",
        report.model,
        report.gpu_count,
        report.gpu,
        layout.0,
        layout.1,
        precision,
        kv_precision,
        report.engine.label(),
        if report.beam_width > 1 {
            format!(", {} beams", report.beam_width)
        } else {
            String::new()
        }
    );
    println!("{}", metrics_table(e));
    println!(
        "Per GPU: weights {:.1} GiB, KV cache {:.1} GiB ({} tokens per replica).",
        memory.per_gpu.weights_gib, memory.per_gpu.kv_cache_gib, memory.kv_cache_tokens
    );
    if !e.calibrated {
        let family = catalog
            .gpu(&report.gpu)
            .map(|g| g.architecture.clone())
            .unwrap_or_default();
        println!("Note: no calibration data for the {family} family; efficiencies are extrapolated from other GPUs.");
    }
    Ok(())
}

/// The estimate's metrics, one row each with the resource that bounds it.
fn metrics_table(e: &EstimateReport) -> comfy_table::Table {
    let c_note = match e.concurrency_bound {
        Some(b) => format!(
            "{:.0} (max-throughput point, limited by {})",
            e.concurrency,
            b.label()
        ),
        None => format!("{:.0} (of at most {:.0})", e.concurrency, e.max_concurrency),
    };
    let mut t = table(&["metric", "value", "bound"]);
    t.add_row(vec!["concurrency".to_string(), c_note, String::new()]);
    t.add_row(vec![
        "TTFT".into(),
        format!("{:.1} ms", e.ttft_ms),
        e.prefill_bound.label().into(),
    ]);
    t.add_row(vec![
        "TPOT".into(),
        format!("{:.2} ms", e.tpot_ms),
        e.decode_bound.label().into(),
    ]);
    t.add_row(vec![
        "end-to-end".into(),
        format!("{:.0} ms", e.e2e_ms),
        String::new(),
    ]);
    t.add_row(vec![
        "output tokens/s".into(),
        format!(
            "{:.0} ({:.0} per GPU)",
            e.output_tokens_per_s, e.output_tokens_per_s_per_gpu
        ),
        String::new(),
    ]);
    t.add_row(vec![
        "requests/s".into(),
        format!("{:.2}", e.requests_per_s),
        String::new(),
    ]);
    t
}
