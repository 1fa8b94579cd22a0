//! Workload files: the raw shape as written (unknown fields are errors), then
//! a validated [`InferenceWorkload`] built against the catalog.
//!
//! Every field and its default is documented in `docs/workload.md`.

use crate::check::{check_context, Spelling};
use crate::engine::Engine;
use crate::error::{CoreError, Result};
use crate::limits::{self, Count, Span};
use gpuplan_catalog::{Catalog, ModelArch, Precision, Variant};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A workload file as written (TOML or JSON).
#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a workload: kind, [model], [traffic] ..."
)]
pub struct RawWorkload {
    /// A name for reports.
    pub name: Option<String>,
    /// `inference` (the only kind `plan` handles so far).
    pub kind: String,
    /// Which model, at which precisions.
    pub model: RawModel,
    /// Peak load and token lengths.
    pub traffic: RawTraffic,
    /// Latency targets (all optional).
    #[serde(default)]
    pub slo: RawSlo,
    /// Where and on what it may run.
    #[serde(default)]
    pub constraints: RawConstraints,
    /// Negotiated discounts and spot assumptions.
    #[serde(default)]
    pub pricing: RawPricing,
    /// The serving engine: a name (`engine = "sglang"`) or a table of
    /// settings with an optional `name`.
    #[serde(default)]
    pub engine: RawEngine,
    /// Engines to compare (`engines = ["vllm", "trtllm"]`): every candidate
    /// is tried on each; exclusive with a named `engine`.
    pub engines: Option<Vec<String>>,
}

/// `[model]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table with id or hf_config")]
pub struct RawModel {
    /// Catalog id, alias, HF repo id or parametric GPT id.
    pub id: Option<String>,
    /// Path of a Hugging Face config.json (relative to the workload file).
    pub hf_config: Option<String>,
    /// The contents of a Hugging Face config.json, inline (what the HTTP
    /// server takes instead of a path).
    pub hf_config_inline: Option<serde_json::Map<String, serde_json::Value>>,
    /// Weight precisions to consider (default bf16 and fp8).
    pub precisions: Option<Vec<String>>,
    /// KV-cache precision (default: fp8 with fp8/fp4 weights, fp32 with fp32, else bf16).
    pub kv_precision: Option<String>,
    /// Which release to serve: `instruct` (default) or `base`.
    pub variant: Option<String>,
}

/// A token-length distribution: mean and p99, or a histogram.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table with mean and p99, or histogram"
)]
pub struct RawTokens {
    /// Mean tokens.
    pub mean: Option<f64>,
    /// 99th-percentile tokens.
    pub p99: Option<f64>,
    /// `[[tokens, weight], ...]` instead of mean/p99.
    pub histogram: Option<Vec<Bucket>>,
}

/// One histogram bucket, `[tokens, weight]`: exactly two numbers, in TOML as
/// in JSON (a third number is an error, never silently dropped).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket(pub f64, pub f64);

impl<'de> Deserialize<'de> for Bucket {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bucket;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a [tokens, weight] pair of two numbers")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Bucket, A::Error> {
                let tokens = seq
                    .next_element::<f64>()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let weight = seq
                    .next_element::<f64>()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                let mut extra = 0;
                while seq.next_element::<de::IgnoredAny>()?.is_some() {
                    extra += 1;
                }
                if extra > 0 {
                    return Err(de::Error::invalid_length(2 + extra, &self));
                }
                Ok(Bucket(tokens, weight))
            }
        }
        d.deserialize_seq(V)
    }
}

/// `[traffic]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table with requests_per_s, input_tokens and output_tokens"
)]
pub struct RawTraffic {
    /// Peak arrival rate, requests per second.
    pub requests_per_s: f64,
    /// Mean arrival rate (default: half the peak), for cost at mean load.
    pub mean_requests_per_s: Option<f64>,
    /// Prompt tokens per request.
    pub input_tokens: RawTokens,
    /// Generated tokens per request.
    pub output_tokens: RawTokens,
    /// `poisson` (default) or `{ kind = "gamma", cv = 2.0 }`.
    pub arrival: Option<RawArrival>,
    /// Beams per request (beam search; default 1, none).
    pub beam_width: Option<u64>,
}

/// Arrival process.
#[derive(Debug, Clone)]
pub enum RawArrival {
    /// `"poisson"`.
    Name(String),
    /// `{ kind = "gamma", cv = 2.0 }`.
    Table(RawArrivalTable),
}

/// A string or a table; the table is read field by field, so an unknown or
/// repeated key is named in the error (an untagged enum would hide it).
impl<'de> Deserialize<'de> for RawArrival {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawArrival;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "\"poisson\" or a table { kind = \"gamma\", cv = <number> } (or { kind = \"poisson\" })",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<RawArrival, E> {
                Ok(RawArrival::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<RawArrival, A::Error> {
                RawArrivalTable::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawArrival::Table)
            }
        }
        d.deserialize_any(V)
    }
}

