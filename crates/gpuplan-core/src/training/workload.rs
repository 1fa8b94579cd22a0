//! Training workload files (`kind = "training"`): the raw shape as written
//! (unknown fields are errors), then a validated [`TrainingWorkload`].
//! Every field and its default is documented in `docs/workload.md`.

use super::step::AttentionKernel;
use crate::error::{CoreError, Result};
use crate::limits::{self, Count, Span};
use crate::training_memory::{FineTuneMethod, Optimizer, Recompute};
use crate::workload::{
    validate_constraints, validate_pricing, Constraints, Pricing, RawConstraints, RawPricing,
};
use gpuplan_catalog::{Catalog, ModelArch, Precision};
use serde::{Deserialize, Serialize};

/// A training workload as written (TOML or JSON).
#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a training workload: kind, [model], [training] ..."
)]
pub struct RawTrainingWorkload {
    /// A name for reports.
    pub name: Option<String>,
    /// `training`.
    pub kind: String,
    /// Which model (`id` or `hf_config`).
    pub model: RawTrainingModel,
    /// What to train and how much.
    pub training: RawTraining,
    /// Deadline, budget and what to minimise.
    #[serde(default)]
    pub goals: RawGoals,
    /// Checkpoints.
    #[serde(default)]
    pub checkpoint: RawCheckpoint,
    /// Where the data set lives.
    #[serde(default)]
    pub data: RawData,
    /// Where and on what it may run (as for inference, plus max_gpus, max_nodes).
    #[serde(default)]
    pub constraints: RawConstraints,
    /// Discounts and spot assumptions.
    #[serde(default)]
    pub pricing: RawPricing,
}

/// `[model]` of a training workload.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table with id or hf_config")]
pub struct RawTrainingModel {
    /// Catalog id, alias, HF repo id or parametric GPT id.
    pub id: Option<String>,
    /// Path of a Hugging Face config.json (relative to the workload file).
    pub hf_config: Option<String>,
    /// The contents of a Hugging Face config.json, inline (what the HTTP
    /// server takes instead of a path).
    pub hf_config_inline: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `[training]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of training settings")]
pub struct RawTraining {
    /// `full` (default), `lora` or `qlora`.
    pub method: Option<String>,
    /// LoRA/QLoRA rank (default 16).
    pub lora_rank: Option<u64>,
    /// `all` linear layers (default) or `attention` only.
    pub lora_targets: Option<String>,
    /// Tokens to process (or dataset_tokens × epochs, or steps).
    pub tokens: Option<f64>,
    /// Tokens in the data set (with epochs).
    pub dataset_tokens: Option<f64>,
    /// Passes over the data set (default 1).
    pub epochs: Option<f64>,
    /// Optimizer steps (with the global batch).
    pub steps: Option<u64>,
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Sequences per optimizer step (or global_batch_tokens).
    pub global_batch: Option<u64>,
    /// Tokens per optimizer step.
    pub global_batch_tokens: Option<u64>,
    /// `adamw` (default) or `adamw-8bit`.
    pub optimizer: Option<String>,
    /// `bf16` (default), `fp8`, or `choose`.
    pub precision: Option<String>,
    /// `choose` (default), `none`, `selective` or `full`.
    pub recompute: Option<String>,
    /// `torchtitan` (default) or `megatron`.
    pub framework: Option<String>,
}

/// `[goals]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of goals")]
pub struct RawGoals {
    /// Finish within this many hours (expected wall time).
    pub deadline_hours: Option<f64>,
    /// Spend at most this many USD in total.
    pub max_usd: Option<f64>,
    /// `cost` (default) or `time`.
    pub objective: Option<String>,
}

/// `[checkpoint]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of checkpoint settings")]
pub struct RawCheckpoint {
    /// Checkpoint size, GB (default: weights + optimizer states of the method).
    pub size_gb: Option<f64>,
    /// Storage write bandwidth per node, Gb/s (default 10).
    pub write_gbits_per_node: Option<f64>,
    /// Fixed checkpoint interval, minutes (default: Young/Daly).
    pub interval_minutes: Option<f64>,
}

/// `[data]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table describing the data set")]
pub struct RawData {
    /// Size of the data set to move, GB.
    pub size_gb: Option<f64>,
    /// Provider where it lives.
    pub provider: Option<String>,
    /// Region where it lives.
    pub region: Option<String>,
    /// Transfer bandwidth when it must move, Gb/s (default 10).
    pub transfer_gbits: Option<f64>,
}

/// Which framework runs the job, and what that implies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    /// torchtitan: FSDP2 + TP + PP, torch.compile, SDPA attention, Float8 via torchao.
    Torchtitan,
    /// Megatron-LM / Megatron-Core: distributed optimizer, TE fused kernels and cuDNN attention.
    Megatron,
}

