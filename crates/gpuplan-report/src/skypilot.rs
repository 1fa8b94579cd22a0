//! `--export skypilot`: a SkyPilot task whose `service` section makes it a
//! SkyServe service. One SkyServe replica is one plan replica; `any_of` lists
//! the same replica on the next-cheapest other clouds, so SkyPilot can fail
//! over when the first has no capacity.

use crate::accelerators::{skypilot_accelerator, skypilot_cloud, skypilot_providers};
use crate::engine::{shell_word, vllm_args, vllm_image, vllm_version};
use crate::error::ExportError;
use crate::header::header;
use crate::k8s::{HEALTH_PATH, HTTP_PORT};
use crate::{object_name, ExportContext, ExportFile};
use gpuplan_catalog::Catalog;
use gpuplan_core::Plan;
use serde::{Deserialize, Serialize};

/// At most this many `any_of` alternatives on other clouds.
pub const MAX_ALTERNATIVES: usize = 3;
/// Seconds SkyServe waits before probing a new replica: downloading and
/// loading the weights and compiling graphs.
const INITIAL_DELAY_S: u32 = 1800;

/// A SkyPilot task (the fields the export writes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkyPilotTask {
    /// Task (and service) name.
    pub name: String,
    /// What to launch each replica on.
    pub resources: Resources,
    /// Nodes per replica (omitted for one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_nodes: Option<u32>,
    /// Installs vLLM on each node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// Starts the engine.
    pub run: String,
    /// SkyServe: readiness probe and replica policy.
    pub service: SkyService,
}

/// `resources`, or one `any_of` candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// SkyPilot cloud.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<String>,
    /// Region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Instance type (when one replica fills the instance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
    /// `NAME:COUNT` per node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerators: Option<String>,
    /// Spot instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_spot: Option<bool>,
    /// Boot disk, GB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_size: Option<u32>,
    /// The port the replica serves on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<i32>,
    /// `docker:IMAGE` to run in (AMD: the ROCm vLLM image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    /// Candidates, in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<Resources>>,
}

/// `service`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkyService {
    /// When a replica is ready.
    pub readiness_probe: ReadinessProbe,
    /// How many replicas.
    pub replica_policy: ReplicaPolicy,
}

/// `service.readiness_probe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadinessProbe {
    /// Path probed with GET.
    pub path: String,
    /// Seconds before the first probe.
    pub initial_delay_seconds: u32,
}

/// `service.replica_policy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicaPolicy {
    /// Replicas always up (the workload's `min_replicas`).
    pub min_replicas: u32,
    /// Replicas at peak (the plan's).
    pub max_replicas: u32,
    /// Requests/s one replica serves within the SLO (rounded down to 0.01).
    pub target_qps_per_replica: f64,
}

/// `--export skypilot`: `skypilot.yaml`.
pub(crate) fn export(ctx: &ExportContext, plan: &Plan) -> Result<ExportFile, ExportError> {
    let cloud = skypilot_cloud(&plan.provider).ok_or_else(|| ExportError::NotASkyPilotCloud {
        provider: plan.provider.clone(),
        supported: skypilot_providers().join(", "),
    })?;
    let first =
        candidate(ctx.catalog, cloud, plan).ok_or_else(|| ExportError::UnsupportedAccelerator {
            target: "skypilot",
            gpu: plan.gpu.clone(),
            what: "SkyPilot accelerator name",
        })?;
    let alternatives = alternatives(ctx.catalog, ctx.plans, plan);
    let task = task(ctx, plan, first, &alternatives)?;
    let body = serde_norway::to_string(&task).map_err(|source| ExportError::Yaml {
        file: "skypilot.yaml",
        source,
    })?;
    let extra = notes(plan, &alternatives);
    Ok(ExportFile {
        name: "skypilot.yaml".into(),
        contents: format!("{}{body}", header(ctx, plan, &extra)),
    })
}

/// Nodes one replica spans.
fn nodes(plan: &Plan) -> u32 {
    plan.gpus_per_replica
        .div_ceil(plan.gpus_per_instance)
        .max(1)
}

/// Whether SkyPilot can launch the plan's own instance type for a replica:
/// one replica fills it, or a replica spans whole instances. An instance
/// the plan packs several replicas onto cannot be one SkyServe replica.
fn pins_instance(plan: &Plan) -> bool {
    plan.gpus_per_replica >= plan.gpus_per_instance
}