/// The table form of `traffic.arrival`.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table { kind = \"gamma\", cv = <number> }"
)]
pub struct RawArrivalTable {
    /// `gamma` or `poisson`.
    pub kind: String,
    /// Coefficient of variation of inter-arrival times (1 = Poisson); required for gamma.
    pub cv: Option<f64>,
}

/// `[slo]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of latency targets")]
pub struct RawSlo {
    /// 99th-percentile time to first token, ms.
    pub ttft_ms_p99: Option<f64>,
    /// 99th-percentile time per output token, ms.
    pub tpot_ms_p99: Option<f64>,
    /// 99th-percentile end-to-end latency, ms.
    pub e2e_ms_p99: Option<f64>,
}

/// `[constraints]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of constraints")]
pub struct RawConstraints {
    /// Allowed providers (default all).
    pub providers: Option<Vec<String>>,
    /// Allowed regions, names or globs (`us-*`).
    pub regions: Option<Vec<String>>,
    /// Data residency by jurisdiction/continent: `EU`, `EEA`, `US`, `NA`, `AS`...
    pub geo: Option<Vec<String>>,
    /// Data residency by ISO country code.
    pub countries: Option<Vec<String>>,
    /// Allowed GPUs (any alias; default all).
    pub gpus: Option<Vec<String>>,
    /// Excluded GPUs.
    pub exclude_gpus: Option<Vec<String>>,
    /// Allow spot instances (default false).
    pub spot: Option<bool>,
    /// Minimum replicas, for availability (default 1).
    pub min_replicas: Option<u64>,
    /// Largest replica, GPUs (default 16; replicas larger than one instance need a fast fabric).
    pub max_gpus_per_replica: Option<u64>,
    /// Budget, USD per hour for the whole deployment.
    pub max_usd_per_hour: Option<f64>,
    /// Highest utilisation at peak a plan may run at (default 0.8 = 20% headroom).
    pub max_utilization: Option<f64>,
    /// Training: most GPUs the job may use.
    pub max_gpus: Option<u64>,
    /// Training: most nodes (instances) the job may use.
    pub max_nodes: Option<u64>,
}

/// `[pricing]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of pricing assumptions")]
pub struct RawPricing {
    /// Discount off on-demand list prices per provider, a fraction (`aws = 0.25`).
    pub discounts: Option<BTreeMap<String, f64>>,
    /// Expected spot preemptions per instance-hour (default 0.05).
    pub spot_preemptions_per_hour: Option<f64>,
    /// Minutes to replace a preempted instance and load the model (default 10).
    pub spot_replacement_minutes: Option<f64>,
    /// `"flag"` (default): plans may use prices the catalog flags as
    /// suspicious, marked as such; `"strict"`: such prices are excluded.
    pub trust: Option<PriceTrust>,
}

/// How plans treat prices the catalog flags as suspicious
/// (`gpuplan catalog anomalies`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PriceTrust {
    /// Use them, and mark every plan that does.
    #[default]
    Flag,
    /// Exclude them.
    Strict,
}

/// `engine = "NAME"` or `[engine]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of engine settings")]
pub struct RawEngineTable {
    /// `vllm` (default), `sglang` or `trtllm`.
    pub name: Option<String>,
    /// Share of GPU memory the replica may use (vLLM
    /// `--gpu-memory-utilization`; default 0.90). SGLang and TensorRT-LLM
    /// commands get the same memory split in their own settings.
    pub memory_utilization: Option<f64>,
    /// Token budget of one step (vLLM `--max-num-batched-tokens`, SGLang
    /// `--chunked-prefill-size`, TensorRT-LLM `--max_num_tokens`; default 8192).
    pub max_batched_tokens: Option<u64>,
}

/// The workload's `engine`: a name, or a table of settings.
#[derive(Debug, Clone, Default)]
pub struct RawEngine(pub RawEngineTable);

impl std::ops::Deref for RawEngine {
    type Target = RawEngineTable;
    fn deref(&self) -> &RawEngineTable {
        &self.0
    }
}

impl<'de> Deserialize<'de> for RawEngine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct EngineVisitor;
        impl<'de> Visitor<'de> for EngineVisitor {
            type Value = RawEngine;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an engine name (vllm, sglang, trtllm) or a table of engine settings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<RawEngine, E> {
                Ok(RawEngine(RawEngineTable {
                    name: Some(v.to_string()),
                    ..RawEngineTable::default()
                }))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<RawEngine, A::Error> {
                RawEngineTable::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawEngine)
            }
        }
        d.deserialize_any(EngineVisitor)
    }
}

/// The engines a workload asks for: `engine` (one) or `engines` (several,
/// in order, no repeats); vLLM when neither names one.
pub fn validate_engines(engine: &RawEngine, engines: Option<&[String]>) -> Result<Vec<Engine>> {
    let parse = |field: &str, name: &str| {
        name.parse::<Engine>()
            .map_err(|_| CoreError::invalid(field, name, "one of vllm, sglang, trtllm"))
    };
    match (engine.name.as_deref(), engines) {
        (Some(_), Some(_)) => Err(CoreError::invalid(
            "engines",
            "(set)",
            "either engine = NAME or engines = [...], not both",
        )),
        (Some(name), None) => Ok(vec![parse("engine.name", name)?]),
        (None, Some([])) => Err(CoreError::invalid(
            "engines",
            "[]",
            "at least one of vllm, sglang, trtllm",
        )),
        (None, Some(list)) => {
            let mut out: Vec<Engine> = Vec::new();
            for name in list {
                let e = parse("engines", name)?;
                if out.contains(&e) {
                    return Err(CoreError::invalid("engines", name, "each engine once"));
                }
                out.push(e);
            }
            Ok(out)
        }
        (None, None) => Ok(vec![Engine::Vllm]),
    }
}

