//! `gpuplan fit`: does a model fit, and how is each GPU's memory used.

use super::{check_finite, print_json, table};
use crate::cli::{FitCmd, MethodArg, RecomputeArg, ReplicaArgs, TrainingArgs};
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_app::{
    FieldNames, FitReport, FitRequest, Method, RecomputeRequest, ReplicaRequest, TrainingRequest,
};
use gpuplan_catalog::{Catalog, Precision, Variant};
use gpuplan_core::{CheckedReplica, Layout, ReplicaSpec, Spelling, TrainingMemoryInput};

/// The façade's replica request from the flags.
pub fn replica_request(args: &ReplicaArgs) -> ReplicaRequest {
    ReplicaRequest {
        gpu: args.gpu.clone(),
        count: args.count,
        tp: args.tp,
        pp: args.pp,
        precision: args.precision.clone(),
        kv_precision: args.kv_precision.clone(),
        variant: args.variant,
        engine: args.engine,
    }
}

/// The façade's training request from the flags.
pub fn training_request(t: &TrainingArgs) -> TrainingRequest {
    TrainingRequest {
        dp: t.dp,
        zero: t.zero,
        micro_batch: t.micro_batch,
        micro_batches: t.micro_batches,
        seq_len: t.seq_len,
        recompute: match t.recompute {
            RecomputeArg::None => RecomputeRequest::None,
            RecomputeArg::Selective => RecomputeRequest::Selective,
            RecomputeArg::Full => RecomputeRequest::Full,
        },
        method: match t.method {
            MethodArg::Full => Method::Full,
            MethodArg::Lora => Method::Lora,
            MethodArg::Qlora => Method::Qlora,
        },
        lora_rank: t.lora_rank,
        lora_attention_only: t.lora_attention_only,
        adam_8bit: t.adam_8bit,
        fused_loss: t.fused_loss,
        async_tp: t.async_tp,
    }
}

/// The GPU and precisions named by the replica flags.
pub fn resolve_replica<'a>(
    catalog: &'a Catalog,
    args: &ReplicaArgs,
) -> CliResult<(&'a gpuplan_catalog::GpuSpec, Precision, Precision)> {
    Ok(replica_request(args).resolve(catalog, &FieldNames::FLAGS)?)
}

/// The replica as vLLM would serve it (the one validation layer every verb asks).
pub fn check<'a>(
    catalog: &Catalog,
    spec: &ReplicaSpec<'a>,
    variant: Variant,
) -> CliResult<CheckedReplica<'a>> {
    Ok(gpuplan_app::check(catalog, spec, variant)?)
}

/// How `fit` and `estimate` name a replica's fields: the flags, with a TP
/// degree that `--count` implied named as such.
pub fn flag_spelling(args: &ReplicaArgs) -> Spelling {
    replica_request(args).spelling(&FieldNames::FLAGS)
}

/// The replica layout from --count/--tp/--pp.
pub fn replica_layout(count: Option<u32>, tp: Option<u32>, pp: u32) -> CliResult<Layout> {
    let request = ReplicaRequest {
        gpu: String::new(),
        count,
        tp,
        pp,
        precision: String::new(),
        kv_precision: None,
        variant: Variant::default(),
        engine: gpuplan_core::Engine::Vllm,
    };
    Ok(request.inference_layout(&FieldNames::FLAGS)?)
}

/// Parses a precision flag.
pub fn precision_arg(flag: &str, value: &str) -> CliResult<Precision> {
    Ok(gpuplan_app::parse_precision(flag, value)?)
}

/// The training job the `--training` flags describe, and the GPU count.
pub fn training_input<'a>(
    model: &'a gpuplan_catalog::ModelArch,
    gpu: &'a gpuplan_catalog::GpuSpec,
    precision: Precision,
    replica: &ReplicaArgs,
    t: &TrainingArgs,
) -> CliResult<(TrainingMemoryInput<'a>, u32)> {
    Ok(gpuplan_app::training_input(
        model,
        gpu,
        precision,
        &replica_request(replica),
        &training_request(t),
        &FieldNames::FLAGS,
    )?)
}

pub fn run(catalog: &Catalog, cmd: FitCmd) -> CliResult {
    if let Some(m) = load::nonllm_model(&cmd.model)? {
        return super::fit_nonllm::run(catalog, &m, &cmd);
    }
    let model = load::model(catalog, &cmd.model)?;
    let model_request = gpuplan_app::ModelRequest {
        id: Some(model.id.clone()),
        hf_config_inline: None,
    };
    let request = FitRequest {
        model: model_request,
        replica: replica_request(&cmd.replica),
        context: cmd.context,
        memory_utilization: cmd.memory_utilization,
        max_batched_tokens: cmd.max_batched_tokens,
        training: cmd.training.then(|| training_request(&cmd.train)),
    };
    let report = gpuplan_app::run_fit(catalog, Some(&model), &request, &FieldNames::FLAGS)?;
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
