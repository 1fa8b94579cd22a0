//! The vLLM side of every export: the plan's `vllm serve` arguments, the
//! release and image to pin, and `--export engine` (a launch script and a
//! `vllm serve --config` file with the same settings; for SGLang and
//! TensorRT-LLM plans, the launch script and the files it reads).

use crate::error::ExportError;
use crate::header::header;
use crate::{ExportContext, ExportFile};
use gpuplan_catalog::GpuSpec;
use gpuplan_core::{Engine, Plan};
use serde_norway::{Mapping, Value};

/// The oldest vLLM release the exports pin: the first we have seen published
/// both as `vllm/vllm-openai:vX` with amd64 and arm64 images (Grace hosts)
/// and as `vllm/vllm-openai-rocm:vX` (AMD Instinct). It also reads
/// `vllm serve --config` (vLLM 0.6.0, PR #7737) and serves `/health` and the
/// `vllm:num_requests_running` metric. A plan whose kernel needs a newer
/// release (its `min_engine_version`) pins that one.
pub const EXPORT_MIN_VLLM: &str = "0.17.1";

/// A plan's `vllm serve` command split into the checkpoint and its flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VllmArgs {
    /// The checkpoint served (the positional `model_tag`).
    pub model: String,
    /// Flags and their values in order, as separate arguments (`--max-num-seqs`, `31`).
    pub flags: Vec<String>,
}

impl VllmArgs {
    /// The container arguments after `vllm serve`: the model, then the flags.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(self.model.clone())
            .chain(self.flags.iter().cloned())
            .collect()
    }

    /// The flags as (name without `--`, value) pairs; a flag with no value is `None`.
    pub fn pairs(&self) -> Vec<(String, Option<String>)> {
        let mut out: Vec<(String, Option<String>)> = Vec::new();
        for arg in &self.flags {
            match arg.strip_prefix("--") {
                Some(name) => out.push((name.to_string(), None)),
                None => match out.last_mut() {
                    Some((_, value @ None)) => *value = Some(arg.clone()),
                    _ => out.push((String::new(), Some(arg.clone()))),
                },
            }
        }
        out
    }
}

/// The plan's `vllm serve` arguments: a vLLM plan's `launch_command` is
/// `vllm serve CHECKPOINT` followed by flags and values that hold no spaces
/// (numbers and dtype names, `gpuplan_core::vllm_command`), so the flags are
/// the words after the checkpoint.
pub fn vllm_args(plan: &Plan) -> Result<VllmArgs, ExportError> {
    if plan.engine != Engine::Vllm {
        return Err(ExportError::EngineNotExported {
            rank: plan.rank,
            engine: plan.engine.label().to_string(),
        });
    }
    let prefix = format!("vllm serve {}", plan.checkpoint);
    let malformed = || ExportError::MalformedCommand {
        rank: plan.rank,
        command: plan.launch_command.clone(),
        checkpoint: plan.checkpoint.clone(),
    };
    let rest = plan
        .launch_command
        .strip_prefix(&prefix)
        .ok_or_else(malformed)?;
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return Err(malformed());
    }
    let flags: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
    if flags.first().is_some_and(|f| !f.starts_with("--")) {
        return Err(malformed());
    }
    Ok(VllmArgs {
        model: plan.checkpoint.clone(),
        flags,
    })
}

/// The vLLM release the files pin: the plan's `min_engine_version`, or
/// [`EXPORT_MIN_VLLM`] when that is older.
pub(crate) fn vllm_version(plan: &Plan) -> String {
    let parse = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    if parse(&plan.min_engine_version) > parse(EXPORT_MIN_VLLM) {
        plan.min_engine_version.clone()
    } else {
        EXPORT_MIN_VLLM.to_string()
    }
}

/// The official vLLM OpenAI-server image for the GPU's platform, pinned.
pub(crate) fn vllm_image(gpu: Option<&GpuSpec>, version: &str) -> String {
    match gpu.map(|g| g.vendor.as_str()) {
        Some("AMD") => format!("vllm/vllm-openai-rocm:v{version}"),
        _ => format!("vllm/vllm-openai:v{version}"),
    }
}

/// `--export engine`: `vllm-serve.sh` and `vllm-config.yaml` for a vLLM
/// plan; the launch script (and the files it reads) for SGLang and
/// TensorRT-LLM.
pub(crate) fn export(ctx: &ExportContext, plan: &Plan) -> Result<Vec<ExportFile>, ExportError> {
    if plan.engine != Engine::Vllm {
        return other_engine_export(ctx, plan);
    }
    let args = vllm_args(plan)?;
    let version = vllm_version(plan);
    Ok(vec![
        ExportFile {
            name: "vllm-serve.sh".into(),
            contents: launch_script(ctx, plan, &args, &version),
        },
        ExportFile {
            name: "vllm-config.yaml".into(),
            contents: config_file(ctx, plan, &args, &version)?,
        },
    ])
}

