//! What a serving replica may be: the one validation layer every verb asks.
//!
//! `fit`, `estimate` and `plan` ask the same question of a replica — may this
//! model run on this GPU, at this precision, split this way, with this
//! context and these engine settings — and must give the same answer with
//! the same message. [`check_replica`] is that answer. It owns no rule of
//! its own: it asks the rules where they live ([`Layout::check`], the engine's
//! [`serving_choice`] and [`default_kernel`], the model's
//! `max_position_embeddings`, the ranges of [`limits`]) and reports every
//! violation, each naming the field as the caller's user wrote it
//! ([`Spelling`]), the value, and what is allowed.
//!
//! Feasibility is not validity: whether the replica fits in memory or meets
//! an SLO is answered afterwards, by [`inference_memory`](crate::inference_memory)
//! and [`Deployment`] on the [`CheckedReplica`].

use crate::calibration::Calibration;
use crate::engine::{default_kernel, serving_choice_on, tensor_tflops, Engine, ServingChoice};
use crate::error::{CoreError, Result};
use crate::layout::Layout;
use crate::limits;
use crate::memory::{EngineLimits, InferenceMemoryInput};
use crate::perf::Deployment;
use crate::plan::RejectReason;
use gpuplan_catalog::{Catalog, GpuSpec, ModelArch, Precision, Variant};
use serde::Serialize;
use std::fmt;

/// How the caller's user spells each input of a replica, so a violation
/// names the flag or the workload field that was actually written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spelling {
    /// The GPU.
    pub gpu: &'static str,
    /// The weight precision.
    pub precision: &'static str,
    /// The KV-cache precision.
    pub kv_precision: &'static str,
    /// The tensor-parallel degree.
    pub tp: &'static str,
    /// The pipeline-parallel degree.
    pub pp: &'static str,
    /// The context length (prompt + output tokens) each sequence needs.
    pub context: &'static str,
    /// The engine's batch cap.
    pub max_num_seqs: &'static str,
    /// The engine's tokens per iteration.
    pub max_batched_tokens: &'static str,
    /// The engine's memory utilisation cap.
    pub memory_utilization: &'static str,
    /// The serving engine.
    pub engine: &'static str,
}

impl Spelling {
    /// The library's own field names (those of [`ReplicaSpec`] and [`EngineLimits`]).
    pub const API: Spelling = Spelling {
        gpu: "gpu",
        precision: "precision",
        kv_precision: "kv_precision",
        tp: "tp",
        pp: "pp",
        context: "context",
        max_num_seqs: "max_num_seqs",
        max_batched_tokens: "max_batched_tokens",
        memory_utilization: "memory_utilization",
        engine: "engine",
    };

    /// The command-line flags of `gpuplan fit` and `gpuplan estimate`.
    pub const FLAGS: Spelling = Spelling {
        gpu: "--gpu",
        precision: "--precision",
        kv_precision: "--kv-precision",
        tp: "--tp",
        pp: "--pp",
        context: "--context",
        max_num_seqs: "--max-num-seqs",
        max_batched_tokens: "--max-batched-tokens",
        memory_utilization: "--memory-utilization",
        engine: "--engine",
    };

    /// The fields of a workload file (`docs/workload.md`); TP, PP and the
    /// batch cap are the planner's choices and keep the library's names.
    pub const WORKLOAD: Spelling = Spelling {
        gpu: "constraints.gpus",
        precision: "model.precisions",
        kv_precision: "model.kv_precision",
        tp: "tp",
        pp: "pp",
        context: "traffic.input_tokens.p99 + output_tokens.p99",
        max_num_seqs: "max_num_seqs",
        max_batched_tokens: "engine.max_batched_tokens",
        memory_utilization: "engine.memory_utilization",
        engine: "engine",
    };
}

/// One serving replica as a verb asks about it.
#[derive(Debug, Clone, Copy)]
pub struct ReplicaSpec<'a> {
    /// The model.
    pub model: &'a ModelArch,
    /// The GPU of every member of the replica.
    pub gpu: &'a GpuSpec,
    /// Weight precision.
    pub precision: Precision,
    /// KV-cache precision.
    pub kv_precision: Precision,
    /// TP × PP split.
    pub layout: Layout,
    /// Engine settings (vLLM `--max-num-seqs`, `--max-num-batched-tokens`,
    /// `--gpu-memory-utilization`).
    pub limits: EngineLimits,
    /// Tokens (prompt + output) one sequence needs (vLLM `--max-model-len`).
    pub context_len: u64,
    /// The serving engine.
    pub engine: Engine,
    /// How the caller's user wrote each field, for messages.
    pub spelling: Spelling,
}

