//! Training plans as files: a SkyPilot task (multi-node `num_nodes`, spot
//! with job recovery), Kubernetes (an Indexed Job whose pods find rank 0
//! through a headless Service), and the launch script. Every file opens with
//! what the plan promised: time to train, cost, layout, checkpoint interval.

use crate::accelerators::{
    device_resource, gfd_product, skypilot_accelerator, skypilot_cloud, skypilot_providers,
    GFD_PRODUCT_LABEL,
};
use crate::error::ExportError;
use crate::k8s::count;
use crate::skypilot::Resources;
use crate::{object_name, ExportFile, ExportKind};
use gpuplan_catalog::Catalog;
use gpuplan_core::training::TrainingWorkload;
use gpuplan_core::TrainingPlan;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, PodSpec, PodTemplateSpec, ResourceRequirements,
    Service, ServicePort, ServiceSpec, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The rendezvous port of rank 0.
pub const MASTER_PORT: u16 = 29500;
/// Container images per framework, pinned: NVIDIA's PyTorch container (with
/// Transformer Engine and Megatron-Core's dependencies) for Megatron-LM, the
/// PyTorch CUDA image for torchtitan/torchtune (installed by `setup`).
const MEGATRON_IMAGE: &str = "nvcr.io/nvidia/pytorch:25.04-py3";
const TORCH_IMAGE: &str = "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel";
/// AMD GPUs: AMD's PyTorch build for ROCm.
const ROCM_TORCH_IMAGE: &str = "rocm/pytorch:rocm6.4_ubuntu24.04_py3.12_pytorch_release_2.6.0";

/// Everything a training export reads.
#[derive(Debug, Clone, Copy)]
pub struct TrainingExportContext<'a> {
    /// The catalog (GPU specs and vendors).
    pub catalog: &'a Catalog,
    /// The workload.
    pub workload: &'a TrainingWorkload,
    /// The workload file as the user named it.
    pub workload_file: &'a str,
    /// The plan to export.
    pub plan: &'a TrainingPlan,
}

/// A SkyPilot task for a training run (no `service`: `sky launch` or `sky jobs launch`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkyPilotTrainingTask {
    /// Task name.
    pub name: String,
    /// Where each node runs.
    pub resources: Resources,
    /// Nodes (omitted for one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_nodes: Option<u32>,
    /// Installs the framework on each node.
    pub setup: String,
    /// Starts the run on every node.
    pub run: String,
}

fn image(ctx: &TrainingExportContext) -> &'static str {
    let amd = ctx
        .catalog
        .gpu(&ctx.plan.gpu)
        .is_ok_and(|g| g.vendor == "AMD");
    if amd {
        ROCM_TORCH_IMAGE
    } else if ctx.plan.launch.program.contains("pretrain_gpt.py") {
        MEGATRON_IMAGE
    } else {
        TORCH_IMAGE
    }
}

/// What installs the framework the launch command names.
fn setup(ctx: &TrainingExportContext) -> String {
    let p = &ctx.plan.launch;
    if p.launcher == "tune run" {
        "pip install torchtune torchao".into()
    } else if p.program.contains("torchtitan") {
        "pip install torchtitan torchao".into()
    } else {
        "git clone https://github.com/NVIDIA/Megatron-LM.git ~/Megatron-LM && pip install -e ~/Megatron-LM"
            .into()
    }
}

/// `# ...` lines: what the plan promised.
fn header(ctx: &TrainingExportContext) -> String {
    let p = ctx.plan;
    let lines = [
        format!(
            "Written by gpuplan from {} (training plan {}): {} × {} on {} × {} ({} {}){}.",
            ctx.workload_file,
            p.rank,
            p.gpus,
            p.gpu,
            p.nodes,
            p.instance_type,
            p.provider,
            p.region,
            if p.spot { ", spot" } else { "" }
        ),
        format!(
            "Layout TP{} · PP{} · DP{}, ZeRO-{}, micro-batch {} × {}, recomputation {}, {}.",
            p.tp,
            p.pp,
            p.dp,
            p.zero_stage,
            p.micro_batch,
            p.micro_batches,
            match p.recompute {
                gpuplan_core::Recompute::None => "none",
                gpuplan_core::Recompute::Selective => "selective",
                gpuplan_core::Recompute::Full => "full",
            },
            p.precision
        ),
        format!(
            "Predicted: {:.2} s per step, {:.0} tokens/s ({:.0} per GPU, MFU {:.0}%), peak {:.1} of {:.1} GiB per GPU.",
            p.step_time_s,
            p.tokens_per_s,
            p.tokens_per_s_per_gpu,
            p.mfu * 100.0,
            p.peak_memory_gib,
            p.gpu_memory_gib
        ),
        format!(
            "Expected {:.1} h to train {:.3e} tokens (checkpoint every {:.0} min), ${:.2}/h, ${:.0} in total.",
            p.time_to_train_hours, ctx.workload.tokens, p.checkpoint_interval_min, p.usd_per_hour, p.total_cost_usd
        ),
    ];
    lines.iter().map(|l| format!("# {l}\n")).collect()
}

