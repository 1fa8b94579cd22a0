//! Why an export failed.

use thiserror::Error;

/// Why a plan could not be exported.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ExportError {
    /// `--plan N` names no plan of the ranking.
    #[error("--plan {rank}: expected a plan number from 1 to {plans}")]
    NoSuchPlan {
        /// The rank asked for.
        rank: usize,
        /// Plans in the ranking.
        plans: usize,
    },
    /// The target has no name for the plan's accelerator.
    #[error("{target} export: {gpu} has no {what}; export another plan (--plan N) or use --export engine")]
    UnsupportedAccelerator {
        /// `k8s` or `skypilot`.
        target: &'static str,
        /// Catalog GPU name.
        gpu: String,
        /// What is missing (a device-plugin resource, a SkyPilot accelerator name).
        what: &'static str,
    },
    /// SkyPilot cannot launch on the plan's provider.
    #[error("skypilot export: SkyPilot has no cloud `{provider}`; it launches on {supported}. Export another plan (--plan N) or use --export k8s|engine")]
    NotASkyPilotCloud {
        /// The plan's provider.
        provider: String,
        /// Providers SkyPilot supports, comma-separated.
        supported: String,
    },
    /// The plan runs on an engine the deployment exports do not write yet.
    #[error("plan {rank} runs on {engine}: the k8s and SkyPilot exports (and LWS) write vLLM deployments only so far; `--export engine` writes its launch script, or plan with engine = \"vllm\" to export a deployment")]
    EngineNotExported {
        /// Plan rank.
        rank: usize,
        /// The plan's engine.
        engine: String,
    },
    /// The plan's `launch_command` does not start with its engine's program (`vllm serve CHECKPOINT`, `python -m sglang.launch_server`, `trtllm-serve`): a bug.
    #[error("plan {rank}: launch command `{command}` does not start with its engine's program serving `{checkpoint}`")]
    MalformedCommand {
        /// Plan rank.
        rank: usize,
        /// The command.
        command: String,
        /// The checkpoint it should serve.
        checkpoint: String,
    },
    /// The fleet has no feasible, priced MIG plan to export.
    #[error("mig-parted export: fleet {fleet} has no feasible MIG plan")]
    NoFleetPlan {
        /// The fleet's name.
        fleet: String,
    },
    /// Serialising a file failed (a bug).
    #[error("cannot write {file} as YAML: {source}")]
    Yaml {
        /// The file.
        file: &'static str,
        /// The serialiser's error.
        source: serde_norway::Error,
    },
}

impl ExportError {
    /// Whether the error is gpuplan's fault (exit 1, "internal error") rather
    /// than a plan the chosen target cannot run (exit 2).
    pub fn is_internal(&self) -> bool {
        matches!(
            self,
            ExportError::MalformedCommand { .. } | ExportError::Yaml { .. }
        )
    }
}
