//! `fit`: does a model fit, and how is each GPU's memory used — for serving
//! or for training.

use crate::error::{AppError, AppResult};
use crate::replica::{check, check_count, check_span, FieldNames, ModelRequest, ReplicaRequest};
use gpuplan_catalog::{Catalog, GpuSpec, ModelArch, Precision};
use gpuplan_core::{
    inference_memory, limits, training_memory, EngineLimits, FineTuneMethod, Layout,
    MemoryBreakdown, Optimizer, PipelineSchedule, Recompute, ReplicaSpec, TrainingMemoryInput,
};
use serde::{Deserialize, Serialize};

/// The `fit --json` document (field names are a contract).
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    pub fits: bool,
    pub mode: &'static str,
    pub model: String,
    pub gpu: String,
    pub gpu_count: u32,
    pub tp: u32,
    pub pp: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dp: Option<u32>,
    pub precision: Precision,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_precision: Option<Precision>,
    pub gpu_memory_gib: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_gib: Option<f64>,
    pub per_gpu: MemoryBreakdown,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_bytes_per_token: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_len: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent_sequences: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trainable_params: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Fine-tuning method of a training fit.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Every weight trained.
    #[default]
    Full,
    /// Low-rank adapters on a frozen base.
    Lora,
    /// LoRA on a 4-bit base.
    Qlora,
}

/// Activation recomputation of a training fit.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RecomputeRequest {
    /// Keep every activation.
    #[default]
    None,
    /// Recompute attention internals.
    Selective,
    /// Recompute each layer in the backward pass.
    Full,
}

fn one() -> u64 {
    1
}
fn default_seq_len() -> u64 {
    4096
}
fn default_lora_rank() -> u64 {
    16
}

/// The training job of `fit --training` / `estimate --training`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingRequest {
    /// Data-parallel degree (default count / (tp × pp), or 1).
    pub dp: Option<u32>,
    /// ZeRO stage 0–3 (3 = FSDP).
    #[serde(default)]
    pub zero: u8,
    /// Sequences per micro-batch per GPU.
    #[serde(default = "one")]
    pub micro_batch: u64,
    /// Micro-batches per step (default pp).
    pub micro_batches: Option<u64>,
    /// Sequence length.
    #[serde(default = "default_seq_len")]
    pub seq_len: u64,
    /// Activation recomputation.
    #[serde(default)]
    pub recompute: RecomputeRequest,
    /// Full, LoRA or QLoRA.
    #[serde(default)]
    pub method: Method,
    /// LoRA rank.
    #[serde(default = "default_lora_rank")]
    pub lora_rank: u64,
    /// Adapt attention matrices only.
    #[serde(default)]
    pub lora_attention_only: bool,
    /// 8-bit Adam states.
    #[serde(default)]
    pub adam_8bit: bool,
    /// Fused cross-entropy.
    #[serde(default)]
    pub fused_loss: bool,
    /// Asynchronous TP workspace.
    #[serde(default)]
    pub async_tp: bool,
}

impl Default for TrainingRequest {
    fn default() -> Self {
        TrainingRequest {
            dp: None,
            zero: 0,
            micro_batch: 1,
            micro_batches: None,
            seq_len: default_seq_len(),
            recompute: RecomputeRequest::None,
            method: Method::Full,
            lora_rank: default_lora_rank(),
            lora_attention_only: false,
            adam_8bit: false,
            fused_loss: false,
            async_tp: false,
        }
    }
}

fn default_context() -> u64 {
    2048
}
fn default_memory_utilization() -> f64 {
    gpuplan_core::DEFAULT_MEMORY_UTILIZATION
}
fn default_max_batched_tokens() -> u64 {
    gpuplan_core::DEFAULT_MAX_BATCHED_TOKENS
}

/// What `fit` takes besides the model.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitRequest {
    /// The model (the CLI passes a model read from `--hf-config` instead).
    #[serde(default)]
    pub model: ModelRequest,
    /// GPU, split and precision.
    pub replica: ReplicaRequest,
    /// Context length (prompt + output) each sequence needs (inference).
    #[serde(default = "default_context")]
    pub context: u64,
    /// Engine memory utilisation cap (inference).
    #[serde(default = "default_memory_utilization")]
    pub memory_utilization: f64,
    /// Engine tokens per iteration (inference).
    #[serde(default = "default_max_batched_tokens")]
    pub max_batched_tokens: u64,
    /// A training job instead of serving.
    pub training: Option<TrainingRequest>,
}

/// Does the model fit? `Ok` either way; the report says. `model`
/// overrides the request's (the CLI's `--hf-config`).
pub fn run_fit(
    catalog: &Catalog,
    model: Option<&ModelArch>,
    req: &FitRequest,
    names: &FieldNames,
) -> AppResult<FitReport> {
    req.replica.check_ranges(names)?;
    let resolved;
    let model = match model {
        Some(m) => m,
        None => {
            resolved = req.model.resolve(catalog, names)?;
            &resolved
        }
    };
    let (gpu, precision, kv_precision) = req.replica.resolve(catalog, names)?;
    match &req.training {
        Some(t) => fit_training(model, gpu, precision, &req.replica, t, names),
        None => fit_inference(catalog, model, gpu, (precision, kv_precision), req, names),
    }
}

