//! Turns a gpuplan plan into the files deployment tools take: Kubernetes
//! manifests (typed `k8s-openapi` objects), a SkyPilot task with a SkyServe
//! service, and the vLLM launch script and config file; a fleet's MIG plan
//! as an NVIDIA mig-parted config ([`mig_parted`]). Every file opens with
//! a header comment saying what the plan promised (p99s, $/h, price date).
//! Pure: no I/O; the caller writes the files.
//!
//! ```
//! use gpuplan_catalog::Catalog;
//! use gpuplan_core::{plan, Calibration, PlanOptions, RawWorkload};
//! use gpuplan_report::{export, ExportContext, ExportKind};
//!
//! let catalog = Catalog::embedded().unwrap();
//! let raw: RawWorkload = toml::from_str(
//!     r#"
//!     name = "chat"
//!     kind = "inference"
//!     [model]
//!     id = "llama-3.1-8b"
//!     [traffic]
//!     requests_per_s = 5
//!     input_tokens = { mean = 1000, p99 = 4000 }
//!     output_tokens = { mean = 200, p99 = 800 }
//!     [slo]
//!     ttft_ms_p99 = 2000
//!     tpot_ms_p99 = 60
//!     [constraints]
//!     providers = ["aws"]
//!     "#,
//! )
//! .unwrap();
//! let workload = raw.validate(&catalog, None).unwrap();
//! let report = plan(&catalog, &workload, &Calibration::bundled(), PlanOptions::default());
//! let ctx = ExportContext {
//!     catalog: &catalog,
//!     workload: &workload,
//!     workload_file: "chat.toml",
//!     plans: &report.plans,
//! };
//! let files = export(&ctx, 1, ExportKind::K8s).unwrap();
//! assert_eq!(files[0].name, "k8s.yaml");
//! assert!(files[0].contents.contains("kind: HorizontalPodAutoscaler"));
//! ```

mod accelerators;
mod engine;
mod error;
mod header;
mod k8s;
mod lws;
mod mig_k8s;
mod mig_parted;
mod skypilot;
mod training;

pub use engine::{vllm_args, VllmArgs, EXPORT_MIN_VLLM};
pub use error::ExportError;
pub use k8s::{
    hpa_target_running_requests, AUTOSCALING_METRIC, HEALTH_PATH, HTTP_PORT, K8S_VERSION,
};
pub use lws::{LeaderWorkerSet, LeaderWorkerSetSpec, LeaderWorkerTemplate};
pub use mig_k8s::{mig_k8s, mig_resource};
pub use mig_parted::{mig_parted, DeviceGroup, Devices, MigPartedConfig};
pub use skypilot::{
    disk_size_gb, ReadinessProbe, ReplicaPolicy, Resources, SkyPilotTask, SkyService,
    MAX_ALTERNATIVES,
};
pub use training::{export_training, SkyPilotTrainingTask, TrainingExportContext, MASTER_PORT};

use gpuplan_catalog::Catalog;
use gpuplan_core::{InferenceWorkload, Plan};

/// What a plan is exported as (`gpuplan plan --export KIND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    /// Kubernetes: Deployment (or LeaderWorkerSet), Service, PodDisruptionBudget, HPA.
    K8s,
    /// SkyPilot task YAML with a SkyServe `service` section.
    SkyPilot,
    /// The vLLM launch script and `vllm serve --config` file.
    Engine,
}

/// Everything an export reads.
#[derive(Debug, Clone, Copy)]
pub struct ExportContext<'a> {
    /// The catalog the plans were searched in (GPU vendors).
    pub catalog: &'a Catalog,
    /// The workload the plans serve.
    pub workload: &'a InferenceWorkload,
    /// The workload file as the user named it (for the header).
    pub workload_file: &'a str,
    /// The ranked plans (after simulation, as `gpuplan plan` shows them).
    /// SkyPilot failover alternatives come from the plans after the one exported.
    pub plans: &'a [Plan],
}

/// One exported file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFile {
    /// File name, without a directory.
    pub name: String,
    /// The whole file, header comment first.
    pub contents: String,
}

/// Exports plan `rank` (1-based, as `gpuplan plan` numbers them) as `kind`.
pub fn export(
    ctx: &ExportContext,
    rank: usize,
    kind: ExportKind,
) -> Result<Vec<ExportFile>, ExportError> {
    let plan = find_plan(ctx.plans, rank)?;
    // The deployment targets write a vLLM deployment (image, args, probes,
    // metrics); the engine target writes any engine's launch script.
    if plan.engine != gpuplan_core::Engine::Vllm && kind != ExportKind::Engine {
        return Err(ExportError::EngineNotExported {
            rank: plan.rank,
            engine: plan.engine.label().to_string(),
        });
    }
    match kind {
        ExportKind::K8s => Ok(vec![k8s::export(ctx, plan)?]),
        ExportKind::SkyPilot => Ok(vec![skypilot::export(ctx, plan)?]),
        ExportKind::Engine => engine::export(ctx, plan),
    }
}

/// The plan numbered `rank`.
fn find_plan(plans: &[Plan], rank: usize) -> Result<&Plan, ExportError> {
    plans
        .iter()
        .find(|p| p.rank == rank)
        .ok_or(ExportError::NoSuchPlan {
            rank,
            plans: plans.len(),
        })
}

/// A Kubernetes object name (RFC 1035 label: lowercase letters, digits and
/// `-`, starting with a letter, at most 63 characters) from a workload name.
pub fn object_name(workload_name: &str) -> String {
    let mut name = String::new();
    for c in workload_name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name.insert_str(0, "llm-");
    }
    name.truncate(63);
    name.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::object_name;

    #[test]
    fn object_names_are_rfc_1035_labels() {
        assert_eq!(object_name("support-chat-70b"), "support-chat-70b");
        assert_eq!(object_name("Support Chat (70B)"), "support-chat-70b");
        assert_eq!(object_name("70b_chat"), "llm-70b-chat");
        assert_eq!(object_name("---"), "llm");
        let long = object_name(&"a".repeat(100));
        assert_eq!(long.len(), 63);
    }
}