impl Framework {
    /// The kernels this framework runs.
    pub fn attention_kernel(self) -> AttentionKernel {
        match self {
            Framework::Torchtitan => AttentionKernel::Sdpa,
            Framework::Megatron => AttentionKernel::Cudnn,
        }
    }
}

/// Where the data set lives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataLocation {
    /// GB to move.
    pub size_gb: f64,
    /// Provider.
    pub provider: String,
    /// Region (None = anywhere in the provider).
    pub region: Option<String>,
    /// Transfer bandwidth, Gb/s.
    pub transfer_gbits: f64,
}

/// A validated training workload.
#[derive(Debug, Clone)]
pub struct TrainingWorkload {
    /// Name for reports.
    pub name: String,
    /// The model.
    pub model: ModelArch,
    /// Full, LoRA, QLoRA.
    pub method: FineTuneMethod,
    /// Tokens to process.
    pub tokens: f64,
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Sequences per step.
    pub global_batch: u64,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// Precisions to consider.
    pub precisions: Vec<Precision>,
    /// Recomputation policies to consider.
    pub recompute: Vec<Recompute>,
    /// Framework.
    pub framework: Framework,
    /// Deadline, hours.
    pub deadline_hours: Option<f64>,
    /// Budget, USD.
    pub max_usd: Option<f64>,
    /// Minimise time instead of cost.
    pub minimise_time: bool,
    /// Checkpoint size override, GB.
    pub checkpoint_gb: Option<f64>,
    /// Checkpoint write bandwidth per node, Gb/s.
    pub checkpoint_write_gbits: f64,
    /// Fixed checkpoint interval, minutes.
    pub checkpoint_interval_min: Option<f64>,
    /// Where the data lives (None = next to the GPUs).
    pub data: Option<DataLocation>,
    /// Constraints (inference fields that do not apply are ignored).
    pub constraints: Constraints,
    /// Most GPUs.
    pub max_gpus: u64,
    /// Most nodes.
    pub max_nodes: u64,
    /// Pricing assumptions.
    pub pricing: Pricing,
}

/// Default storage write bandwidth per node for checkpoints, Gb/s: a node
/// writing to object storage or a network file system over a 10 Gb/s share.
pub const DEFAULT_CHECKPOINT_WRITE_GBITS: f64 = 10.0;
/// Default bandwidth for moving a data set between regions, Gb/s.
pub const DEFAULT_TRANSFER_GBITS: f64 = 10.0;
/// Default largest job, GPUs.
pub const DEFAULT_MAX_GPUS: u64 = 512;

const TOKENS: Span = Span::above(0.0, 1e16);
const HOURS: Span = Span::above(0.0, 1e6);
const USD: Span = Span::above(0.0, 1e10);
const GB: Span = Span::above(0.0, 1e9);
const GBITS: Span = Span::above(0.0, 1e5);
const MINUTES: Span = Span::above(0.0, 1e6);
const STEPS: Count = Count::new(1, 1 << 40);

fn within(field: &str, v: f64, range: Span) -> Result<f64> {
    if range.contains(v) {
        Ok(v)
    } else {
        Err(CoreError::invalid(field, v.to_string(), range.describe()))
    }
}

