//! `gpuplan fit`: does a model fit, and how is each GPU's memory used.

use super::{check_finite, print_json, table};
use crate::cli::{FitCmd, MethodArg, RecomputeArg, ReplicaArgs, TrainingArgs};
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::{Catalog, Precision, Variant};
use gpuplan_core::{
    check_replica, inference_memory, limits, training_memory, CheckedReplica, EngineLimits,
    FineTuneMethod, Layout, MemoryBreakdown, Optimizer, PipelineSchedule, Recompute, ReplicaSpec,
    Spelling, TrainingMemoryInput,
};
use serde::Serialize;

/// The `fit --json` document (field names are a contract).
#[derive(Serialize)]
pub struct FitReport {
    pub fits: bool,
    mode: &'static str,
    model: String,
    gpu: String,
    gpu_count: u32,
    tp: u32,
    pp: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    dp: Option<u32>,
    precision: Precision,
    #[serde(skip_serializing_if = "Option::is_none")]
    kv_precision: Option<Precision>,
    gpu_memory_gib: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_gib: Option<f64>,
    per_gpu: MemoryBreakdown,
    #[serde(skip_serializing_if = "Option::is_none")]
    kv_cache_bytes_per_token: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kv_cache_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_len: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_concurrent_sequences: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trainable_params: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// The GPU and precisions named by the replica flags.
pub fn resolve_replica<'a>(
    catalog: &'a Catalog,
    args: &ReplicaArgs,
) -> CliResult<(&'a gpuplan_catalog::GpuSpec, Precision, Precision)> {
    let gpu = catalog
        .gpu(&args.gpu)
        .map_err(|e| CliError::bad(format!("--gpu: {e}")))?;
    let precision = precision_arg("--precision", &args.precision)?;
    let kv_precision = kv_precision_arg(args.kv_precision.as_deref(), precision)?;
    Ok((gpu, precision, kv_precision))
}

/// The replica as vLLM would serve it ([`check_replica`], the one
/// validation layer every verb asks); every violation is bad input, one per line.
pub fn check<'a>(
    catalog: &Catalog,
    spec: &ReplicaSpec<'a>,
    variant: Variant,
) -> CliResult<CheckedReplica<'a>> {
    check_replica(spec, catalog, variant).map_err(|violations| {
        let lines: Vec<String> = violations.iter().map(|v| v.to_string()).collect();
        CliError::bad(lines.join("\nerror: "))
    })
}

/// How `fit` and `estimate` name a replica's fields: the flags, with a TP
/// degree that `--count` implied named as such.
pub fn flag_spelling(args: &ReplicaArgs) -> Spelling {
    Spelling {
        tp: if args.tp.is_some() {
            "--tp"
        } else {
            "--tp (implied by --count / --pp)"
        },
        ..Spelling::FLAGS
    }
}

/// The replica layout from --count/--tp/--pp.
pub fn replica_layout(count: Option<u32>, tp: Option<u32>, pp: u32) -> CliResult<Layout> {
    if pp == 0 {
        return Err(CliError::bad("--pp 0: expected a whole number >= 1"));
    }
    let count = count.unwrap_or(tp.unwrap_or(1) * pp);
    let tp = tp.unwrap_or(count / pp);
    if tp == 0 || tp * pp != count {
        return Err(CliError::bad(format!(
            "--count {count}: an inference replica must have tp × pp = count GPUs (tp {tp}, pp {pp}); use --tp/--pp to split {count} GPUs"
        )));
    }
    Ok(Layout { tp, pp })
}

/// The KV precision flag, defaulting to FP8 with FP8/FP4 weights and BF16 otherwise.
pub fn kv_precision_arg(value: Option<&str>, weights: Precision) -> CliResult<Precision> {
    match value {
        Some(p) => precision_arg("--kv-precision", p),
        None => Ok(gpuplan_core::default_kv_precision(weights)),
    }
}

/// Parses a precision flag.
pub fn precision_arg(flag: &str, value: &str) -> CliResult<Precision> {
    value
        .parse::<Precision>()
        .map_err(|e| CliError::bad(format!("{flag}: {e}")))
}