/// A token-length distribution reduced to what the models use.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TokenStats {
    /// Mean tokens.
    pub mean: f64,
    /// 99th-percentile tokens.
    pub p99: f64,
}

/// Latency targets, ms at p99.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Slo {
    /// TTFT p99, ms.
    pub ttft_ms_p99: Option<f64>,
    /// TPOT p99, ms.
    pub tpot_ms_p99: Option<f64>,
    /// End-to-end p99, ms.
    pub e2e_ms_p99: Option<f64>,
}

impl Slo {
    /// Whether any latency target is set (none = throughput-per-dollar batch work).
    pub fn is_empty(&self) -> bool {
        self.ttft_ms_p99.is_none() && self.tpot_ms_p99.is_none() && self.e2e_ms_p99.is_none()
    }
}

/// Validated constraints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Constraints {
    /// Allowed providers (empty = all).
    pub providers: Vec<String>,
    /// Region globs (empty = all).
    pub regions: Vec<String>,
    /// Jurisdictions/continents (empty = anywhere).
    pub geo: Vec<String>,
    /// Countries (empty = anywhere).
    pub countries: Vec<String>,
    /// Allowed canonical GPU names (empty = all).
    pub gpus: Vec<String>,
    /// Excluded canonical GPU names.
    pub exclude_gpus: Vec<String>,
    /// Spot allowed.
    pub spot: bool,
    /// Minimum replicas.
    pub min_replicas: u32,
    /// Largest replica in GPUs.
    pub max_gpus_per_replica: u32,
    /// Budget, USD per hour.
    pub max_usd_per_hour: Option<f64>,
    /// Highest utilisation at peak.
    pub max_utilization: f64,
}

/// Validated pricing assumptions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pricing {
    /// Discount per provider (fraction off on-demand list).
    pub discounts: BTreeMap<String, f64>,
    /// Spot preemptions per instance-hour.
    pub spot_preemptions_per_hour: f64,
    /// Hours to replace a preempted instance.
    pub spot_replacement_hours: f64,
    /// Whether flagged prices may be used.
    pub trust: PriceTrust,
}

/// A validated inference workload.
#[derive(Debug, Clone)]
pub struct InferenceWorkload {
    /// Name for reports.
    pub name: String,
    /// The model.
    pub model: ModelArch,
    /// Weight precisions to consider.
    pub precisions: Vec<Precision>,
    /// Explicit KV precision, if any.
    pub kv_precision: Option<Precision>,
    /// Which release of the model to serve (instruct or base).
    pub variant: Variant,
    /// Peak requests per second.
    pub peak_requests_per_s: f64,
    /// Mean requests per second.
    pub mean_requests_per_s: f64,
    /// Prompt tokens.
    pub input_tokens: TokenStats,
    /// Output tokens.
    pub output_tokens: TokenStats,
    /// Squared coefficient of variation of inter-arrival times (1 = Poisson).
    pub arrival_cv2: f64,
    /// Beams each request decodes (1 = no beam search); the output tokens
    /// are the returned beam's.
    pub beam_width: u32,
    /// Latency targets.
    pub slo: Slo,
    /// Constraints.
    pub constraints: Constraints,
    /// Pricing assumptions.
    pub pricing: Pricing,
    /// Engine memory utilisation.
    pub memory_utilization: f64,
    /// Engine max batched tokens.
    pub max_batched_tokens: u64,
    /// Serving engines to plan on (at least one; vLLM by default).
    pub engines: Vec<Engine>,
}

/// `v` if it lies in `range`, else an error naming the field, the value and the range.
fn within(field: &str, v: f64, range: Span) -> Result<f64> {
    if range.contains(v) {
        Ok(v)
    } else {
        // `{:?}` prints 1e308 as written, where `{}` spells out 309 digits.
        Err(CoreError::invalid(
            field,
            format!("{v:?}"),
            range.describe(),
        ))
    }
}

/// `v` if it lies in `range`, narrowed to `u32` (every count range here fits it).
fn count_in(field: &str, v: u64, range: Count) -> Result<u32> {
    match u32::try_from(v) {
        Ok(n) if range.contains(v) => Ok(n),
        _ => Err(CoreError::invalid(field, v.to_string(), range.describe())),
    }
}

