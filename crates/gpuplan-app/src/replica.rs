//! One replica's GPU, split and precision as `fit` and `estimate` take it,
//! checked by the same validation layer every verb asks.

use crate::error::{AppError, AppResult};
use gpuplan_catalog::{Catalog, GpuSpec, ModelArch, Precision, Variant};
use gpuplan_core::limits::{self, Count, Span};
use gpuplan_core::{check_replica, CheckedReplica, Engine, Layout, ReplicaSpec, Spelling};
use serde::Deserialize;

/// How a front end names the request's fields in errors: the CLI's flags or
/// the API's JSON fields.
#[derive(Debug, Clone, Copy)]
pub struct FieldNames {
    /// The replica fields shared with the core's validation layer.
    pub replica: Spelling,
    /// The total GPU count.
    pub count: &'static str,
    /// Prompt tokens per request.
    pub input_len: &'static str,
    /// Output tokens per request.
    pub output_len: &'static str,
    /// Sequences in flight.
    pub concurrency: &'static str,
    /// The model.
    pub model: &'static str,
    /// Beams per request.
    pub beam_width: &'static str,
}

impl FieldNames {
    /// `gpuplan fit` / `estimate` flags.
    pub const FLAGS: FieldNames = FieldNames {
        replica: Spelling::FLAGS,
        count: "--count",
        input_len: "--input-len",
        output_len: "--output-len",
        concurrency: "--concurrency",
        model: "--model",
        beam_width: "--beam",
    };
    /// The JSON fields of `/v1/estimate` and `/v1/fit`.
    pub const API: FieldNames = FieldNames {
        replica: Spelling {
            gpu: "replica.gpu",
            precision: "replica.precision",
            kv_precision: "replica.kv_precision",
            tp: "replica.tp",
            pp: "replica.pp",
            context: "context",
            max_num_seqs: "max_num_seqs",
            max_batched_tokens: "max_batched_tokens",
            memory_utilization: "memory_utilization",
            engine: "replica.engine",
        },
        count: "replica.count",
        input_len: "input_len",
        output_len: "output_len",
        concurrency: "concurrency",
        model: "model.id",
        beam_width: "beam_width",
    };
}

/// The model of a request: a catalog id or an inline HF config.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRequest {
    /// Catalog id, alias, HF repo id, or `gpt-h<hidden>-l<layers>-a<heads>`.
    pub id: Option<String>,
    /// The contents of a Hugging Face config.json (instead of `model`, or
    /// with it as the id).
    pub hf_config_inline: Option<serde_json::Map<String, serde_json::Value>>,
}

impl ModelRequest {
    /// The model the request names.
    pub fn resolve(&self, catalog: &Catalog, names: &FieldNames) -> AppResult<ModelArch> {
        match (&self.id, &self.hf_config_inline) {
            (id, Some(config)) => {
                let text = serde_json::Value::Object(config.clone()).to_string();
                let id = id.as_deref().unwrap_or("hf-model");
                Ok(gpuplan_catalog::import_hf_config(
                    "model.hf_config_inline",
                    &text,
                    id,
                )?)
            }
            (Some(name), None) => catalog
                .model(name)
                .map_err(|e| AppError::bad_field(names.model, format!("{}: {e}", names.model))),
            (None, None) => Err(AppError::bad_field(
                names.model,
                format!(
                    "{} is required (or {})",
                    names.model,
                    if names.model.starts_with("--") {
                        "--hf-config"
                    } else {
                        "model.hf_config_inline"
                    }
                ),
            )),
        }
    }
}

fn default_pp() -> u32 {
    1
}
fn default_precision() -> String {
    "bf16".into()
}

/// GPU, split and precision of a replica.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaRequest {
    /// GPU name or alias.
    pub gpu: String,
    /// GPUs in total (default tp × pp).
    pub count: Option<u32>,
    /// Tensor-parallel degree (default: count / pp).
    pub tp: Option<u32>,
    /// Pipeline-parallel degree.
    #[serde(default = "default_pp")]
    pub pp: u32,
    /// Weight precision.
    #[serde(default = "default_precision")]
    pub precision: String,
    /// KV-cache precision (default: fp8 with fp8/fp4 weights, else bf16).
    pub kv_precision: Option<String>,
    /// Which release is served: instruct or base.
    #[serde(default)]
    pub variant: Variant,
    /// The serving engine (inference): vllm (default), sglang or trtllm.
    #[serde(default = "default_engine")]
    pub engine: Engine,
}