/// Why a replica configuration is not one vLLM can serve. Each message names
/// the field as written, the value, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Violation {
    /// The accelerator needs a serving stack gpuplan does not model (TPU, Neuron, Gaudi ...).
    AcceleratorNotModelled {
        /// The field as written.
        field: &'static str,
        /// The GPU's catalog name.
        gpu: String,
        /// Its vendor and architecture.
        what: String,
    },
    /// vLLM has no kernel for this weight precision on this GPU, or the GPU publishes no rate for its math.
    PrecisionUnsupported {
        /// The field as written.
        field: &'static str,
        /// The precision asked for.
        precision: Precision,
        /// One sentence naming the GPU and what the precision needs.
        why: String,
    },
    /// The GPU could run the precision, but no published checkpoint of the release can be served there.
    CheckpointUnavailable {
        /// The field as written.
        field: &'static str,
        /// The precision asked for.
        precision: Precision,
        /// One sentence naming the model, the checkpoints and the GPU.
        why: String,
    },
    /// vLLM cannot store the KV cache in this precision (`--kv-cache-dtype` takes 16/32-bit or fp8).
    KvPrecisionUnsupported {
        /// The field as written.
        field: &'static str,
        /// The precision asked for.
        precision: Precision,
    },
    /// The TP/PP split does not suit the model (TP vs heads, PP vs layers) or lies outside its range.
    LayoutInvalid {
        /// The field as written (the TP or the PP degree).
        field: &'static str,
        /// The degree given.
        value: u32,
        /// What is allowed.
        allowed: String,
    },
    /// The context is zero or longer than the model's `max_position_embeddings`.
    ContextTooLong {
        /// The field as written.
        field: &'static str,
        /// Tokens asked for.
        asked: u64,
        /// The model's longest context, tokens.
        model_max: u64,
    },
    /// The engine does not run on this GPU, or not with this kernel or KV-cache precision.
    EngineUnsupported {
        /// The field as written.
        field: &'static str,
        /// The engine asked for.
        engine: Engine,
        /// One sentence naming the engine, the GPU and what is missing.
        why: String,
    },
    /// An engine setting outside its range in [`limits`], or inconsistent with another.
    EngineLimit {
        /// The field as written.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: String,
    },
}

impl Violation {
    /// The planner's rejection reason for a replica with this violation;
    /// `None` for a violation of the workload as a whole (context, engine
    /// settings), which a validated [`InferenceWorkload`](crate::InferenceWorkload)
    /// cannot have: its `validate` applies the same rules.
    pub fn reject_reason(&self) -> Option<RejectReason> {
        match self {
            Violation::AcceleratorNotModelled { .. } => Some(RejectReason::AcceleratorNotModelled),
            Violation::PrecisionUnsupported { .. }
            | Violation::CheckpointUnavailable { .. }
            | Violation::KvPrecisionUnsupported { .. } => Some(RejectReason::PrecisionUnsupported),
            Violation::LayoutInvalid { .. } => Some(RejectReason::LayoutInvalid),
            Violation::EngineUnsupported { .. } => Some(RejectReason::EngineUnsupported),
            Violation::ContextTooLong { .. } | Violation::EngineLimit { .. } => None,
        }
    }