/// A token-length field: `{ mean, p99 }` (p99 defaults to the mean) or a
/// `{ histogram }`, never both.
fn tokens(field: &str, raw: &RawTokens) -> Result<TokenStats> {
    if let Some(h) = &raw.histogram {
        if raw.mean.is_some() || raw.p99.is_some() {
            return Err(CoreError::invalid(
                field,
                "histogram with mean/p99",
                "either { mean, p99 } or { histogram }, not both",
            ));
        }
        return histogram_tokens(field, h);
    }
    let mean = within(
        &format!("{field}.mean"),
        raw.mean.ok_or_else(|| {
            CoreError::invalid(
                field,
                "(missing)",
                "{ mean = N, p99 = M } or { histogram = [[tokens, weight], ...] }",
            )
        })?,
        limits::TOKENS,
    )?;
    let p99 = within(
        &format!("{field}.p99"),
        raw.p99.unwrap_or(mean),
        limits::TOKENS,
    )?;
    if p99 < mean {
        return Err(CoreError::invalid(
            format!("{field}.p99"),
            p99.to_string(),
            format!("at least the mean ({mean})"),
        ));
    }
    Ok(TokenStats { mean, p99 })
}

/// The mean and p99 of a `[[tokens, weight], ...]` histogram (at least one
/// bucket, every number in range, some weight).
fn histogram_tokens(field: &str, h: &[Bucket]) -> Result<TokenStats> {
    if h.is_empty() {
        return Err(CoreError::invalid(
            format!("{field}.histogram"),
            "[]",
            "[[tokens, weight], ...] with at least one bucket",
        ));
    }
    let mut buckets: Vec<(f64, f64)> = h.iter().map(|b| (b.0, b.1)).collect();
    for (t, w) in &buckets {
        within(
            &format!("{field}.histogram tokens"),
            *t,
            limits::HISTOGRAM_TOKENS,
        )?;
        within(
            &format!("{field}.histogram weight"),
            *w,
            limits::HISTOGRAM_WEIGHT,
        )?;
    }
    let total: f64 = buckets.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return Err(CoreError::invalid(
            format!("{field}.histogram total weight"),
            total.to_string(),
            "a number > 0 (at least one bucket with weight > 0)",
        ));
    }
    // Only buckets with weight are lengths requests have.
    buckets.retain(|(_, w)| *w > 0.0);
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (lo, hi) = (buckets[0].0, buckets[buckets.len() - 1].0);
    // Weights as shares of the total (exact for one bucket, and for
    // subnormal weights, where t·w would lose digits); rounding may
    // still step a hair outside the buckets, where a mean cannot be.
    let mean = buckets
        .iter()
        .map(|(t, w)| t * (w / total))
        .sum::<f64>()
        .clamp(lo, hi);
    let mut acc = 0.0;
    let mut p99 = hi;
    for (t, w) in &buckets {
        acc += w;
        // compare in weight units with a tolerance, so 0.99 of the weight is not missed by rounding
        if acc >= 0.99 * total * (1.0 - 1e-12) {
            p99 = *t;
            break;
        }
    }
    // Less than 1 % of the weight far out ([[1, 99], [100000, 1]]) puts
    // the mean above the 99th-percentile bucket. The models read a length
    // distribution as its mean and an upper tail at least the mean (what
    // the { mean, p99 } form requires), so the tail they use is the mean
    // then: never below the true p99, never below the mean.
    Ok(TokenStats {
        mean,
        p99: p99.max(mean),
    })
}

impl RawWorkload {
    /// Validates the workload against the catalog. `model` is the model when
    /// the caller already resolved `hf_config` (file I/O happens at the edge).
    pub fn validate(
        self,
        catalog: &Catalog,
        hf_model: Option<ModelArch>,
    ) -> Result<InferenceWorkload> {
        if self.kind != "inference" {
            return Err(CoreError::invalid(
                "kind",
                &self.kind,
                "\"inference\" (training and fleet plans are not supported by `plan` yet)",
            ));
        }
        let (model, precisions, kv_precision, variant) =
            validate_model(&self.model, catalog, hf_model)?;
        let t = &self.traffic;
        let (peak, mean_rate) = validate_rates(t)?;
        let arrival_cv2 = validate_arrival(t.arrival.as_ref())?;
        let input_tokens = tokens("traffic.input_tokens", &t.input_tokens)?;
        let output_tokens = tokens("traffic.output_tokens", &t.output_tokens)?;
        let beam_width = count_in(
            "traffic.beam_width",
            t.beam_width.unwrap_or(1),
            limits::BEAM_WIDTH,
        )?;
        // The p99 request's context: the same rule, and message, as the
        // `--context` of `fit` and the `--input-len + --output-len` of `estimate`.
        let context = (input_tokens.p99 + output_tokens.p99).ceil() as u64;
        if let Some(v) = check_context(&model, context, Spelling::WORKLOAD.context) {
            return Err(v.into());
        }
        let slo = validate_slo(&self.slo)?;
        reject_training_constraints(&self.constraints)?;
        let constraints = validate_constraints(&self.constraints, catalog)?;
        let pricing = validate_pricing(&self.pricing, catalog)?;
        let (memory_utilization, max_batched_tokens) = validate_engine_limits(&self.engine)?;
        let engines = validate_engines(&self.engine, self.engines.as_deref())?;
        Ok(InferenceWorkload {
            name: self.name.unwrap_or_else(|| model.id.clone()),
            model,
            precisions,
            kv_precision,
            variant,
            peak_requests_per_s: peak,
            mean_requests_per_s: mean_rate,
            input_tokens,
            output_tokens,
            arrival_cv2,
            beam_width,
            slo,
            constraints,
            pricing,
            memory_utilization,
            max_batched_tokens,
            engines,
        })
    }
}