fn count(field: &str, v: u64, range: Count) -> Result<u64> {
    if range.contains(v) {
        Ok(v)
    } else {
        Err(CoreError::invalid(field, v.to_string(), range.describe()))
    }
}

impl RawTrainingWorkload {
    /// Validates against the catalog; `hf_model` is the model read from
    /// `model.hf_config` by the caller (the core does no I/O).
    pub fn validate(
        self,
        catalog: &Catalog,
        hf_model: Option<ModelArch>,
    ) -> Result<TrainingWorkload> {
        if self.kind != "training" {
            return Err(CoreError::invalid("kind", &self.kind, "\"training\""));
        }
        let model = training_model(catalog, hf_model, self.model.id.as_deref())?;
        let t = &self.training;
        let method = method(t)?;
        let seq_len = seq_len(t, &model)?;
        let global_batch = global_batch(t, seq_len)?;
        let tokens = tokens_to_process(t, global_batch, seq_len)?;
        let (optimizer, precisions, recompute, framework) = choices(t)?;
        let (deadline_hours, max_usd, minimise_time) = goals(&self.goals)?;
        let (checkpoint_gb, checkpoint_write_gbits, checkpoint_interval_min) =
            checkpoint_settings(&self.checkpoint)?;
        let data = data_location(&self.data, catalog)?;
        let constraints = validate_constraints(&self.constraints, catalog)?;
        let max_gpus = count(
            "constraints.max_gpus",
            self.constraints.max_gpus.unwrap_or(DEFAULT_MAX_GPUS),
            limits::GPUS,
        )?;
        let max_nodes = count(
            "constraints.max_nodes",
            self.constraints.max_nodes.unwrap_or(max_gpus),
            limits::GPUS,
        )?;
        let pricing = validate_pricing(&self.pricing, catalog)?;
        Ok(TrainingWorkload {
            name: self.name.unwrap_or_else(|| model.id.clone()),
            model,
            method,
            tokens,
            seq_len,
            global_batch,
            optimizer,
            precisions,
            recompute,
            framework,
            deadline_hours,
            max_usd,
            minimise_time,
            checkpoint_gb,
            checkpoint_write_gbits,
            checkpoint_interval_min,
            data,
            constraints,
            max_gpus,
            max_nodes,
            pricing,
        })
    }
}

/// The model trained: the one read from `model.hf_config`, else the
/// catalog's `model.id`.
fn training_model(
    catalog: &Catalog,
    hf_model: Option<ModelArch>,
    id: Option<&str>,
) -> Result<ModelArch> {
    match (hf_model, id) {
        (Some(m), _) => Ok(m),
        (None, Some(id)) => catalog
            .model(id)
            .map_err(|e| CoreError::invalid("model.id", id, e.to_string())),
        (None, None) => Err(CoreError::invalid(
            "model",
            "(neither id nor hf_config)",
            "model.id = \"llama-3.1-8b\" or model.hf_config = \"config.json\"",
        )),
    }
}

/// `training.seq_len`, at most the model's positions.
fn seq_len(t: &RawTraining, model: &ModelArch) -> Result<u64> {
    let seq_len = count("training.seq_len", t.seq_len, limits::SEQUENCE_TOKENS)?;
    if seq_len > model.max_position_embeddings {
        return Err(CoreError::invalid(
            "training.seq_len",
            seq_len.to_string(),
            format!(
                "at most the model's {} positions",
                model.max_position_embeddings
            ),
        ));
    }
    Ok(seq_len)
}

/// Sequences per step: `global_batch`, or `global_batch_tokens` over the
/// sequence length (at least one); exactly one of the two.
fn global_batch(t: &RawTraining, seq_len: u64) -> Result<u64> {
    match (t.global_batch, t.global_batch_tokens) {
        (Some(b), None) => count("training.global_batch", b, limits::SEQUENCES),
        (None, Some(tok)) => count(
            "training.global_batch_tokens",
            (tok / seq_len).max(1),
            limits::SEQUENCES,
        ),
        _ => Err(CoreError::invalid(
            "training.global_batch",
            "(both or neither of global_batch and global_batch_tokens)",
            "one of global_batch (sequences per step) or global_batch_tokens",
        )),
    }
}