    /// The field as the user wrote it.
    pub fn field(&self) -> &'static str {
        match self {
            Violation::AcceleratorNotModelled { field, .. }
            | Violation::PrecisionUnsupported { field, .. }
            | Violation::CheckpointUnavailable { field, .. }
            | Violation::KvPrecisionUnsupported { field, .. }
            | Violation::LayoutInvalid { field, .. }
            | Violation::EngineUnsupported { field, .. }
            | Violation::ContextTooLong { field, .. }
            | Violation::EngineLimit { field, .. } => field,
        }
    }

    /// The value given, as text.
    pub fn value(&self) -> String {
        match self {
            Violation::AcceleratorNotModelled { gpu, .. } => gpu.clone(),
            Violation::PrecisionUnsupported { precision, .. }
            | Violation::CheckpointUnavailable { precision, .. }
            | Violation::KvPrecisionUnsupported { precision, .. } => precision.to_string(),
            Violation::LayoutInvalid { value, .. } => value.to_string(),
            Violation::ContextTooLong { asked, .. } => asked.to_string(),
            Violation::EngineUnsupported { engine, .. } => engine.to_string(),
            Violation::EngineLimit { value, .. } => value.clone(),
        }
    }

    /// What is allowed, in words.
    pub fn allowed(&self) -> String {
        match self {
            Violation::AcceleratorNotModelled { gpu, what, .. } => format!(
                "an NVIDIA or AMD Instinct GPU with a published 16-bit tensor rate: {gpu} ({what}) needs a non-GPU serving stack (TPU/Neuron/Gaudi), which is not modelled"
            ),
            Violation::PrecisionUnsupported { why, .. } => {
                format!("a precision vLLM runs on this GPU: {why}")
            }
            Violation::CheckpointUnavailable { why, .. } => {
                format!("a precision with a published checkpoint vLLM runs on this GPU: {why}")
            }
            Violation::KvPrecisionUnsupported { .. } => {
                "a KV-cache dtype vLLM stores: bf16, fp16, fp32 or fp8 (vLLM --kv-cache-dtype)"
                    .to_string()
            }
            Violation::LayoutInvalid { allowed, .. } | Violation::EngineLimit { allowed, .. } => {
                allowed.clone()
            }
            Violation::EngineUnsupported { why, .. } => {
                format!("an engine that serves this replica: {why}")
            }
            Violation::ContextTooLong { model_max, .. } => format!(
                "from 1 to the model's context length ({model_max} tokens, max_position_embeddings)"
            ),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid `{}` = {}: expected {}",
            self.field(),
            self.value(),
            self.allowed()
        )
    }
}

impl From<Violation> for CoreError {
    fn from(v: Violation) -> Self {
        CoreError::invalid(v.field(), v.value(), v.allowed())
    }
}

/// A replica configuration vLLM can serve, with what it will serve.
#[derive(Debug, Clone)]
pub struct CheckedReplica<'a> {
    /// The configuration as asked.
    pub spec: ReplicaSpec<'a>,
    /// The checkpoint to serve and the kernel vLLM runs it with.
    pub serving: ServingChoice,
}

impl<'a> CheckedReplica<'a> {
    /// The inputs of the inference memory model for this replica.
    pub fn memory_input(&self) -> InferenceMemoryInput<'a> {
        let s = self.spec;
        InferenceMemoryInput {
            model: s.model,
            gpu: s.gpu,
            layout: s.layout,
            precision: s.precision,
            kv_precision: s.kv_precision,
            context_len: s.context_len,
            limits: s.limits,
        }
    }

    /// The performance model of this replica, at the rate of the kernel vLLM
    /// runs the chosen checkpoint with.
    pub fn deployment(&self, cal: &Calibration) -> Result<Deployment> {
        let s = self.spec;
        Deployment::with_kernel(
            s.model,
            s.gpu,
            s.layout,
            s.precision,
            s.kv_precision,
            self.serving.kernel,
            cal,
        )?
        .on_engine(s.engine, s.gpu, cal)
    }
}