/// `[model]`: the architecture (from the catalog, or the already parsed
/// `hf_config`), its precisions, KV-cache precision and variant.
fn validate_model(
    raw: &RawModel,
    catalog: &Catalog,
    hf_model: Option<ModelArch>,
) -> Result<(ModelArch, Vec<Precision>, Option<Precision>, Variant)> {
    let model = match (hf_model, &raw.id, &raw.hf_config) {
        (Some(m), _, _) => m,
        (None, Some(id), _) => catalog
            .model(id)
            .map_err(|e| CoreError::invalid("model.id", id, e.to_string()))?,
        (None, None, _) => {
            return Err(CoreError::invalid(
                "model",
                "(neither id nor hf_config)",
                "model.id = \"llama-3.1-70b\" or model.hf_config = \"config.json\"",
            ))
        }
    };
    let precisions = match &raw.precisions {
        Some(list) if list.is_empty() => {
            return Err(CoreError::invalid(
                "model.precisions",
                "[]",
                "at least one precision",
            ))
        }
        Some(list) => list
            .iter()
            .map(|p| {
                p.parse::<Precision>()
                    .map_err(|e| CoreError::invalid("model.precisions", p, e))
            })
            .collect::<Result<Vec<_>>>()?,
        None => vec![Precision::Bf16, Precision::Fp8],
    };
    let kv_precision = match &raw.kv_precision {
        Some(p) => Some(
            p.parse::<Precision>()
                .map_err(|e| CoreError::invalid("model.kv_precision", p, e))?,
        ),
        None => None,
    };
    let variant = match &raw.variant {
        Some(v) => v
            .parse::<Variant>()
            .map_err(|_| CoreError::invalid("model.variant", v, "\"instruct\" or \"base\""))?,
        None => Variant::Instruct,
    };
    Ok((model, precisions, kv_precision, variant))
}

/// The peak and mean request rates of `[traffic]`.
fn validate_rates(t: &RawTraffic) -> Result<(f64, f64)> {
    let peak = within(
        "traffic.requests_per_s",
        t.requests_per_s,
        limits::REQUESTS_PER_S,
    )?;
    let mean_rate = match t.mean_requests_per_s {
        Some(m) => {
            let m = within("traffic.mean_requests_per_s", m, limits::REQUESTS_PER_S)?;
            if m > peak {
                return Err(CoreError::invalid(
                    "traffic.mean_requests_per_s",
                    m.to_string(),
                    format!("at most the peak requests_per_s ({peak})"),
                ));
            }
            m
        }
        None => peak / 2.0,
    };
    Ok((peak, mean_rate))
}

/// `traffic.arrival`: the squared coefficient of variation of the
/// inter-arrival times (1 for Poisson).
fn validate_arrival(arrival: Option<&RawArrival>) -> Result<f64> {
    let arrival_cv2 = match arrival {
        None => 1.0,
        Some(RawArrival::Name(n)) if n == "poisson" => 1.0,
        Some(RawArrival::Name(n)) => {
            return Err(CoreError::invalid(
                "traffic.arrival",
                n,
                "\"poisson\" or { kind = \"gamma\", cv = <number> }",
            ))
        }
        Some(RawArrival::Table(t)) => match (t.kind.as_str(), t.cv) {
            ("poisson", None) => 1.0,
            ("poisson", Some(cv)) if (cv - 1.0).abs() < 1e-9 => 1.0,
            ("gamma", Some(cv)) => within("traffic.arrival.cv", cv, limits::ARRIVAL_CV)?.powi(2),
            ("gamma", None) => {
                return Err(CoreError::invalid(
                    "traffic.arrival.cv",
                    "(missing)",
                    "the coefficient of variation of inter-arrival times, e.g. cv = 2.0",
                ))
            }
            (other, _) => {
                return Err(CoreError::invalid(
                    "traffic.arrival.kind",
                    other,
                    "\"poisson\" or \"gamma\" (poisson takes no cv other than 1)",
                ))
            }
        },
    };
    Ok(arrival_cv2)
}

/// `[slo]`: each p99 bound within the latency limits.
fn validate_slo(raw: &RawSlo) -> Result<Slo> {
    Ok(Slo {
        ttft_ms_p99: raw
            .ttft_ms_p99
            .map(|v| within("slo.ttft_ms_p99", v, limits::LATENCY_MS))
            .transpose()?,
        tpot_ms_p99: raw
            .tpot_ms_p99
            .map(|v| within("slo.tpot_ms_p99", v, limits::LATENCY_MS))
            .transpose()?,
        e2e_ms_p99: raw
            .e2e_ms_p99
            .map(|v| within("slo.e2e_ms_p99", v, limits::LATENCY_MS))
            .transpose()?,
    })
}

