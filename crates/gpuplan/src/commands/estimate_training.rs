//! `gpuplan estimate --training`: one training step of an explicit layout —
//! step time, tokens/s, MFU, where the time goes, and whether it fits.

use super::fit::{precision_arg, training_input};
use super::{check_finite, print_json, table};
use crate::cli::{EstimateCmd, FrameworkArg};
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::{Catalog, Precision};
use gpuplan_core::training::{
    schedule_for, step_time, where_time_goes, Fabric, Framework, StepTime, TrainingJob,
    TrainingLayout,
};
use gpuplan_core::{training_memory, MemoryBreakdown};
use serde::Serialize;

/// The `estimate --training --json` document.
#[derive(Serialize)]
struct TrainingEstimate {
    model: String,
    gpu: String,
    gpu_count: u32,
    gpus_per_node: u32,
    network_gbits: f64,
    framework: Framework,
    precision: Precision,
    layout: TrainingLayout,
    global_batch: u64,
    seq_len: u64,
    step: StepTime,
    fits: bool,
    peak_memory_gib: f64,
    gpu_memory_gib: f64,
    per_gpu: MemoryBreakdown,
    reason: Option<String>,
}

pub fn run(catalog: &Catalog, cmd: &EstimateCmd) -> CliResult {
    let model = load::model(catalog, &cmd.model)?;
    let gpu = catalog
        .gpu(&cmd.replica.gpu)
        .map_err(|e| CliError::bad(format!("--gpu: {e}")))?;
    let precision = precision_arg("--precision", &cmd.replica.precision)?;
    let (mut input, count) = training_input(&model, gpu, precision, &cmd.replica, &cmd.train)?;
    input.schedule = schedule_for(u64::from(input.layout.pp), input.micro_batches);
    let cal = load::calibration(cmd.calibration.as_deref())?;
    let factors = load::training_factors(None)?;
    let framework = match cmd.framework {
        FrameworkArg::Torchtitan => Framework::Torchtitan,
        FrameworkArg::Megatron => Framework::Megatron,
    };
    let gpus_per_node = cmd.gpus_per_node.unwrap_or(8.min(count));
    let fabric = Fabric::new(
        gpu,
        gpus_per_node,
        gpu.nvlink_gbps > 0.0,
        cmd.network_gbits,
        false,
        &cal,
    );
    let job = TrainingJob {
        model: &model,
        method: input.method,
        optimizer: input.optimizer,
        precision,
        seq_len: input.seq_len,
        fused_kernels: true,
        async_tp: true,
        grad_reduce_bytes: 4.0,
        attention_kernel: framework.attention_kernel(),
    };
    let layout = TrainingLayout {
        tp: input.layout.tp,
        pp: input.layout.pp,
        dp: input.dp,
        zero: input.zero,
        micro_batch: input.micro_batch,
        micro_batches: input.micro_batches,
        schedule: input.schedule,
        recompute: input.recompute,
    };
    let step = step_time(&job, &layout, gpu, &fabric, &cal, &factors)
        .map_err(|e| CliError::bad(e.to_string()))?;
    let mem = training_memory(&input)?;
    let report = TrainingEstimate {
        model: model.id.clone(),
        gpu: gpu.name.clone(),
        gpu_count: count,
        gpus_per_node,
        network_gbits: cmd.network_gbits,
        framework,
        precision,
        layout,
        global_batch: layout.global_batch(),
        seq_len: input.seq_len,
        step,
        fits: mem.fits,
        peak_memory_gib: mem.reserved_peak_gib,
        gpu_memory_gib: mem.gpu_memory_gib,
        per_gpu: mem.per_gpu,
        reason: mem.reason,
    };
    if cmd.json {
        print_json(&report)?;
    } else {
        check_finite(&report)?;
        print_human(&report);
    }
    if report.fits {
        Ok(())
    } else {
        Err(CliError::Infeasible)
    }
}

fn print_human(r: &TrainingEstimate) {
    let l = &r.layout;
    let s = &r.step;
    println!(
        "{}: {} × {} ({} per node, {} Gb/s network), TP{} × PP{} × DP{} ZeRO-{}, micro-batch {} × {}, {} precision",
        r.model, r.gpu_count, r.gpu, r.gpus_per_node, r.network_gbits, l.tp, l.pp, l.dp, l.zero, l.micro_batch,
        l.micro_batches, r.precision
    );
    println!(
        "Step {:.3} s for {} sequences of {} tokens: {:.0} tokens/s ({:.0} per GPU), {:.0} TFLOP/s per GPU, MFU {:.1}%{}",
        s.step_s,
        r.global_batch,
        r.seq_len,
        s.tokens_per_s,
        s.tokens_per_s_per_gpu,
        s.tflops_per_gpu,
        s.mfu * 100.0,
        if s.calibrated { "" } else { " (uncalibrated GPU family)" }
    );
    let mut t = table(&["where the step goes", "seconds", "share"]);
    for (name, v) in s.parts() {
        t.add_row(vec![
            name.to_string(),
            format!("{v:.4}"),
            format!("{:.1}%", 100.0 * v / s.step_s),
        ]);
    }
    println!("{t}");
    println!("Largest: {}.", where_time_goes(s));
    println!(
        "Memory: {} — peak {:.1} GiB of {:.1} GiB per GPU.",
        if r.fits { "FITS" } else { "DOES NOT FIT" },
        r.peak_memory_gib,
        r.gpu_memory_gib
    );
    if let Some(reason) = &r.reason {
        println!("Why not: {reason}");
    }
}