/// Decides whether `spec.engine` can serve `spec` for the model's `variant`
/// release (checkpoints and kernels follow vLLM's rules, then the engine's
/// own hardware limits): every violation, in the order accelerator,
/// precision, engine, KV precision,
/// layout, context, engine settings (an `Err` holds at least one); or the
/// checked replica with the checkpoint and kernel to serve.
///
/// ```
/// use gpuplan_catalog::{Catalog, Precision, Variant};
/// use gpuplan_core::{check_replica, Engine, EngineLimits, Layout, ReplicaSpec, Spelling, Violation};
/// let catalog = Catalog::embedded().unwrap();
/// let model = catalog.model("llama-3.1-8b").unwrap();
/// let spec = ReplicaSpec {
///     model: &model,
///     gpu: catalog.gpu("T4").unwrap(),
///     precision: Precision::Fp8,
///     kv_precision: Precision::Fp8,
///     layout: Layout::SINGLE,
///     limits: EngineLimits::default(),
///     context_len: 4096,
///     engine: Engine::Vllm,
///     spelling: Spelling::FLAGS,
/// };
/// let violations = check_replica(&spec, &catalog, Variant::Instruct).unwrap_err();
/// assert!(matches!(violations[0], Violation::PrecisionUnsupported { .. }));
/// assert!(violations[0].to_string().starts_with("invalid `--precision` = fp8"));
///
/// let h100 = ReplicaSpec { gpu: catalog.gpu("H100").unwrap(), ..spec };
/// let checked = check_replica(&h100, &catalog, Variant::Instruct).unwrap();
/// assert_eq!(checked.serving.kernel.label(), "fp8 w8a8");
/// ```
pub fn check_replica<'a>(
    spec: &ReplicaSpec<'a>,
    catalog: &Catalog,
    variant: Variant,
) -> std::result::Result<CheckedReplica<'a>, Vec<Violation>> {
    let names = &spec.spelling;
    let mut violations = Vec::new();
    let serving = match check_accelerator(spec.gpu, names) {
        Err(v) => {
            violations.push(v);
            None
        }
        Ok(()) => match check_precision(spec, catalog, variant) {
            Ok(choice) => Some(choice),
            Err(v) => {
                violations.push(v);
                None
            }
        },
    };
    if let Some(choice) = &serving {
        if let Err(why) = spec.engine.supports(spec.gpu, choice.kernel) {
            violations.push(Violation::EngineUnsupported {
                field: names.engine,
                engine: spec.engine,
                why,
            });
        }
    }
    violations.extend(check_kv_precision(spec.kv_precision, names));
    violations.extend(check_layout(spec.layout, spec.model, names));
    violations.extend(check_context(spec.model, spec.context_len, names.context));
    violations.extend(check_engine_limits(&spec.limits, names));
    match serving {
        Some(serving) if violations.is_empty() => Ok(CheckedReplica {
            spec: *spec,
            serving,
        }),
        _ => Err(violations),
    }
}

/// Whether gpuplan models the accelerator's serving stack: vLLM on an NVIDIA
/// or AMD GPU that publishes a 16-bit tensor rate. The planner's candidate
/// filter asks the same question.
pub fn check_accelerator(gpu: &GpuSpec, names: &Spelling) -> std::result::Result<(), Violation> {
    let vendor_ok = matches!(gpu.vendor.as_str(), "NVIDIA" | "AMD");
    if vendor_ok && gpu.half_tflops().is_some() {
        return Ok(());
    }
    Err(Violation::AcceleratorNotModelled {
        field: names.gpu,
        gpu: gpu.name.clone(),
        what: format!("{}, {}", gpu.vendor, gpu.architecture),
    })
}

/// The checkpoint vLLM serves at the precision on the GPU
/// ([`serving_choice`]), and whether the GPU publishes a rate for its
/// kernel's math. When no checkpoint can be served, the violation says
/// whether no kernel runs the precision on the GPU at all ([`default_kernel`]:
/// FP8 on a T4) or only the published checkpoints do not run there (AWQ-only
/// INT4 on a V100).
fn check_precision(
    spec: &ReplicaSpec<'_>,
    catalog: &Catalog,
    variant: Variant,
) -> std::result::Result<ServingChoice, Violation> {
    let field = spec.spelling.precision;
    let precision = spec.precision;
    let choice = match serving_choice_on(
        catalog,
        spec.model,
        variant,
        spec.gpu,
        precision,
        spec.engine,
    ) {
        Ok(choice) => choice,
        Err(why) => {
            return Err(match default_kernel(spec.model, spec.gpu, precision) {
                Err(no_kernel) => Violation::PrecisionUnsupported {
                    field,
                    precision,
                    why: no_kernel,
                },
                Ok(_) => Violation::CheckpointUnavailable {
                    field,
                    precision,
                    why,
                },
            })
        }
    };
    let compute = choice.kernel.compute_precision();
    if tensor_tflops(spec.gpu, compute).is_none() {
        return Err(Violation::PrecisionUnsupported {
            field,
            precision,
            why: format!(
                "{} publishes no {compute} tensor throughput (gpus.csv) for the {} kernel",
                spec.gpu.name,
                choice.kernel.label()
            ),
        });
    }
    Ok(choice)
}