/// Whether one SkyServe replica of the plan can be launched as one cluster:
/// the plan's instance holds exactly one replica, or a replica spans whole
/// instances, or the catalog lists an instance of the plan's provider and
/// region with exactly the GPUs of one replica (what SkyPilot will pick for
/// `accelerators: GPU:N`).
fn launchable(catalog: &Catalog, plan: &Plan) -> bool {
    pins_instance(plan)
        || catalog.offerings().iter().any(|o| {
            o.provider == plan.provider
                && o.region == plan.region
                && o.gpu.as_deref() == Some(plan.gpu.as_str())
                && o.accelerator_count == f64::from(plan.gpus_per_replica)
        })
}

/// The plan's cloud, region and accelerators as a SkyPilot candidate. The
/// accelerator is named as the plan's offering row names it (the bundled rows
/// use SkyPilot's names, including instance-specific ones such as AWS `T4g`),
/// else by the table in `accelerators.rs`.
fn candidate(catalog: &Catalog, cloud: &str, plan: &Plan) -> Option<Resources> {
    let offering = catalog.offerings().iter().find(|o| {
        o.provider == plan.provider
            && o.instance_type == plan.instance_type
            && o.region == plan.region
    });
    let name = match offering {
        Some(o) if !o.accelerator.is_empty() && !o.accelerator.contains(' ') => {
            o.accelerator.clone()
        }
        _ => skypilot_accelerator(cloud, &plan.gpu)?.to_string(),
    };
    let per_node = plan.gpus_per_replica.min(plan.gpus_per_instance);
    Some(Resources {
        cloud: Some(cloud.into()),
        region: Some(plan.region.clone()),
        instance_type: pins_instance(plan).then(|| plan.instance_type.clone()),
        accelerators: Some(format!("{name}:{per_node}")),
        ..Resources::default()
    })
}

/// The same replica on the next-cheapest plans of other SkyPilot clouds, one
/// per cloud: the same GPU, split, checkpoint, KV-cache dtype, nodes and
/// spot, where the catalog lists an instance SkyPilot can launch one
/// replica on ([`launchable`]). Every candidate runs the exported
/// plan's engine settings (`run` is shared); the header names each
/// alternative's plan, whose own batch cap may differ.
fn alternatives(catalog: &Catalog, plans: &[Plan], chosen: &Plan) -> Vec<(Resources, Plan)> {
    let mut seen = vec![chosen.provider.as_str()];
    let mut out = Vec::new();
    for p in plans {
        let same_replica = p.gpu == chosen.gpu
            && (p.tp, p.pp) == (chosen.tp, chosen.pp)
            && p.checkpoint == chosen.checkpoint
            && p.kv_precision == chosen.kv_precision
            && p.spot == chosen.spot
            && nodes(p) == nodes(chosen)
            && launchable(catalog, p);
        if !same_replica || seen.contains(&p.provider.as_str()) {
            continue;
        }
        let Some(c) = skypilot_cloud(&p.provider).and_then(|cloud| candidate(catalog, cloud, p))
        else {
            continue;
        };
        seen.push(p.provider.as_str());
        out.push((c, p.clone()));
        if out.len() == MAX_ALTERNATIVES {
            break;
        }
    }
    out
}