/// The training job the `--training` flags describe, and the GPU count:
/// TP × PP × DP must equal --count (formed in u64: it can exceed u32).
pub fn training_input<'a>(
    model: &'a gpuplan_catalog::ModelArch,
    gpu: &'a gpuplan_catalog::GpuSpec,
    precision: Precision,
    replica: &ReplicaArgs,
    t: &TrainingArgs,
) -> CliResult<(TrainingMemoryInput<'a>, u32)> {
    let tp = replica.tp.unwrap_or(1);
    let pp = replica.pp;
    if pp == 0 {
        return Err(CliError::bad("--pp 0: expected a whole number >= 1"));
    }
    let dp = match (t.dp, replica.count) {
        (Some(dp), _) => dp,
        (None, Some(count)) => count / (tp * pp).max(1),
        (None, None) => 1,
    };
    let product = u64::from(tp) * u64::from(pp) * u64::from(dp);
    let count = match replica.count {
        Some(count) => count,
        None => u32::try_from(product)
            .ok()
            .filter(|c| limits::GPUS.contains(u64::from(*c)))
            .ok_or_else(|| {
                CliError::bad(format!(
                    "--tp {tp} --pp {pp} --dp {dp}: tp × pp × dp = {product} GPUs: expected {}",
                    limits::GPUS.describe()
                ))
            })?,
    };
    if dp == 0 || product != u64::from(count) {
        return Err(CliError::bad(format!(
            "--count {count}: must equal tp × pp × dp = {tp} × {pp} × {dp}"
        )));
    }
    if t.lora_rank == 0 {
        return Err(CliError::bad("--lora-rank 0: expected a whole number >= 1"));
    }
    let method = match t.method {
        MethodArg::Full => FineTuneMethod::Full,
        MethodArg::Lora => FineTuneMethod::Lora {
            rank: t.lora_rank,
            all_linear: !t.lora_attention_only,
        },
        MethodArg::Qlora => FineTuneMethod::Qlora {
            rank: t.lora_rank,
            all_linear: !t.lora_attention_only,
        },
    };
    let input = TrainingMemoryInput {
        model,
        gpu,
        layout: Layout { tp, pp },
        dp,
        zero: t.zero,
        micro_batch: t.micro_batch,
        seq_len: t.seq_len,
        micro_batches: t.micro_batches.unwrap_or(u64::from(pp)),
        schedule: PipelineSchedule::OneFOneB,
        recompute: match t.recompute {
            RecomputeArg::None => Recompute::None,
            RecomputeArg::Selective => Recompute::Selective,
            RecomputeArg::Full => Recompute::Full,
        },
        precision,
        method,
        optimizer: if t.adam_8bit {
            Optimizer::Adam8bit
        } else {
            Optimizer::Adam
        },
        fused_loss: t.fused_loss,
        async_tp: t.async_tp,
    };
    Ok((input, count))
}

