//! `gpuplan estimate`: one replica's TTFT, TPOT and throughput.

use super::fit::{check, flag_spelling, replica_layout, resolve_replica};
use super::{check_finite, print_json, table};
use crate::cli::EstimateCmd;
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::{Catalog, Precision};
use gpuplan_core::{
    estimate, inference_memory, Bound, EngineLimits, MemoryBreakdown, ReplicaSpec, Spelling,
};
use serde::Serialize;

/// The memory block, as `fit --json` reports it.
#[derive(Serialize)]
struct MemoryBlock {
    fits: bool,
    gpu: String,
    gpu_memory_gib: f64,
    budget_gib: f64,
    per_gpu: MemoryBreakdown,
    kv_cache_bytes_per_token: f64,
    kv_cache_tokens: u64,
    max_concurrent_sequences: u64,
}

/// The `estimate --json` document (field names are a contract).
#[derive(Serialize)]
struct EstimateReport {
    model: String,
    gpu: String,
    gpu_count: u32,
    tp: u32,
    pp: u32,
    precision: Precision,
    kv_precision: Precision,
    input_len: u64,
    output_len: u64,
    ttft_ms: f64,
    tpot_ms: f64,
    e2e_ms: f64,
    output_tokens_per_s: f64,
    output_tokens_per_s_per_gpu: f64,
    requests_per_s: f64,
    concurrency: f64,
    max_concurrency: f64,
    prefill_bound: Bound,
    decode_bound: Bound,
    concurrency_bound: Option<Bound>,
    calibrated: bool,
    memory: MemoryBlock,
}

pub fn run(catalog: &Catalog, cmd: EstimateCmd) -> CliResult {
    if cmd.training {
        return super::estimate_training::run(catalog, &cmd);
    }
    let model = load::model(catalog, &cmd.model)?;
    let (gpu, precision, kv_precision) = resolve_replica(catalog, &cmd.replica)?;
    let layout = replica_layout(cmd.replica.count, cmd.replica.tp, cmd.replica.pp)?;
    // clap requires both without --training.
    let (Some(input_len), Some(output_len)) = (cmd.input_len, cmd.output_len) else {
        return Err(CliError::bad(
            "--input-len and --output-len are required (or --training)",
        ));
    };
    let cal = load::calibration(cmd.calibration.as_deref())?;
    let limits = EngineLimits {
        memory_utilization: cmd.memory_utilization,
        max_batched_tokens: cmd.max_batched_tokens,
        max_num_seqs: cmd.max_num_seqs,
    };
    // Both lengths are at most 2^27 (clap), so their sum cannot overflow.
    let spec = ReplicaSpec {
        model: &model,
        gpu,
        precision,
        kv_precision,
        layout,
        limits,
        context_len: input_len + output_len,
        spelling: Spelling {
            context: "--input-len + --output-len",
            ..flag_spelling(&cmd.replica)
        },
    };
    let checked = check(catalog, &spec, cmd.replica.variant)?;
    let memory = inference_memory(&checked.memory_input())?;
    let block = MemoryBlock {
        fits: memory.fits,
        gpu: gpu.name.clone(),
        gpu_memory_gib: memory.gpu_memory_gib,
        budget_gib: memory.budget_gib,
        per_gpu: memory.per_gpu,
        kv_cache_bytes_per_token: memory.kv_cache_bytes_per_token,
        kv_cache_tokens: memory.kv_cache_tokens,
        max_concurrent_sequences: memory.max_concurrent_sequences,
    };
    if !memory.fits {
        if cmd.json {
            print_json(
                &serde_json::json!({ "fits": false, "reason": memory.reason, "memory": block }),
            )?;
        } else {
            println!("DOES NOT FIT: {}", memory.reason.unwrap_or_default());
        }
        return Err(CliError::Infeasible);
    }
    let dep = checked.deployment(&cal)?;
    let e = estimate(
        &dep,
        &memory,
        input_len,
        output_len,
        cmd.concurrency,
        cmd.max_num_seqs,
        cmd.max_batched_tokens,
    )?;
    let report = EstimateReport {
        model: model.id.clone(),
        gpu: gpu.name.clone(),
        gpu_count: layout.gpus(),
        tp: layout.tp,
        pp: layout.pp,
        precision,
        kv_precision,
        input_len,
        output_len,
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
        memory: block,
    };
    if cmd.json {
        return print_json(&report);
    }
    check_finite(&report)?;
    println!(
        "{} on {} × {} [TP{} × PP{}], {} weights, {} KV cache; {input_len} in / {output_len} out tokens",
        report.model, report.gpu_count, report.gpu, layout.tp, layout.pp, precision, kv_precision
    );
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
    println!("{t}");
    println!(
        "Per GPU: weights {:.1} GiB, KV cache {:.1} GiB ({} tokens per replica).",
        memory.per_gpu.weights_gib, memory.per_gpu.kv_cache_gib, memory.kv_cache_tokens
    );
    if !e.calibrated {
        println!("Note: no calibration data for the {} family; efficiencies are extrapolated from other GPUs.", gpu.architecture);
    }
    Ok(())
}