/// vLLM's `--kv-cache-dtype` stores 16- or 32-bit (`auto`) or fp8.
fn check_kv_precision(kv: Precision, names: &Spelling) -> Option<Violation> {
    match kv {
        Precision::Fp32 | Precision::Bf16 | Precision::Fp16 | Precision::Fp8 => None,
        Precision::Int8 | Precision::Int4 | Precision::Fp4 => {
            Some(Violation::KvPrecisionUnsupported {
                field: names.kv_precision,
                precision: kv,
            })
        }
    }
}

/// [`Layout::check`], with the degree named as written.
fn check_layout(layout: Layout, model: &ModelArch, names: &Spelling) -> Option<Violation> {
    match layout.check(model) {
        Ok(()) => None,
        Err(CoreError::Invalid {
            field, expected, ..
        }) => {
            let (field, value) = if field == "pp" {
                (names.pp, layout.pp)
            } else {
                (names.tp, layout.tp)
            };
            Some(Violation::LayoutInvalid {
                field,
                value,
                allowed: expected,
            })
        }
        Err(e) => Some(Violation::LayoutInvalid {
            field: names.tp,
            value: layout.tp,
            allowed: e.to_string(),
        }),
    }
}

/// A context of `asked` tokens must be at least 1 and at most the model's
/// `max_position_embeddings` (vLLM refuses a longer `--max-model-len`).
/// Workload files ask the same question of their p99 lengths.
pub fn check_context(model: &ModelArch, asked: u64, field: &'static str) -> Option<Violation> {
    (asked == 0 || asked > model.max_position_embeddings).then_some(Violation::ContextTooLong {
        field,
        asked,
        model_max: model.max_position_embeddings,
    })
}

/// The engine settings' ranges ([`limits::SEQUENCES`],
/// [`limits::MAX_BATCHED_TOKENS`], [`limits::MEMORY_UTILIZATION`]) and vLLM's
/// rule `max_num_batched_tokens >= max_num_seqs`.
pub fn check_engine_limits(l: &EngineLimits, names: &Spelling) -> Vec<Violation> {
    let mut out = check_engine_ranges(l, names);
    if out.is_empty() && l.max_batched_tokens < l.max_num_seqs {
        out.push(Violation::EngineLimit {
            field: names.max_batched_tokens,
            value: l.max_batched_tokens.to_string(),
            allowed: format!(
                "at least `{}` = {}: vLLM processes one token of every running sequence per iteration, so it requires max_num_batched_tokens >= max_num_seqs",
                names.max_num_seqs, l.max_num_seqs
            ),
        });
    }
    out
}