/// The task: resources (with `any_of` when there are alternatives), setup,
/// run and the SkyServe service.
fn task(
    ctx: &ExportContext,
    plan: &Plan,
    first: Resources,
    alternatives: &[(Resources, Plan)],
) -> Result<SkyPilotTask, ExportError> {
    let version = vllm_version(plan);
    let amd = ctx
        .catalog
        .gpu(&plan.gpu)
        .ok()
        .filter(|g| g.vendor == "AMD");
    let common = Resources {
        use_spot: Some(plan.spot),
        disk_size: Some(disk_size_gb(plan)),
        ports: Some(HTTP_PORT),
        image_id: amd.map(|g| format!("docker:{}", vllm_image(Some(g), &version))),
        ..Resources::default()
    };
    let resources = if alternatives.is_empty() {
        Resources {
            cloud: first.cloud,
            region: first.region,
            instance_type: first.instance_type,
            accelerators: first.accelerators,
            ..common
        }
    } else {
        let mut any_of = vec![first];
        any_of.extend(alternatives.iter().map(|(r, _)| r.clone()));
        Resources {
            any_of: Some(any_of),
            ..common
        }
    };
    let capacity = plan.derivation.capacity_requests_per_s_per_replica;
    Ok(SkyPilotTask {
        name: object_name(&ctx.workload.name),
        resources,
        num_nodes: (nodes(plan) > 1).then(|| nodes(plan)),
        setup: amd
            .is_none()
            .then(|| format!("pip install \"vllm=={version}\"\n")),
        run: run_script(plan)?,
        service: SkyService {
            readiness_probe: ReadinessProbe {
                path: HEALTH_PATH.into(),
                initial_delay_seconds: INITIAL_DELAY_S,
            },
            replica_policy: ReplicaPolicy {
                min_replicas: ctx.workload.constraints.min_replicas.min(plan.replicas),
                max_replicas: plan.replicas,
                target_qps_per_replica: ((capacity * 100.0).floor() / 100.0).max(0.01),
            },
        },
    })
}

/// Boot disk, GB: the checkpoint (weights per GPU × GPUs of a replica) twice
/// (the Hugging Face download and its cache) plus 64 GB for the OS, Python
/// environment and logs; at least SkyPilot's default 256 GB.
pub fn disk_size_gb(plan: &Plan) -> u32 {
    let weights_gb =
        plan.derivation.memory.weights_gib * f64::from(plan.gpus_per_replica) * 1.073_741_824;
    let need = 2.0 * weights_gb + 64.0;
    let rounded = (need / 32.0).ceil() * 32.0;
    (rounded as u32).max(256)
}

/// `run`: `vllm serve` with the plan's arguments; across nodes, Ray first
/// (the head on node 0, which serves once every node has joined).
fn run_script(plan: &Plan) -> Result<String, ExportError> {
    let args = vllm_args(plan)?;
    let serve: Vec<String> = args.argv().iter().map(|a| shell_word(a)).collect();
    let serve = format!("vllm serve {}", serve.join(" "));
    if nodes(plan) == 1 {
        return Ok(format!("exec {serve}\n"));
    }
    Ok(format!(
        "HEAD_IP=$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\n\
         if [ \"$SKYPILOT_NODE_RANK\" != \"0\" ]; then\n  exec ray start --address=\"$HEAD_IP:6379\" --block\nfi\n\
         ray start --head --port=6379\n\
         until [ \"$(python3 -c 'import ray; ray.init(address=\"auto\"); print(sum(n[\"Alive\"] for n in ray.nodes()))' 2>/dev/null)\" = \"$SKYPILOT_NUM_NODES\" ]; do sleep 5; done\n\
         exec {serve} --distributed-executor-backend ray\n"
    ))
}

/// Header lines: how SkyServe's replicas map onto the plan, and the alternatives.
fn notes(plan: &Plan, alternatives: &[(Resources, Plan)]) -> Vec<String> {
    let mut lines = vec![
        "Launch: sky serve up skypilot.yaml (gated checkpoints: add --env HF_TOKEN).".to_string(),
        format!(
            "SkyServe scales between min_replicas and the plan's {} replicas at {:.2} req/s per replica (the plan's capacity within the SLO).",
            plan.replicas, plan.derivation.capacity_requests_per_s_per_replica
        ),
    ];
    if !pins_instance(plan) {
        lines.push(format!(
            "The plan packs {} replicas on each {} ({} GPUs); a SkyServe replica is one cluster, so SkyPilot picks an instance with {} GPU(s) per replica, which may cost more than planned.",
            plan.gpus_per_instance / plan.gpus_per_replica,
            plan.instance_type,
            plan.gpus_per_instance,
            plan.gpus_per_replica
        ));
    }
    for (r, p) in alternatives {
        lines.push(format!(
            "Failover (any_of): plan {} on {} {} {} at ${:.2}/h for {} replicas (planned with --max-num-seqs {}; runs the settings above).",
            p.rank,
            r.cloud.as_deref().unwrap_or(""),
            p.region,
            p.instance_type,
            p.usd_per_hour,
            p.replicas,
            p.max_num_seqs
        ));
    }
    if alternatives.is_empty() {
        lines.push("No other SkyPilot cloud among the ranked plans runs the same replica: no any_of failover.".into());
    }
    lines
}