/// Object metadata with the training run's labels.
fn metadata(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(BTreeMap::from([
            ("app.kubernetes.io/name".to_string(), name.to_string()),
            ("app.kubernetes.io/component".into(), "trainer".into()),
            ("app.kubernetes.io/managed-by".into(), "gpuplan".into()),
        ])),
        ..ObjectMeta::default()
    }
}

/// The launch on one node, with the rendezvous given by `nodes`, `rank` and `master`.
fn node_command(ctx: &TrainingExportContext, nodes: &str, rank: &str, master: &str) -> String {
    let p = ctx.plan;
    let l = &p.launch;
    if l.program.starts_with("pretrain_gpt.py") {
        // Megatron-LM runs from its checkout.
        let inner = node_command_in(ctx, nodes, rank, master);
        return format!("cd ~/Megatron-LM && {inner}");
    }
    node_command_in(ctx, nodes, rank, master)
}

fn node_command_in(ctx: &TrainingExportContext, nodes: &str, rank: &str, master: &str) -> String {
    let p = ctx.plan;
    let l = &p.launch;
    if l.launcher == "tune run" && p.gpus == 1 {
        return format!("tune run {}", l.program);
    }
    if l.launcher == "tune run" {
        return format!(
            "tune run --nnodes {nodes} --nproc_per_node {} --node_rank {rank} --master_addr {master} --master_port {MASTER_PORT} {}",
            p.gpus_per_node, l.program
        );
    }
    if p.nodes == 1 {
        return format!(
            "torchrun --standalone --nproc_per_node {} {}",
            p.gpus_per_node, l.program
        );
    }
    format!(
        "torchrun --nnodes {nodes} --nproc_per_node {} --node_rank {rank} --master_addr {master} --master_port {MASTER_PORT} {}",
        p.gpus_per_node, l.program
    )
}

/// Exports a training plan.
pub fn export_training(
    ctx: &TrainingExportContext,
    kind: ExportKind,
) -> Result<Vec<ExportFile>, ExportError> {
    match kind {
        ExportKind::SkyPilot => Ok(vec![skypilot(ctx)?]),
        ExportKind::K8s => Ok(vec![k8s(ctx)?]),
        ExportKind::Engine => Ok(vec![script(ctx)]),
    }
}

fn skypilot(ctx: &TrainingExportContext) -> Result<ExportFile, ExportError> {
    let p = ctx.plan;
    let cloud = skypilot_cloud(&p.provider).ok_or_else(|| ExportError::NotASkyPilotCloud {
        provider: p.provider.clone(),
        supported: skypilot_providers().join(", "),
    })?;
    let accelerator =
        skypilot_accelerator(cloud, &p.gpu).ok_or_else(|| ExportError::UnsupportedAccelerator {
            target: "skypilot",
            gpu: p.gpu.clone(),
            what: "SkyPilot accelerator name",
        })?;
    let task = SkyPilotTrainingTask {
        name: object_name(&ctx.workload.name),
        resources: Resources {
            cloud: Some(cloud.into()),
            region: Some(p.region.clone()),
            instance_type: Some(p.instance_type.clone()),
            accelerators: Some(format!("{accelerator}:{}", p.gpus_per_node)),
            use_spot: p.spot.then_some(true),
            disk_size: Some(1024),
            ..Resources::default()
        },
        num_nodes: (p.nodes > 1).then_some(count_u32(p.nodes)),
        setup: setup(ctx),
        run: if p.nodes > 1 {
            format!(
                "MASTER_ADDR=$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\n{}\n",
                node_command(
                    ctx,
                    "$SKYPILOT_NUM_NODES",
                    "$SKYPILOT_NODE_RANK",
                    "$MASTER_ADDR"
                )
            )
        } else {
            format!("{}\n", node_command(ctx, "1", "0", "localhost"))
        },
    };
    let body = serde_norway::to_string(&task).map_err(|source| ExportError::Yaml {
        file: "skypilot.yaml",
        source,
    })?;
    let mut head = header(ctx);
    if p.spot {
        head.push_str("# Spot: launch with `sky jobs launch` so SkyPilot recovers preempted nodes; the run resumes from the last checkpoint.\n");
    }
    Ok(ExportFile {
        name: "skypilot.yaml".into(),
        contents: format!("{head}{body}"),
    })
}