fn default_engine() -> Engine {
    Engine::Vllm
}

/// Checks a whole number against its range, naming the field.
pub(crate) fn check_count(field: &str, value: u64, range: Count) -> AppResult<()> {
    if range.contains(value) {
        Ok(())
    } else {
        Err(AppError::bad_field(
            field,
            format!("{field} {value}: expected {}", range.describe()),
        ))
    }
}

/// Checks a number against its range, naming the field.
pub(crate) fn check_span(field: &str, value: f64, range: Span) -> AppResult<()> {
    if range.contains(value) {
        Ok(())
    } else {
        Err(AppError::bad_field(
            field,
            format!("{field} {value}: expected {}", range.describe()),
        ))
    }
}

impl ReplicaRequest {
    /// Range checks (the CLI's flag parsers do the same).
    pub fn check_ranges(&self, names: &FieldNames) -> AppResult<()> {
        if let Some(c) = self.count {
            check_count(names.count, c.into(), limits::GPUS)?;
        }
        if let Some(tp) = self.tp {
            check_count(names.replica.tp, tp.into(), limits::TP)?;
        }
        check_count(names.replica.pp, self.pp.into(), limits::PP)
    }

    /// The GPU and the precisions named.
    pub fn resolve<'a>(
        &self,
        catalog: &'a Catalog,
        names: &FieldNames,
    ) -> AppResult<(&'a GpuSpec, Precision, Precision)> {
        let gpu = catalog.gpu(&self.gpu).map_err(|e| {
            AppError::bad_field(names.replica.gpu, format!("{}: {e}", names.replica.gpu))
        })?;
        let precision = parse_precision(names.replica.precision, &self.precision)?;
        let kv_precision = match self.kv_precision.as_deref() {
            Some(p) => parse_precision(names.replica.kv_precision, p)?,
            None => gpuplan_core::default_kv_precision(precision),
        };
        Ok((gpu, precision, kv_precision))
    }

    /// The inference layout: tp × pp = count.
    pub fn inference_layout(&self, names: &FieldNames) -> AppResult<Layout> {
        let pp = self.pp;
        if pp == 0 {
            return Err(AppError::bad_field(
                names.replica.pp,
                format!("{} 0: expected a whole number >= 1", names.replica.pp),
            ));
        }
        // In u64: count and tp × pp are each at most 2^20 × 1024.
        let count = self
            .count
            .map(u64::from)
            .unwrap_or(u64::from(self.tp.unwrap_or(1)) * u64::from(pp));
        let tp = self.tp.map(u64::from).unwrap_or(count / u64::from(pp));
        if tp == 0 || tp * u64::from(pp) != count || tp > u64::from(u32::MAX) {
            return Err(AppError::bad_field(
                names.count,
                format!(
                    "{} {count}: an inference replica must have tp × pp = count GPUs (tp {tp}, pp {pp}); use {}/{} to split {count} GPUs",
                    names.count, names.replica.tp, names.replica.pp
                ),
            ));
        }
        Ok(Layout { tp: tp as u32, pp })
    }

    /// How errors name the TP degree: a TP that the count implied is named as such.
    pub fn spelling(&self, names: &FieldNames) -> Spelling {
        Spelling {
            tp: match (self.tp, names.replica.tp) {
                (Some(_), tp) => tp,
                (None, "--tp") => "--tp (implied by --count / --pp)",
                (None, _) => "tp (implied by count / pp)",
            },
            ..names.replica
        }
    }
}

/// Parses a precision, naming the field.
pub fn parse_precision(field: &str, value: &str) -> AppResult<Precision> {
    value
        .parse::<Precision>()
        .map_err(|e| AppError::bad_field(field, format!("{field}: {e}")))
}

/// The replica as vLLM would serve it ([`check_replica`], the one validation
/// layer every verb asks); every violation is bad input, one per line.
pub fn check<'a>(
    catalog: &Catalog,
    spec: &ReplicaSpec<'a>,
    variant: Variant,
) -> AppResult<CheckedReplica<'a>> {
    check_replica(spec, catalog, variant).map_err(|violations| {
        let lines: Vec<String> = violations.iter().map(|v| v.to_string()).collect();
        AppError::bad(lines.join("\nerror: "))
    })
}