/// The engine settings' ranges alone: what the memory model needs to run.
pub(crate) fn check_engine_ranges(l: &EngineLimits, names: &Spelling) -> Vec<Violation> {
    let mut out = Vec::new();
    if !limits::MEMORY_UTILIZATION.contains(l.memory_utilization) {
        out.push(Violation::EngineLimit {
            field: names.memory_utilization,
            value: format!("{:?}", l.memory_utilization),
            allowed: limits::MEMORY_UTILIZATION.describe(),
        });
    }
    if !limits::MAX_BATCHED_TOKENS.contains(l.max_batched_tokens) {
        out.push(Violation::EngineLimit {
            field: names.max_batched_tokens,
            value: l.max_batched_tokens.to_string(),
            allowed: limits::MAX_BATCHED_TOKENS.describe(),
        });
    }
    if !limits::SEQUENCES.contains(l.max_num_seqs) {
        out.push(Violation::EngineLimit {
            field: names.max_num_seqs,
            value: l.max_num_seqs.to_string(),
            allowed: limits::SEQUENCES.describe(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{catalog, gpu, model};

    /// Checks one question: `Ok(())`, or the violations' kinds and messages.
    fn check(
        model_id: &str,
        gpu_name: &str,
        precision: Precision,
        tp: u32,
        context_len: u64,
        limits: EngineLimits,
    ) -> std::result::Result<CheckedReplica<'static>, Vec<Violation>> {
        // Leaked so the checked replica may borrow it for the test's duration.
        let m: &'static ModelArch = Box::leak(Box::new(model(model_id)));
        let spec = ReplicaSpec {
            model: m,
            gpu: gpu(gpu_name),
            precision,
            kv_precision: crate::default_kv_precision(precision),
            layout: Layout { tp, pp: 1 },
            limits,
            context_len,
            engine: Engine::Vllm,
            spelling: Spelling::FLAGS,
        };
        check_replica(&spec, catalog(), Variant::Instruct)
    }

    fn ok(model_id: &str, gpu_name: &str, p: Precision) -> CheckedReplica<'static> {
        check(model_id, gpu_name, p, 1, 2048, EngineLimits::default())
            .unwrap_or_else(|v| panic!("{model_id} on {gpu_name} {p}: {v:?}"))
    }

    fn rejected(model_id: &str, gpu_name: &str, p: Precision, tp: u32, ctx: u64) -> Vec<Violation> {
        match check(model_id, gpu_name, p, tp, ctx, EngineLimits::default()) {
            Ok(_) => panic!("{model_id} on {gpu_name} {p} TP{tp} ctx {ctx}: accepted"),
            Err(v) => v,
        }
    }

    #[test]
    fn fp8_on_hopper_is_served_with_the_fp8_checkpoint_and_kernel() {
        let c = ok("llama-3.1-8b", "H100-SXM-80GB", Precision::Fp8);
        assert_eq!(c.serving.kernel, crate::WeightKernel::Fp8W8A8);
        assert!(c.serving.prequantized);
        assert_eq!(c.memory_input().context_len, 2048);
    }

    #[test]
    fn fp8_on_turing_is_a_precision_violation_naming_the_flag_and_gpu() {
        let v = rejected("llama-3.1-8b", "T4-16GB", Precision::Fp8, 1, 2048);
        assert!(
            matches!(v.as_slice(), [Violation::PrecisionUnsupported { .. }]),
            "{v:?}"
        );
        let msg = v[0].to_string();
        assert!(
            msg.starts_with("invalid `--precision` = fp8: expected"),
            "{msg}"
        );
        assert!(
            msg.contains("T4-16GB") && msg.contains("cannot run FP8"),
            "{msg}"
        );
    }

    #[test]
    fn inferentia_is_not_modelled_at_any_precision() {
        for p in [Precision::Bf16, Precision::Fp8] {
            let v = rejected("llama-3.1-8b", "Inferentia2-32GB", p, 1, 2048);
            assert!(
                matches!(v.as_slice(), [Violation::AcceleratorNotModelled { .. }]),
                "{v:?}"
            );
            let msg = v[0].to_string();
            assert!(msg.contains("`--gpu` = Inferentia2-32GB"), "{msg}");
            assert!(msg.contains("not modelled"), "{msg}");
        }
    }

    #[test]
    fn int4_on_volta_needs_a_checkpoint_volta_runs() {
        // Llama 3.1 8B publishes GPTQ, which Volta runs; Qwen2.5 7B only AWQ (Turing+).
        let c = ok("llama-3.1-8b", "V100-SXM2-16GB", Precision::Int4);
        assert_eq!(c.serving.kernel, crate::WeightKernel::GptqW4A16);
        let v = rejected("qwen2.5-7b", "V100-SXM2-16GB", Precision::Int4, 1, 2048);
        assert!(
            matches!(v.as_slice(), [Violation::CheckpointUnavailable { .. }]),
            "{v:?}"
        );
        assert!(v[0].to_string().contains("AWQ"), "{}", v[0]);
    }

    #[test]
    fn published_checkpoints_decide_where_no_default_kernel_runs() {
        // FP4 means NVFP4 (Blackwell) by default, but gpt-oss publishes MXFP4,
        // which vLLM runs on Ampere and newer.
        let c = ok("gpt-oss-120b", "H100-SXM-80GB", Precision::Fp4);
        assert_eq!(c.serving.kernel, crate::WeightKernel::Mxfp4W4A16);
        let v = rejected("llama-3.1-8b", "H100-SXM-80GB", Precision::Fp4, 1, 2048);
        assert!(
            matches!(v.as_slice(), [Violation::PrecisionUnsupported { .. }]),
            "{v:?}"
        );
    }

    #[test]
    fn context_beyond_the_model_names_its_maximum() {
        // Llama 2 7B: max_position_embeddings = 4096.
        let v = rejected("llama-2-7b", "H100-SXM-80GB", Precision::Bf16, 1, 100_000);
        assert_eq!(
            v,
            vec![Violation::ContextTooLong {
                field: "--context",
                asked: 100_000,
                model_max: 4096
            }]
        );
        assert!(v[0].to_string().contains("4096"), "{}", v[0]);
        assert!(rejected("llama-2-7b", "H100-SXM-80GB", Precision::Bf16, 1, 0).len() == 1);
        assert!(check(
            "llama-2-7b",
            "H100-SXM-80GB",
            Precision::Bf16,
            1,
            4096,
            EngineLimits::default()
        )
        .is_ok());
    }

    #[test]
    fn tp_not_dividing_the_heads_is_a_layout_violation() {
        let v = rejected("llama-3.1-8b", "H100-SXM-80GB", Precision::Bf16, 3, 2048);
        assert!(
            matches!(
                &v[..],
                [Violation::LayoutInvalid {
                    field: "--tp",
                    value: 3,
                    ..
                }]
            ),
            "{v:?}"
        );
        assert!(v[0].to_string().contains("32 attention heads"), "{}", v[0]);
    }

    #[test]
    fn engine_limits_share_one_range_and_vllms_pair_rule() {
        let limits = |mbt, seqs| EngineLimits {
            max_batched_tokens: mbt,
            max_num_seqs: seqs,
            ..EngineLimits::default()
        };
        let run = |l| check("llama-3.1-8b", "H100-SXM-80GB", Precision::Bf16, 1, 2048, l);
        // Below the floor: the range of limits::MAX_BATCHED_TOKENS, by flag.
        let v = run(limits(1, 1)).unwrap_err();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].to_string().starts_with(
                "invalid `--max-batched-tokens` = 1: expected a whole number from 256"
            ),
            "{}",
            v[0]
        );
        // In range, but fewer tokens than sequences: vLLM refuses to start.
        let v = run(limits(512, 1024)).unwrap_err();
        assert!(
            v[0].to_string().contains("`--max-num-seqs` = 1024"),
            "{}",
            v[0]
        );
        assert!(run(limits(256, 256)).is_ok());
    }

    #[test]
    fn every_violation_is_reported_at_once() {
        // FP8 on a T4, TP 3 and a 100k context: three violations, in order.
        let v = rejected("llama-2-7b", "T4-16GB", Precision::Fp8, 3, 100_000);
        let kinds: Vec<&str> = v.iter().map(|v| v.field()).collect();
        assert_eq!(kinds, ["--precision", "--tp", "--context"], "{v:?}");
    }

    #[test]
    fn replica_violations_map_to_the_planners_reasons() {
        let reason = |m, g, p, tp| rejected(m, g, p, tp, 2048)[0].reject_reason();
        let bf16 = Precision::Bf16;
        assert_eq!(
            reason("llama-3.1-8b", "T4-16GB", Precision::Fp8, 1),
            Some(RejectReason::PrecisionUnsupported)
        );
        assert_eq!(
            reason("qwen2.5-7b", "V100-SXM2-16GB", Precision::Int4, 1),
            Some(RejectReason::PrecisionUnsupported)
        );
        assert_eq!(
            reason("llama-3.1-8b", "Inferentia2-32GB", bf16, 1),
            Some(RejectReason::AcceleratorNotModelled)
        );
        assert_eq!(
            reason("llama-3.1-8b", "H100-SXM-80GB", bf16, 3),
            Some(RejectReason::LayoutInvalid)
        );
        let context = rejected("llama-2-7b", "H100-SXM-80GB", bf16, 1, 5000);
        assert_eq!(context[0].reject_reason(), None);
    }

    #[test]
    fn violations_become_core_errors_with_the_same_text() {
        let v = rejected("llama-3.1-8b", "T4-16GB", Precision::Fp8, 1, 2048);
        assert_eq!(CoreError::from(v[0].clone()).to_string(), v[0].to_string());
    }

    #[test]
    fn workload_spelling_names_workload_fields() {
        let m = model("llama-2-7b");
        let v = check_context(&m, 5000, Spelling::WORKLOAD.context).map(|v| v.to_string());
        assert_eq!(
            v.as_deref(),
            Some("invalid `traffic.input_tokens.p99 + output_tokens.p99` = 5000: expected from 1 to the model's context length (4096 tokens, max_position_embeddings)")
        );
    }
}
