//! `gpuplan fit --model <diffusion/Whisper/encoder model>`: memory, batch
//! time and throughput on one GPU at each batch size (the work is
//! `gpuplan_core::nonllm::size`; this file only prints).

use super::{check_finite, print_json, table};
use crate::cli::FitCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::{Catalog, NonLlmModel, Precision};
use gpuplan_core::nonllm::{bundled_factors, default_unit, size, Setup, Sizing};
use serde::Serialize;

/// The `fit --json` document for a non-LLM model.
#[derive(Serialize)]
struct NonLlmFitReport<'a> {
    fits: bool,
    mode: &'static str,
    model: &'a str,
    family: &'static str,
    gpu: &'a str,
    precision: Precision,
    #[serde(flatten)]
    sizing: &'a Sizing,
}

pub fn run(catalog: &Catalog, model: &NonLlmModel, cmd: &FitCmd) -> CliResult {
    if cmd.training {
        return Err(CliError::bad(format!(
            "--training: `{}` is a {} model; training is modelled for LLMs only",
            model.id,
            model.family.as_str()
        )));
    }
    let gpu = catalog
        .gpu(&cmd.replica.gpu)
        .map_err(|e| CliError::bad(format!("--gpu: {e}")))?;
    let precision: Precision = cmd
        .replica
        .precision
        .parse()
        .map_err(|e| CliError::bad(format!("--precision: {e}")))?;
    let cal = load::calibration(None)?;
    let factors = bundled_factors();
    let setup = Setup {
        model,
        gpu,
        precision,
        cal: &cal,
        factors: &factors,
    };
    let sizing = size(&setup, &default_unit(model))
        .map_err(|e| CliError::bad(format!("--precision {precision} on {}: {e}", gpu.name)))?;
    let report = NonLlmFitReport {
        fits: sizing.fits,
        mode: "inference",
        model: &model.id,
        family: model.family.as_str(),
        gpu: &gpu.name,
        precision,
        sizing: &sizing,
    };
    if cmd.json {
        print_json(&report)?;
    } else {
        check_finite(&report)?;
        print_text(&report);
    }
    if sizing.fits {
        Ok(())
    } else {
        Err(CliError::Infeasible)
    }
}

fn print_text(r: &NonLlmFitReport<'_>) {
    let verdict = if r.fits { "FITS" } else { "DOES NOT FIT" };
    println!(
        "{verdict}: {} ({}) on {} at {}, {:?}; largest batch {}",
        r.model, r.family, r.gpu, r.precision, r.sizing.unit, r.sizing.max_batch
    );
    let mut t = table(&[
        "batch",
        "weights GiB",
        "activations GiB",
        "cache GiB",
        "total GiB",
        "usable GiB",
        "fits",
        "batch ms",
        "req/s",
    ]);
    for row in &r.sizing.rows {
        let m = &row.memory;
        t.add_row(vec![
            row.batch.to_string(),
            format!("{:.2}", m.weights_gib),
            format!("{:.2}", m.activations_gib),
            format!("{:.2}", m.cache_gib),
            format!("{:.2}", m.total_gib),
            format!("{:.1}", m.usable_gib),
            if m.fits { "yes".into() } else { "no".into() },
            row.batch_ms
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "–".into()),
            row.requests_per_s
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "–".into()),
        ]);
    }
    println!("{t}");
}