/// Constraints that size training, not inference, are an error here.
fn reject_training_constraints(raw: &RawConstraints) -> Result<()> {
    for (field, set) in [
        ("constraints.max_gpus", raw.max_gpus.is_some()),
        ("constraints.max_nodes", raw.max_nodes.is_some()),
    ] {
        if set {
            return Err(CoreError::invalid(
                field,
                "(set)",
                "nothing: it applies to training workloads; size inference with max_gpus_per_replica and min_replicas",
            ));
        }
    }
    Ok(())
}

/// `[engine]`'s memory share and per-step token budget.
fn validate_engine_limits(raw: &RawEngine) -> Result<(f64, u64)> {
    let memory_utilization = within(
        "engine.memory_utilization",
        raw.memory_utilization
            .unwrap_or(crate::memory::DEFAULT_MEMORY_UTILIZATION),
        limits::MEMORY_UTILIZATION,
    )?;
    let max_batched_tokens = raw
        .max_batched_tokens
        .unwrap_or(crate::memory::DEFAULT_MAX_BATCHED_TOKENS);
    if !limits::MAX_BATCHED_TOKENS.contains(max_batched_tokens) {
        return Err(CoreError::invalid(
            Spelling::WORKLOAD.max_batched_tokens,
            max_batched_tokens.to_string(),
            limits::MAX_BATCHED_TOKENS.describe(),
        ));
    }
    Ok((memory_utilization, max_batched_tokens))
}

/// `constraints.providers`: providers of the catalog, lower-cased.
fn validate_providers(c: &RawConstraints, catalog: &Catalog) -> Result<Vec<String>> {
    let known = catalog.providers();
    let providers: Vec<String> = c
        .providers
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|p| p.to_ascii_lowercase())
        .collect();
    for p in &providers {
        if !known.contains(p) {
            return Err(CoreError::invalid(
                "constraints.providers",
                p,
                format!("one of {}", known.join(", ")),
            ));
        }
    }
    Ok(providers)
}