pub fn run(catalog: &Catalog, cmd: FitCmd) -> CliResult {
    if let Some(m) = load::nonllm_model(&cmd.model)? {
        return super::fit_nonllm::run(catalog, &m, &cmd);
    }
    let model = load::model(catalog, &cmd.model)?;
    let (gpu, precision, kv_precision) = resolve_replica(catalog, &cmd.replica)?;
    if cmd.replica.pp == 0 {
        return Err(CliError::bad("--pp 0: expected a whole number >= 1"));
    }
    let report = if cmd.training {
        let (input, count) = training_input(&model, gpu, precision, &cmd.replica, &cmd.train)?;
        let (tp, dp) = (input.layout.tp, input.dp);
        let mem = training_memory(&input)?;
        FitReport {
            fits: mem.fits,
            mode: "training",
            model: model.id.clone(),
            gpu: gpu.name.clone(),
            gpu_count: count,
            tp,
            pp: cmd.replica.pp,
            dp: Some(dp),
            precision,
            kv_precision: None,
            gpu_memory_gib: mem.gpu_memory_gib,
            budget_gib: None,
            per_gpu: mem.per_gpu,
            kv_cache_bytes_per_token: None,
            kv_cache_tokens: None,
            context_len: None,
            max_concurrent_sequences: None,
            trainable_params: Some(mem.trainable_params),
            reason: mem.reason,
        }
    } else {
        let layout = replica_layout(cmd.replica.count, cmd.replica.tp, cmd.replica.pp)?;
        let (count, tp) = (layout.gpus(), layout.tp);
        let spec = ReplicaSpec {
            model: &model,
            gpu,
            precision,
            kv_precision,
            layout,
            limits: EngineLimits {
                memory_utilization: cmd.memory_utilization,
                max_batched_tokens: cmd.max_batched_tokens,
                ..EngineLimits::default()
            },
            context_len: cmd.context,
            spelling: flag_spelling(&cmd.replica),
        };
        let checked = check(catalog, &spec, cmd.replica.variant)?;
        let mem = inference_memory(&checked.memory_input())?;
        FitReport {
            fits: mem.fits,
            mode: "inference",
            model: model.id.clone(),
            gpu: gpu.name.clone(),
            gpu_count: count,
            tp,
            pp: cmd.replica.pp,
            dp: None,
            precision,
            kv_precision: Some(kv_precision),
            gpu_memory_gib: mem.gpu_memory_gib,
            budget_gib: Some(mem.budget_gib),
            per_gpu: mem.per_gpu,
            kv_cache_bytes_per_token: Some(mem.kv_cache_bytes_per_token),
            kv_cache_tokens: Some(mem.kv_cache_tokens),
            context_len: Some(cmd.context),
            max_concurrent_sequences: Some(mem.max_concurrent_sequences),
            trainable_params: None,
            reason: mem.reason,
        }
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

fn print_human(r: &FitReport) {
    let verdict = if r.fits { "FITS" } else { "DOES NOT FIT" };
    let split = match r.dp {
        Some(dp) => format!("TP{} × PP{} × DP{}", r.tp, r.pp, dp),
        None => format!("TP{} × PP{}", r.tp, r.pp),
    };
    println!(
        "{verdict}: {} ({}) on {} × {} [{split}], {} weights",
        r.model, r.mode, r.gpu_count, r.gpu, r.precision
    );
    let mut t = table(&["per GPU", "GiB"]);
    let b = &r.per_gpu;
    let mut rows = vec![("weights", b.weights_gib)];
    if r.mode == "inference" {
        rows.push(("activation workspace", b.activations_gib));
        rows.push(("runtime overhead", b.overhead_gib));
        rows.push(("KV cache (what is left)", b.kv_cache_gib));
    } else {
        rows.push(("gradients", b.gradients_gib));
        rows.push(("optimizer states", b.optimizer_gib));
        rows.push(("activations + loss", b.activations_gib));
        rows.push(("allocator + CUDA/NCCL", b.overhead_gib));
    }
    rows.push(("total", b.total_gib));
    for (k, v) in rows {
        t.add_row(vec![k.to_string(), format!("{v:.2}")]);
    }
    println!("{t}");
    match r.budget_gib {
        Some(budget) => println!(
            "GPU memory {:.1} GiB, engine budget {:.1} GiB.",
            r.gpu_memory_gib, budget
        ),
        None => println!("GPU memory {:.1} GiB.", r.gpu_memory_gib),
    }
    if let (Some(kv), Some(tokens), Some(ctx), Some(seqs)) = (
        r.kv_cache_bytes_per_token,
        r.kv_cache_tokens,
        r.context_len,
        r.max_concurrent_sequences,
    ) {
        println!(
            "KV cache: {:.0} KiB per token ({}), {tokens} tokens per replica = {seqs} concurrent sequences of {ctx} tokens.",
            kv / 1024.0,
            r.kv_precision.map(|p| p.to_string()).unwrap_or_default()
        );
    }
    if let Some(p) = r.trainable_params {
        println!("Trainable parameters: {:.3} B.", p as f64 / 1e9);
    }
    if let Some(reason) = &r.reason {
        println!("Why not: {reason}");
    }
}