/// Optimizer, precisions, recomputation policies and framework.
type Choices = (Optimizer, Vec<Precision>, Vec<Recompute>, Framework);

fn choices(t: &RawTraining) -> Result<Choices> {
    let optimizer = pick(
        "training.optimizer",
        t.optimizer.as_deref(),
        "adamw",
        &[
            (&["adamw", "adam"], Optimizer::Adam),
            (
                &["adamw-8bit", "adam8bit", "adamw8bit"],
                Optimizer::Adam8bit,
            ),
        ],
    )?;
    let precisions = pick(
        "training.precision",
        t.precision.as_deref(),
        "bf16",
        &[
            (&["bf16"], vec![Precision::Bf16]),
            (&["fp8"], vec![Precision::Fp8]),
            (&["choose"], vec![Precision::Bf16, Precision::Fp8]),
        ],
    )?;
    let recompute = pick(
        "training.recompute",
        t.recompute.as_deref(),
        "choose",
        &[
            (
                &["choose"],
                vec![Recompute::None, Recompute::Selective, Recompute::Full],
            ),
            (&["none"], vec![Recompute::None]),
            (&["selective"], vec![Recompute::Selective]),
            (&["full"], vec![Recompute::Full]),
        ],
    )?;
    let framework = pick(
        "training.framework",
        t.framework.as_deref(),
        "torchtitan",
        &[
            (&["torchtitan"], Framework::Torchtitan),
            (&["megatron", "megatron-lm"], Framework::Megatron),
        ],
    )?;
    Ok((optimizer, precisions, recompute, framework))
}

/// Deadline (hours), budget (USD) and whether to minimise time.
fn goals(g: &RawGoals) -> Result<(Option<f64>, Option<f64>, bool)> {
    let minimise_time = pick(
        "goals.objective",
        g.objective.as_deref(),
        "cost",
        &[(&["cost"], false), (&["time"], true)],
    )?;
    let deadline_hours = g
        .deadline_hours
        .map(|v| within("goals.deadline_hours", v, HOURS))
        .transpose()?;
    let max_usd = g
        .max_usd
        .map(|v| within("goals.max_usd", v, USD))
        .transpose()?;
    Ok((deadline_hours, max_usd, minimise_time))
}

/// Checkpoint size override (GB), write bandwidth per node (Gb/s), fixed interval (minutes).
fn checkpoint_settings(c: &RawCheckpoint) -> Result<(Option<f64>, f64, Option<f64>)> {
    let checkpoint_gb = c
        .size_gb
        .map(|v| within("checkpoint.size_gb", v, GB))
        .transpose()?;
    let checkpoint_write_gbits = within(
        "checkpoint.write_gbits_per_node",
        c.write_gbits_per_node
            .unwrap_or(DEFAULT_CHECKPOINT_WRITE_GBITS),
        GBITS,
    )?;
    let checkpoint_interval_min = c
        .interval_minutes
        .map(|v| within("checkpoint.interval_minutes", v, MINUTES))
        .transpose()?;
    Ok((
        checkpoint_gb,
        checkpoint_write_gbits,
        checkpoint_interval_min,
    ))
}

/// The value of a named choice: `value` (or `default`) must be one of the
/// spellings in `options`; the error lists the first spelling of each.
fn pick<T: Clone>(
    field: &str,
    value: Option<&str>,
    default: &str,
    options: &[(&[&str], T)],
) -> Result<T> {
    let value = value.unwrap_or(default);
    options
        .iter()
        .find(|(names, _)| names.contains(&value))
        .map(|(_, v)| v.clone())
        .ok_or_else(|| {
            let names: Vec<String> = options
                .iter()
                .map(|(n, _)| format!("\"{}\"", n[0]))
                .collect();
            CoreError::invalid(field, value, format!("one of {}", names.join(", ")))
        })
}