fn count_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn k8s(ctx: &TrainingExportContext) -> Result<ExportFile, ExportError> {
    let p = ctx.plan;
    let gpu = ctx.catalog.gpu(&p.gpu).ok();
    let resource =
        gpu.and_then(device_resource)
            .ok_or_else(|| ExportError::UnsupportedAccelerator {
                target: "k8s",
                gpu: p.gpu.clone(),
                what: "Kubernetes device-plugin resource",
            })?;
    let name = object_name(&ctx.workload.name);
    let service = Service {
        metadata: metadata(&name),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(BTreeMap::from([(
                "app.kubernetes.io/name".to_string(),
                name.clone(),
            )])),
            ports: Some(vec![ServicePort {
                name: Some("rendezvous".into()),
                port: i32::from(MASTER_PORT),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    let nodes = count(count_u32(p.nodes));
    let master = format!("{name}-0.{name}");
    let command = node_command(
        ctx,
        &p.nodes.to_string(),
        "$(JOB_COMPLETION_INDEX)",
        &master,
    );
    let mut node_selector = BTreeMap::from([(
        "node.kubernetes.io/instance-type".to_string(),
        p.instance_type.clone(),
    )]);
    if let Some(product) = gfd_product(&p.gpu) {
        node_selector.insert(GFD_PRODUCT_LABEL.into(), product.into());
    }
    let container = Container {
        name: "trainer".into(),
        image: Some(image(ctx).into()),
        command: Some(vec![
            "bash".into(),
            "-c".into(),
            format!("{} && {command}", setup(ctx)),
        ]),
        env: Some(vec![EnvVar {
            name: "JOB_COMPLETION_INDEX".into(),
            value_from: Some(k8s_openapi::api::core::v1::EnvVarSource {
                field_ref: Some(k8s_openapi::api::core::v1::ObjectFieldSelector {
                    field_path: "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                        .into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..EnvVar::default()
        }]),
        resources: Some(ResourceRequirements {
            limits: Some(BTreeMap::from([(
                resource.to_string(),
                Quantity(p.gpus_per_node.to_string()),
            )])),
            ..ResourceRequirements::default()
        }),
        volume_mounts: Some(vec![VolumeMount {
            name: "dshm".into(),
            mount_path: "/dev/shm".into(),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    };
    let job = Job {
        metadata: metadata(&name),
        spec: Some(JobSpec {
            completions: Some(nodes),
            parallelism: Some(nodes),
            completion_mode: Some("Indexed".into()),
            // A failed node restarts the whole run from the last checkpoint.
            backoff_limit: Some(3),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(BTreeMap::from([(
                        "app.kubernetes.io/name".to_string(),
                        name.clone(),
                    )])),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    subdomain: Some(name.clone()),
                    restart_policy: Some("Never".into()),
                    containers: vec![container],
                    node_selector: Some(node_selector),
                    tolerations: Some(vec![Toleration {
                        key: Some(resource.to_string()),
                        operator: Some("Exists".into()),
                        effect: Some("NoSchedule".into()),
                        ..Toleration::default()
                    }]),
                    volumes: Some(vec![Volume {
                        name: "dshm".into(),
                        empty_dir: Some(EmptyDirVolumeSource {
                            medium: Some("Memory".into()),
                            ..EmptyDirVolumeSource::default()
                        }),
                        ..Volume::default()
                    }]),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    let yaml = |v: &dyn erased::Yaml| v.to_yaml();
    let docs = [yaml(&service)?, yaml(&job)?];
    Ok(ExportFile {
        name: "k8s.yaml".into(),
        contents: format!("{}{}", header(ctx), docs.join("---\n")),
    })
}

/// Typed objects to YAML with the file named in the error.
mod erased {
    use crate::error::ExportError;

    pub(super) trait Yaml {
        fn to_yaml(&self) -> Result<String, ExportError>;
    }

    impl<T: serde::Serialize> Yaml for T {
        fn to_yaml(&self) -> Result<String, ExportError> {
            serde_norway::to_string(self).map_err(|source| ExportError::Yaml {
                file: "k8s.yaml",
                source,
            })
        }
    }
}

fn script(ctx: &TrainingExportContext) -> ExportFile {
    let p = ctx.plan;
    let body = if p.nodes > 1 {
        format!(
            "# Run on each of the {} nodes with NODE_RANK=0..{} and MASTER_ADDR = the IP of node 0.\n{}\n",
            p.nodes,
            p.nodes - 1,
            node_command(ctx, &p.nodes.to_string(), "${NODE_RANK:?}", "${MASTER_ADDR:?}")
        )
    } else {
        format!("{}\n", node_command(ctx, "1", "0", "localhost"))
    };
    ExportFile {
        name: "train.sh".into(),
        contents: format!(
            "#!/usr/bin/env bash\n{}set -euo pipefail\n# Setup: {}\n{body}",
            header(ctx),
            setup(ctx)
        ),
    }
}