fn fit_inference(
    catalog: &Catalog,
    model: &ModelArch,
    gpu: &GpuSpec,
    (precision, kv_precision): (Precision, Precision),
    req: &FitRequest,
    names: &FieldNames,
) -> AppResult<FitReport> {
    let r = &names.replica;
    check_count(r.context, req.context, limits::SEQUENCE_TOKENS)?;
    check_span(
        r.memory_utilization,
        req.memory_utilization,
        limits::MEMORY_UTILIZATION,
    )?;
    check_count(
        r.max_batched_tokens,
        req.max_batched_tokens,
        limits::MAX_BATCHED_TOKENS,
    )?;
    let layout = req.replica.inference_layout(names)?;
    let spec = ReplicaSpec {
        model,
        gpu,
        precision,
        kv_precision,
        layout,
        limits: EngineLimits {
            memory_utilization: req.memory_utilization,
            max_batched_tokens: req.max_batched_tokens,
            ..EngineLimits::default()
        },
        context_len: req.context,
        engine: req.replica.engine,
        spelling: req.replica.spelling(names),
    };
    let checked = check(catalog, &spec, req.replica.variant)?;
    let mem = inference_memory(&checked.memory_input())?;
    Ok(FitReport {
        fits: mem.fits,
        mode: "inference",
        model: model.id.clone(),
        gpu: gpu.name.clone(),
        gpu_count: layout.gpus(),
        tp: layout.tp,
        pp: layout.pp,
        dp: None,
        precision,
        kv_precision: Some(kv_precision),
        gpu_memory_gib: mem.gpu_memory_gib,
        budget_gib: Some(mem.budget_gib),
        per_gpu: mem.per_gpu,
        kv_cache_bytes_per_token: Some(mem.kv_cache_bytes_per_token),
        kv_cache_tokens: Some(mem.kv_cache_tokens),
        context_len: Some(req.context),
        max_concurrent_sequences: Some(mem.max_concurrent_sequences),
        trainable_params: None,
        reason: mem.reason,
    })
}

fn fit_training(
    model: &ModelArch,
    gpu: &GpuSpec,
    precision: Precision,
    replica: &ReplicaRequest,
    t: &TrainingRequest,
    names: &FieldNames,
) -> AppResult<FitReport> {
    let (input, count) = training_input(model, gpu, precision, replica, t, names)?;
    let (tp, dp) = (input.layout.tp, input.dp);
    let mem = training_memory(&input)?;
    Ok(FitReport {
        fits: mem.fits,
        mode: "training",
        model: model.id.clone(),
        gpu: gpu.name.clone(),
        gpu_count: count,
        tp,
        pp: replica.pp,
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
    })
}

/// Range checks of a training request's numbers.
fn check_training_ranges(t: &TrainingRequest, dash: bool) -> AppResult<()> {
    let name = |flag: &'static str, field: &'static str| if dash { flag } else { field };
    if let Some(dp) = t.dp {
        check_count(name("--dp", "training.dp"), dp.into(), limits::DP)?;
    }
    check_count(
        name("--zero", "training.zero"),
        t.zero.into(),
        limits::ZERO_STAGE,
    )?;
    check_count(
        name("--micro-batch", "training.micro_batch"),
        t.micro_batch,
        limits::MICRO_BATCH,
    )?;
    if let Some(m) = t.micro_batches {
        check_count(
            name("--micro-batches", "training.micro_batches"),
            m,
            limits::MICRO_BATCHES,
        )?;
    }
    check_count(
        name("--seq-len", "training.seq_len"),
        t.seq_len,
        limits::SEQUENCE_TOKENS,
    )?;
    check_count(
        name("--lora-rank", "training.lora_rank"),
        t.lora_rank,
        limits::LORA_RANK,
    )
}

/// The training job a request describes, and the GPU count: TP × PP × DP
/// must equal the count (formed in u64: it can exceed u32).
pub fn training_input<'a>(
    model: &'a ModelArch,
    gpu: &'a GpuSpec,
    precision: Precision,
    replica: &ReplicaRequest,
    t: &TrainingRequest,
    names: &FieldNames,
) -> AppResult<(TrainingMemoryInput<'a>, u32)> {
    let dash = names.count.starts_with("--");
    check_training_ranges(t, dash)?;
    let (tp, pp) = (replica.tp.unwrap_or(1), replica.pp);
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
                let (tp_name, pp_name, dp_name) = if dash {
                    ("--tp", "--pp", "--dp")
                } else {
                    ("tp", "pp", "training.dp")
                };
                AppError::bad_field(
                    names.count,
                    format!(
                        "{tp_name} {tp} {pp_name} {pp} {dp_name} {dp}: tp × pp × dp = {product} GPUs: expected {}",
                        limits::GPUS.describe()
                    ),
                )
            })?,
    };
    if dp == 0 || product != u64::from(count) {
        return Err(AppError::bad_field(
            names.count,
            format!(
                "{} {count}: must equal tp × pp × dp = {tp} × {pp} × {dp}",
                names.count
            ),
        ));
    }
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
            RecomputeRequest::None => Recompute::None,
            RecomputeRequest::Selective => Recompute::Selective,
            RecomputeRequest::Full => Recompute::Full,
        },
        precision,
        method: method(t),
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

fn method(t: &TrainingRequest) -> FineTuneMethod {
    match t.method {
        Method::Full => FineTuneMethod::Full,
        Method::Lora => FineTuneMethod::Lora {
            rank: t.lora_rank,
            all_linear: !t.lora_attention_only,
        },
        Method::Qlora => FineTuneMethod::Qlora {
            rank: t.lora_rank,
            all_linear: !t.lora_attention_only,
        },
    }
}