fn method(t: &RawTraining) -> Result<FineTuneMethod> {
    let rank = count(
        "training.lora_rank",
        t.lora_rank.unwrap_or(16),
        limits::LORA_RANK,
    )?;
    let all_linear = match t.lora_targets.as_deref().unwrap_or("all") {
        "all" => true,
        "attention" => false,
        other => {
            return Err(CoreError::invalid(
                "training.lora_targets",
                other,
                "\"all\" (every linear layer) or \"attention\" (q, k, v, o)",
            ))
        }
    };
    match t.method.as_deref().unwrap_or("full") {
        "full" => Ok(FineTuneMethod::Full),
        "lora" => Ok(FineTuneMethod::Lora { rank, all_linear }),
        "qlora" => Ok(FineTuneMethod::Qlora { rank, all_linear }),
        other => Err(CoreError::invalid(
            "training.method",
            other,
            "\"full\", \"lora\" or \"qlora\"",
        )),
    }
}

/// Tokens to process: `tokens`, or `dataset_tokens × epochs`, or `steps ×
/// global batch × seq_len` — exactly one.
fn tokens_to_process(t: &RawTraining, global_batch: u64, seq_len: u64) -> Result<f64> {
    match (t.tokens, t.dataset_tokens, t.steps) {
        (Some(tokens), None, None) => within("training.tokens", tokens, TOKENS),
        (None, Some(ds), None) => {
            let ds = within("training.dataset_tokens", ds, TOKENS)?;
            let epochs = within(
                "training.epochs",
                t.epochs.unwrap_or(1.0),
                Span::above(0.0, 1e6),
            )?;
            within("training.dataset_tokens × epochs", ds * epochs, TOKENS)
        }
        (None, None, Some(steps)) => {
            let steps = count("training.steps", steps, STEPS)?;
            within(
                "training.steps",
                steps as f64 * global_batch as f64 * seq_len as f64,
                TOKENS,
            )
        }
        _ => Err(CoreError::invalid(
            "training.tokens",
            "(none or several of tokens, dataset_tokens, steps)",
            "exactly one of tokens, dataset_tokens (with epochs) or steps",
        )),
    }
}

fn data_location(d: &RawData, catalog: &Catalog) -> Result<Option<DataLocation>> {
    let Some(size) = d.size_gb else {
        if d.provider.is_some() || d.region.is_some() {
            return Err(CoreError::invalid(
                "data.size_gb",
                "(missing)",
                "the data set size in GB when data.provider or data.region is given",
            ));
        }
        return Ok(None);
    };
    let size_gb = within("data.size_gb", size, GB)?;
    let provider = d
        .provider
        .as_deref()
        .ok_or_else(|| {
            CoreError::invalid(
                "data.provider",
                "(missing)",
                "the provider holding the data, e.g. \"aws\"",
            )
        })?
        .to_ascii_lowercase();
    if !catalog.providers().contains(&provider) {
        return Err(CoreError::invalid(
            "data.provider",
            &provider,
            format!("one of {}", catalog.providers().join(", ")),
        ));
    }
    if let Some(r) = &d.region {
        if !catalog
            .offerings()
            .iter()
            .any(|o| o.provider == provider && &o.region == r)
            && !catalog
                .regions()
                .iter()
                .any(|x| x.provider == provider && &x.region == r)
        {
            return Err(CoreError::invalid(
                "data.region",
                r,
                format!("a region of {provider} in the catalog"),
            ));
        }
    }
    Ok(Some(DataLocation {
        size_gb,
        provider,
        region: d.region.clone(),
        transfer_gbits: within(
            "data.transfer_gbits",
            d.transfer_gbits.unwrap_or(DEFAULT_TRANSFER_GBITS),
            GBITS,
        )?,
    }))
}