/// `constraints.regions`: names or globs that match some offering's region.
fn validate_regions(c: &RawConstraints, catalog: &Catalog) -> Result<Vec<String>> {
    let regions = c.regions.clone().unwrap_or_default();
    for r in &regions {
        let pattern = glob::Pattern::new(r).map_err(|e| {
            CoreError::invalid(
                "constraints.regions",
                r,
                format!("a region name or glob ({e})"),
            )
        })?;
        if !catalog
            .offerings()
            .iter()
            .any(|o| pattern.matches(&o.region))
        {
            let mut known: Vec<&str> = catalog
                .regions()
                .iter()
                .map(|x| x.region.as_str())
                .collect();
            known.sort_by_key(|k| (strsim_distance(k, r), *k));
            known.dedup();
            return Err(CoreError::invalid(
                "constraints.regions",
                r,
                format!(
                    "a region of an offering (closest: {})",
                    known.iter().take(3).copied().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    Ok(regions)
}

/// `constraints.geo`: the geography codes, upper-cased.
fn validate_geo(c: &RawConstraints) -> Result<Vec<String>> {
    let geo: Vec<String> = c
        .geo
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|g| g.to_ascii_uppercase())
        .collect();
    for g in &geo {
        if !GEO_CODES.contains(&g.as_str()) {
            return Err(CoreError::invalid(
                "constraints.geo",
                g,
                format!("one of {}", GEO_CODES.join(", ")),
            ));
        }
    }
    Ok(geo)
}

/// `constraints.countries`: ISO 3166 codes of countries with a region in the catalog.
fn validate_countries(c: &RawConstraints, catalog: &Catalog) -> Result<Vec<String>> {
    let countries: Vec<String> = c
        .countries
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|g| g.to_ascii_uppercase())
        .collect();
    for cc in &countries {
        if cc.len() != 2 || !cc.chars().all(|x| x.is_ascii_alphabetic()) {
            return Err(CoreError::invalid(
                "constraints.countries",
                cc,
                "ISO 3166 two-letter codes (DE, FR, US ...)",
            ));
        }
        if !catalog.regions().iter().any(|r| &r.country == cc) {
            let hint = if cc == "UK" {
                " (the United Kingdom is GB)"
            } else {
                ""
            };
            return Err(CoreError::invalid(
                "constraints.countries",
                cc,
                format!("the ISO code of a country with a cloud region in the catalog{hint}"),
            ));
        }
    }
    Ok(countries)
}

/// Validates `[constraints]` against the catalog (providers, regions, geo,
/// countries and GPUs must exist; counts and budgets in range).
pub fn validate_constraints(c: &RawConstraints, catalog: &Catalog) -> Result<Constraints> {
    let providers = validate_providers(c, catalog)?;
    let regions = validate_regions(c, catalog)?;
    let geo = validate_geo(c)?;
    let countries = validate_countries(c, catalog)?;
    let resolve = |field: &str, list: &Option<Vec<String>>| -> Result<Vec<String>> {
        list.clone()
            .unwrap_or_default()
            .iter()
            .map(|g| {
                catalog
                    .gpu(g)
                    .map(|spec| spec.name.clone())
                    .map_err(|e| CoreError::invalid(field, g, e.to_string()))
            })
            .collect()
    };
    let gpus = resolve("constraints.gpus", &c.gpus)?;
    let exclude_gpus = resolve("constraints.exclude_gpus", &c.exclude_gpus)?;
    let min_replicas = count_in(
        "constraints.min_replicas",
        c.min_replicas.unwrap_or(1),
        limits::MIN_REPLICAS,
    )?;
    let max_gpus_per_replica = count_in(
        "constraints.max_gpus_per_replica",
        c.max_gpus_per_replica.unwrap_or(16),
        limits::MAX_GPUS_PER_REPLICA,
    )?;
    let max_usd_per_hour = c
        .max_usd_per_hour
        .map(|v| {
            within(
                "constraints.max_usd_per_hour",
                v,
                limits::BUDGET_USD_PER_HOUR,
            )
        })
        .transpose()?;
    let max_utilization = within(
        "constraints.max_utilization",
        c.max_utilization.unwrap_or(0.8),
        limits::MAX_UTILIZATION,
    )?;
    Ok(Constraints {
        providers,
        regions,
        geo,
        countries,
        gpus,
        exclude_gpus,
        spot: c.spot.unwrap_or(false),
        min_replicas,
        max_gpus_per_replica,
        max_usd_per_hour,
        max_utilization,
    })
}

/// Validates `[pricing]`: one discount per known provider in [0, 1), spot
/// assumptions in range.
pub fn validate_pricing(pricing: &RawPricing, catalog: &Catalog) -> Result<Pricing> {
    let known = catalog.providers();
    let mut discounts = BTreeMap::new();
    // Provider names are case-insensitive: `aws` and `AWS` are one key.
    let mut written: BTreeMap<String, String> = BTreeMap::new();
    for (key, d) in pricing.discounts.clone().unwrap_or_default() {
        let p = key.to_ascii_lowercase();
        if let Some(first) = written.insert(p.clone(), key.clone()) {
            return Err(CoreError::invalid(
                "pricing.discounts",
                format!("{first} and {key}"),
                "one discount per provider (provider names are case-insensitive)",
            ));
        }
        if !known.contains(&p) {
            return Err(CoreError::invalid(
                "pricing.discounts",
                &p,
                format!("a provider: one of {}", known.join(", ")),
            ));
        }
        if !(0.0..1.0).contains(&d) {
            return Err(CoreError::invalid(
                format!("pricing.discounts.{p}"),
                d.to_string(),
                "a fraction in [0, 1), e.g. 0.25 for 25% off",
            ));
        }
        discounts.insert(p, d);
    }
    let preemptions = within(
        "pricing.spot_preemptions_per_hour",
        pricing
            .spot_preemptions_per_hour
            .unwrap_or(DEFAULT_SPOT_PREEMPTIONS_PER_HOUR),
        limits::SPOT_PREEMPTIONS_PER_HOUR,
    )?;
    let replacement_minutes = within(
        "pricing.spot_replacement_minutes",
        pricing
            .spot_replacement_minutes
            .unwrap_or(DEFAULT_SPOT_REPLACEMENT_MINUTES),
        limits::SPOT_REPLACEMENT_MINUTES,
    )?;
    Ok(Pricing {
        discounts,
        spot_preemptions_per_hour: preemptions,
        spot_replacement_hours: replacement_minutes / 60.0,
        trust: pricing.trust.unwrap_or_default(),
    })
}

/// Jurisdictions and continents `constraints.geo` accepts.
///
/// `EU` and `EEA` are jurisdictions (member states); `EUROPE`, `NA`, `SA`,
/// `AS`, `OC`, `AF` are continents; `US` is the country.
pub const GEO_CODES: &[&str] = &["EU", "EEA", "EUROPE", "US", "NA", "SA", "AS", "OC", "AF"];

/// Default expected spot preemptions per instance-hour: one every 20 hours, a
/// deliberately pessimistic planning figure for scarce GPU spot capacity (no
/// provider publishes a per-hour rate); set your own in `[pricing]`.
pub const DEFAULT_SPOT_PREEMPTIONS_PER_HOUR: f64 = 0.05;

/// Default minutes to replace a preempted instance and load the model.
pub const DEFAULT_SPOT_REPLACEMENT_MINUTES: f64 = 10.0;

/// Edit distance used to suggest region names.
fn strsim_distance(a: &str, b: &str) -> usize {
    // Levenshtein over bytes; region names are short ASCII.
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The KV-cache precision used when none is given: FP8 with FP8/FP4 weights
/// (as FP8 and NVFP4 checkpoints ship), FP32 with FP32 weights, else BF16.
pub fn default_kv_precision(weights: Precision) -> Precision {
    match weights {
        Precision::Fp8 | Precision::Fp4 => Precision::Fp8,
        Precision::Fp32 => Precision::Fp32,
        _ => Precision::Bf16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::catalog;

    const BASE: &str = "kind = \"inference\"\n[model]\nid = \"llama-3.1-8b\"\n[traffic]\nrequests_per_s = 5\ninput_tokens = { mean = 500, p99 = 2000 }\noutput_tokens = { mean = 100, p99 = 400 }\n";

    fn check(extra: &str) -> std::result::Result<InferenceWorkload, String> {
        let raw: RawWorkload =
            toml::from_str(&format!("{BASE}{extra}")).map_err(|e| e.to_string())?;
        raw.validate(catalog(), None).map_err(|e| e.to_string())
    }

    #[test]
    fn histogram_buckets_are_exactly_pairs() {
        let text = BASE.replace("{ mean = 100, p99 = 400 }", "{ histogram = [[1, 2, 3]] }");
        let e = toml::from_str::<RawWorkload>(&text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("invalid length 3") && e.contains("[tokens, weight]"),
            "{e}"
        );
        let text = BASE.replace("{ mean = 100, p99 = 400 }", "{ histogram = [[100, 2]] }");
        assert!(toml::from_str::<RawWorkload>(&text).is_ok());
    }

    #[test]
    fn arrival_tables_name_unknown_keys() {
        let text = BASE.replace(
            "requests_per_s = 5",
            "requests_per_s = 5\narrival = { kind = \"gamma\", cv = 2, shape = 1 }",
        );
        let e = toml::from_str::<RawWorkload>(&text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `shape`"), "{e}");
    }

    #[test]
    fn ranges_reject_absurd_values_by_field() {
        for (extra, field) in [
            (
                "[constraints]\nmin_replicas = 2147483648\n",
                "constraints.min_replicas",
            ),
            (
                "[constraints]\nmax_utilization = 1e-300\n",
                "constraints.max_utilization",
            ),
            (
                "[pricing]\ndiscounts = { aws = 0.1, AWS = 0.9 }\n",
                "pricing.discounts",
            ),
            ("[slo]\nttft_ms_p99 = 1e300\n", "slo.ttft_ms_p99"),
        ] {
            let e = check(extra).unwrap_err();
            assert!(e.contains(field), "{e}");
        }
        let e = check("").map(|_| ()).and_then(|_| {
            let t = BASE.replace("requests_per_s = 5", "requests_per_s = 1e308");
            let raw: RawWorkload = toml::from_str(&t).map_err(|e| e.to_string())?;
            raw.validate(catalog(), None)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        let e = e.unwrap_err();
        assert!(
            e.contains("traffic.requests_per_s") && e.contains("10000000"),
            "{e}"
        );
    }

    /// Found by fuzzing (`token_histogram`): a histogram with under 1 % of
    /// its weight far out had a mean above its p99 (which the models, reading
    /// mean and p99 with p99 >= mean, turned into a negative spread); and a
    /// single bucket with a subnormal weight had a mean below the bucket.
    /// The tail is the mean then, and a mean lies within the buckets.
    #[test]
    fn histogram_stats_are_consistent() {
        let stats = |h: &str| {
            let text = BASE.replace(
                "{ mean = 100, p99 = 400 }",
                &format!("{{ histogram = {h} }}"),
            );
            let raw: RawWorkload = toml::from_str(&text).unwrap();
            raw.validate(catalog(), None).unwrap().output_tokens
        };
        // mean = 0.995 · 1 + 0.005 · 100000 = 500.995; p99 bucket 1.
        let s = stats("[[1, 99.5], [100000, 0.5]]");
        assert!((s.mean - 500.995).abs() < 1e-9 && s.p99 == s.mean, "{s:?}");
        let s = stats("[[32.94528846769026, 9.5177e-320]]");
        assert_eq!((s.mean, s.p99), (32.94528846769026, 32.94528846769026));
        // A zero-weight bucket is no length: neither the p99 nor the range.
        let s = stats("[[10, 1], [1000000, 0]]");
        assert_eq!((s.mean, s.p99), (10.0, 10.0));
        let text = BASE.replace(
            "{ mean = 100, p99 = 400 }",
            "{ histogram = [[100, 3], [1000, 1]] }",
        );
        let raw: RawWorkload = toml::from_str(&text).unwrap();
        let w = raw.validate(catalog(), None).unwrap();
        assert_eq!((w.output_tokens.mean, w.output_tokens.p99), (325.0, 1000.0));
    }

    /// Found by fuzzing (`token_histogram`): a bucket of 0.3 tokens passed
    /// the workload (`plan`) but not the simulator (`simulate`,
    /// `plan --verify`); both now take buckets of 1 to 2^27 tokens.
    #[test]
    fn histogram_buckets_are_lengths_a_request_can_have() {
        let text = BASE.replace(
            "{ mean = 100, p99 = 400 }",
            "{ histogram = [[0.3, 1], [100, 1]] }",
        );
        let raw: RawWorkload = toml::from_str(&text).unwrap();
        let e = raw.validate(catalog(), None).unwrap_err().to_string();
        assert!(
            e.contains("traffic.output_tokens.histogram tokens") && e.contains("from 1 to"),
            "{e}"
        );
    }
}