/// `--export engine` for SGLang (`sglang-serve.sh`) and TensorRT-LLM
/// (`trtllm-serve.sh` and its extra LLM API options file): the plan's
/// `launch_command`, one flag per line, then the script's own arguments.
fn other_engine_export(ctx: &ExportContext, plan: &Plan) -> Result<Vec<ExportFile>, ExportError> {
    let (script, program, install) = match plan.engine {
        Engine::Sglang => (
            "sglang-serve.sh",
            "python -m sglang.launch_server",
            format!("pip install \"sglang[all]>={}\"", plan.min_engine_version),
        ),
        Engine::Trtllm => (
            "trtllm-serve.sh",
            "trtllm-serve",
            format!(
                "pip install \"tensorrt-llm>={}\" (or the {}:{} container)",
                plan.min_engine_version,
                plan.engine.profile().image,
                plan.min_engine_version
            ),
        ),
        Engine::Vllm => return export(ctx, plan),
    };
    let rest = plan
        .launch_command
        .strip_prefix(program)
        .filter(|r| r.starts_with(' '))
        .ok_or_else(|| ExportError::MalformedCommand {
            rank: plan.rank,
            command: plan.launch_command.clone(),
            checkpoint: plan.checkpoint.clone(),
        })?;
    let mut lines = vec![format!(
        "One replica: {} × {} with {} {}+ (`{install}`); run it on each of the {} replicas behind a load balancer.",
        plan.gpus_per_replica,
        plan.gpu,
        plan.engine.label(),
        plan.min_engine_version,
        plan.replicas
    )];
    for f in &plan.launch_files {
        lines.push(format!(
            "Reads `{}` (written beside this script): run it from this directory.",
            f.path
        ));
    }
    let mut out = String::from("#!/usr/bin/env bash\n");
    out.push_str(&header(ctx, plan, &lines));
    out.push_str(&format!(
        "# Arguments to this script go on to `{program}`.\nset -euo pipefail\n\nexec {program}"
    ));
    for word in rest.split_whitespace() {
        if word.starts_with("--") {
            out.push_str(&format!(" \\\n  {word}"));
        } else {
            out.push_str(&format!(" {}", shell_word(word)));
        }
    }
    out.push_str(" \\\n  \"$@\"\n");
    let mut files = vec![ExportFile {
        name: script.into(),
        contents: out,
    }];
    files.extend(plan.launch_files.iter().map(|f| ExportFile {
        name: f.path.clone(),
        contents: f.contents.clone(),
    }));
    Ok(files)
}

/// What one replica needs, for the engine files' headers.
fn replica_lines(plan: &Plan, version: &str) -> Vec<String> {
    let mut lines = vec![format!(
        "One replica: {} × {} with vLLM {version} (`pip install vllm=={version}`); run it on each of the {} replicas behind a load balancer.",
        plan.gpus_per_replica, plan.gpu, plan.replicas
    )];
    if plan.gpus_per_replica > plan.gpus_per_instance {
        lines.push(format!(
            "The replica spans {} instances: start a Ray cluster over them first and add `--distributed-executor-backend ray` (vLLM multi-node serving).",
            plan.gpus_per_replica.div_ceil(plan.gpus_per_instance)
        ));
    }
    lines
}

/// `vllm-serve.sh`: `exec vllm serve` with exactly the plan's arguments.
fn launch_script(ctx: &ExportContext, plan: &Plan, args: &VllmArgs, version: &str) -> String {
    let mut out = String::from("#!/usr/bin/env bash\n");
    out.push_str(&header(ctx, plan, &replica_lines(plan, version)));
    out.push_str("# Arguments to this script go on to `vllm serve` (e.g. --port 8080).\nset -euo pipefail\n\nexec vllm serve");
    out.push_str(&format!(" \\\n  {}", shell_word(&args.model)));
    for (name, value) in args.pairs() {
        match value {
            Some(v) => out.push_str(&format!(" \\\n  --{name} {}", shell_word(&v))),
            None => out.push_str(&format!(" \\\n  --{name}")),
        }
    }
    out.push_str(" \\\n  \"$@\"\n");
    out
}

/// `vllm-config.yaml`: the same flags as `vllm serve --config` reads them
/// (long names without `--`; the model stays positional on the command line).
fn config_file(
    ctx: &ExportContext,
    plan: &Plan,
    args: &VllmArgs,
    version: &str,
) -> Result<String, ExportError> {
    let mut lines = replica_lines(plan, version);
    lines.push(format!(
        "Run: vllm serve {} --config vllm-config.yaml",
        args.model
    ));
    let mut map = Mapping::new();
    for (name, value) in args.pairs() {
        map.insert(Value::String(name), config_value(value));
    }
    let body = serde_norway::to_string(&map).map_err(|source| ExportError::Yaml {
        file: "vllm-config.yaml",
        source,
    })?;
    Ok(format!("{}{body}", header(ctx, plan, &lines)))
}

/// A flag's value typed for YAML: integers and decimals as numbers, names as
/// strings, a flag without a value as `true`.
fn config_value(value: Option<String>) -> Value {
    let Some(v) = value else {
        return Value::Bool(true);
    };
    if let Ok(i) = v.parse::<u64>() {
        return Value::Number(i.into());
    }
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() => Value::Number(x.into()),
        _ => Value::String(v),
    }
}

/// A word for `sh`: as is when it holds only safe characters, else single-quoted.
pub(crate) fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "._/=:,+-@%".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_quote_what_sh_would_split() {
        assert_eq!(
            shell_word("meta-llama/Llama-3.1-8B"),
            "meta-llama/Llama-3.1-8B"
        );
        assert_eq!(shell_word("0.90"), "0.90");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
