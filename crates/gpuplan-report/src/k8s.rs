//! `--export k8s`: typed Kubernetes objects (`k8s-openapi`), so every field
//! has the type the API server's schema gives it, written as one YAML stream:
//! a Deployment (a LeaderWorkerSet when a replica spans several nodes), a
//! Service, a PodDisruptionBudget and a HorizontalPodAutoscaler.

use crate::accelerators::{arm64_host, device_resource, gfd_product, GFD_PRODUCT_LABEL};
use crate::engine::{vllm_args, vllm_image, vllm_version, VllmArgs};
use crate::error::ExportError;
use crate::header::header;
use crate::lws;
use crate::{object_name, ExportContext, ExportFile};
use gpuplan_core::Plan;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
    MetricIdentifier, MetricSpec, MetricTarget, PodsMetricSource,
};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, HTTPGetAction, PodSpec,
    PodTemplateSpec, Probe, ResourceRequirements, SecretKeySelector, Service, ServicePort,
    ServiceSpec, Toleration, Volume, VolumeMount,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;
use std::collections::BTreeMap;

/// The Kubernetes API version the objects are built for (`k8s-openapi`'s
/// `v1_37` feature) and validated against (`kubernetes-validate`).
pub const K8S_VERSION: &str = "1.37";
/// The port vLLM's OpenAI server listens on (its default).
pub const HTTP_PORT: i32 = 8000;
/// vLLM's health endpoint: 200 once the engine serves.
pub const HEALTH_PATH: &str = "/health";
/// The per-pod metric the HPA scales on: vLLM's `vllm:num_requests_running`
/// gauge, as prometheus-adapter exposes it (colons renamed, see the header).
pub const AUTOSCALING_METRIC: &str = "vllm_num_requests_running";
/// The label that selects a replica's pods.
const NAME_LABEL: &str = "app.kubernetes.io/name";
/// The Secret holding a Hugging Face token for gated checkpoints.
const HF_SECRET: &str = "hf-token";

/// Requests one replica has in its running batch when it serves its capacity
/// at the SLO, by Little's law (requests in service = arrival rate × time in
/// service): capacity (req/s) × the mean time a request holds a batch slot at
/// a full batch (`derivation.service_s`), rounded down to 0.1 so the HPA adds a
/// replica before the SLO's capacity is used up; at least 0.1.
pub fn hpa_target_running_requests(plan: &Plan) -> f64 {
    let d = &plan.derivation;
    let running = d.capacity_requests_per_s_per_replica * d.service_s;
    ((running * 10.0).floor() / 10.0).max(0.1)
}

/// `--export k8s`: `k8s.yaml`.
pub(crate) fn export(ctx: &ExportContext, plan: &Plan) -> Result<ExportFile, ExportError> {
    let spec = ctx.catalog.gpu(&plan.gpu).ok();
    let resource =
        spec.and_then(device_resource)
            .ok_or_else(|| ExportError::UnsupportedAccelerator {
                target: "k8s",
                gpu: plan.gpu.clone(),
                what: "Kubernetes device-plugin resource",
            })?;
    let version = vllm_version(plan);
    let pods = PodParams {
        name: object_name(&ctx.workload.name),
        args: vllm_args(plan)?,
        image: vllm_image(spec, &version),
        resource,
        plan,
    };
    let mut docs = Vec::new();
    let multi_node = plan.gpus_per_replica > plan.gpus_per_instance;
    if multi_node {
        docs.push(yaml(&lws::leader_worker_set(&pods))?);
    } else {
        docs.push(yaml(&deployment(&pods))?);
    }
    docs.push(yaml(&service(&pods.name, multi_node))?);
    docs.push(yaml(&disruption_budget(ctx, &pods.name, multi_node))?);
    docs.push(yaml(&autoscaler(ctx, plan, &pods.name, multi_node))?);
    let extra = notes(ctx, plan, &pods, multi_node);
    Ok(ExportFile {
        name: "k8s.yaml".into(),
        contents: format!("{}{}", header(ctx, plan, &extra), docs.join("---\n")),
    })
}

/// One object as YAML.
fn yaml<T: Serialize>(object: &T) -> Result<String, ExportError> {
    serde_norway::to_string(object).map_err(|source| ExportError::Yaml {
        file: "k8s.yaml",
        source,
    })
}

/// What the pods of a replica are built from.
pub(crate) struct PodParams<'a> {
    /// Object name (and `app.kubernetes.io/name`).
    pub name: String,
    /// The plan's `vllm serve` arguments.
    pub args: VllmArgs,
    /// The pinned vLLM image.
    pub image: String,
    /// The device-plugin resource (`nvidia.com/gpu`).
    pub resource: &'static str,
    /// The plan.
    pub plan: &'a Plan,
}

/// The labels every object and pod carries.
pub(crate) fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_string(), name.to_string()),
        ("app.kubernetes.io/component".into(), "vllm".into()),
        ("app.kubernetes.io/managed-by".into(), "gpuplan".into()),
    ])
}

/// The selector of a replica's pods (its leader pods for a LeaderWorkerSet).
fn selector(name: &str, multi_node: bool) -> BTreeMap<String, String> {
    let mut s = BTreeMap::from([(NAME_LABEL.to_string(), name.to_string())]);
    if multi_node {
        s.insert(lws::WORKER_INDEX_LABEL.into(), "0".into());
    }
    s
}

/// Object metadata: the name and labels.
pub(crate) fn metadata(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(labels(name)),
        ..ObjectMeta::default()
    }
}

/// The Deployment: `replicas` pods of one replica each.
fn deployment(p: &PodParams) -> Deployment {
    let command = vec!["vllm".to_string(), "serve".to_string()];
    let container = vllm_container(p, command, p.args.argv(), p.plan.gpus_per_replica, true);
    Deployment {
        metadata: metadata(&p.name),
        spec: DeploymentSpec {
            replicas: Some(count(p.plan.replicas)),
            selector: LabelSelector {
                match_labels: Some(selector(&p.name, false)),
                ..LabelSelector::default()
            },
            // A GPU pod cannot surge onto GPUs the plan did not buy: replace
            // one replica at a time.
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(0)),
                    max_unavailable: Some(IntOrString::Int(1)),
                }),
            }),
            template: pod_template(p, container),
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}

/// A pod template on the plan's nodes: node selector, GPU toleration, and
/// `/dev/shm` in memory when GPUs of the pod talk over NCCL (TP > 1).
pub(crate) fn pod_template(p: &PodParams, container: Container) -> PodTemplateSpec {
    let mut node_selector = BTreeMap::from([(
        "node.kubernetes.io/instance-type".to_string(),
        p.plan.instance_type.clone(),
    )]);
    if let Some(product) = gfd_product(&p.plan.gpu) {
        node_selector.insert(GFD_PRODUCT_LABEL.into(), product.into());
    }
    if arm64_host(&p.plan.gpu) {
        node_selector.insert("kubernetes.io/arch".into(), "arm64".into());
    }
    let shm = p.plan.tp > 1;
    let meta = ObjectMeta {
        labels: Some(labels(&p.name)),
        annotations: Some(BTreeMap::from([
            ("prometheus.io/scrape".to_string(), "true".to_string()),
            ("prometheus.io/port".into(), HTTP_PORT.to_string()),
            ("prometheus.io/path".into(), "/metrics".into()),
        ])),
        ..ObjectMeta::default()
    };
    PodTemplateSpec {
        metadata: Some(meta),
        spec: Some(PodSpec {
            containers: vec![container],
            node_selector: Some(node_selector),
            tolerations: Some(vec![Toleration {
                key: Some(p.resource.to_string()),
                operator: Some("Exists".into()),
                effect: Some("NoSchedule".into()),
                ..Toleration::default()
            }]),
            volumes: shm.then(|| {
                vec![Volume {
                    name: "dshm".into(),
                    empty_dir: Some(EmptyDirVolumeSource {
                        medium: Some("Memory".into()),
                        ..EmptyDirVolumeSource::default()
                    }),
                    ..Volume::default()
                }]
            }),
            ..PodSpec::default()
        }),
    }
}

/// The vLLM container: pinned image, `command` + `args`, `gpus` of the
/// device resource, the HF token, and (`serving`) the port and probes.
pub(crate) fn vllm_container(
    p: &PodParams,
    command: Vec<String>,
    args: Vec<String>,
    gpus: u32,
    serving: bool,
) -> Container {
    let gpu_limit = BTreeMap::from([(p.resource.to_string(), Quantity(gpus.to_string()))]);
    Container {
        name: "vllm".into(),
        image: Some(p.image.clone()),
        command: Some(command),
        args: (!args.is_empty()).then_some(args),
        env: Some(vec![EnvVar {
            name: "HF_TOKEN".into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: HF_SECRET.into(),
                    key: "token".into(),
                    optional: Some(true),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }]),
        ports: serving.then(|| {
            vec![ContainerPort {
                name: Some("http".into()),
                container_port: HTTP_PORT,
                ..ContainerPort::default()
            }]
        }),
        resources: Some(ResourceRequirements {
            limits: Some(gpu_limit),
            ..ResourceRequirements::default()
        }),
        // Loading weights and compiling graphs takes minutes: the startup
        // probe allows 30, then liveness takes over.
        startup_probe: serving.then(|| health_probe(10, 180)),
        readiness_probe: serving.then(|| health_probe(10, 3)),
        liveness_probe: serving.then(|| health_probe(15, 4)),
        volume_mounts: (p.plan.tp > 1).then(|| {
            vec![VolumeMount {
                name: "dshm".into(),
                mount_path: "/dev/shm".into(),
                ..VolumeMount::default()
            }]
        }),
        ..Container::default()
    }
}

/// `GET /health` on the serving port.
fn health_probe(period_seconds: i32, failure_threshold: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(HEALTH_PATH.into()),
            port: IntOrString::String("http".into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period_seconds),
        failure_threshold: Some(failure_threshold),
        ..Probe::default()
    }
}

/// The Service in front of the replicas (their leaders for a LeaderWorkerSet).
fn service(name: &str, multi_node: bool) -> Service {
    Service {
        metadata: metadata(name),
        spec: Some(ServiceSpec {
            selector: Some(selector(name, multi_node)),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: HTTP_PORT,
                target_port: Some(IntOrString::String("http".into())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// Voluntary disruptions (node drains) keep the workload's `min_replicas` serving.
fn disruption_budget(ctx: &ExportContext, name: &str, multi_node: bool) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: metadata(name),
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(count(
                ctx.workload.constraints.min_replicas,
            ))),
            selector: Some(LabelSelector {
                match_labels: Some(selector(name, multi_node)),
                ..LabelSelector::default()
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        ..PodDisruptionBudget::default()
    }
}

/// Scales between `min_replicas` and the plan's replicas on running requests per pod.
fn autoscaler(
    ctx: &ExportContext,
    plan: &Plan,
    name: &str,
    multi_node: bool,
) -> HorizontalPodAutoscaler {
    let (api_version, kind) = if multi_node {
        (lws::API_VERSION, lws::KIND)
    } else {
        ("apps/v1", "Deployment")
    };
    let target = hpa_target_running_requests(plan);
    HorizontalPodAutoscaler {
        metadata: metadata(name),
        spec: HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some(api_version.into()),
                kind: kind.into(),
                name: name.into(),
            },
            min_replicas: Some(count(
                ctx.workload.constraints.min_replicas.min(plan.replicas),
            )),
            max_replicas: count(plan.replicas),
            metrics: Some(vec![MetricSpec {
                type_: "Pods".into(),
                pods: Some(PodsMetricSource {
                    metric: MetricIdentifier {
                        name: AUTOSCALING_METRIC.into(),
                        selector: None,
                    },
                    target: MetricTarget {
                        type_: "AverageValue".into(),
                        average_value: Some(Quantity(format!("{target:.1}"))),
                        ..MetricTarget::default()
                    },
                }),
                ..MetricSpec::default()
            }]),
            ..HorizontalPodAutoscalerSpec::default()
        },
        ..HorizontalPodAutoscaler::default()
    }
}

/// A count as the API's `int32` (plan counts are bounded by `MAX_REPLICAS`).
pub(crate) fn count(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Header lines: what the cluster needs and how the numbers were derived.
fn notes(ctx: &ExportContext, plan: &Plan, p: &PodParams, multi_node: bool) -> Vec<String> {
    let min = ctx.workload.constraints.min_replicas.min(plan.replicas);
    let d = &plan.derivation;
    let first = if multi_node {
        format!("LeaderWorkerSet (LWS controller, {}: each replica is a leader and {} workers on {} nodes, joined by Ray)", lws::API_VERSION, plan.gpus_per_replica.div_ceil(plan.gpus_per_instance) - 1, plan.gpus_per_replica.div_ceil(plan.gpus_per_instance))
    } else {
        "Deployment".to_string()
    };
    let mut lines = vec![
        format!("Kubernetes {K8S_VERSION} objects: {first}, Service, PodDisruptionBudget, HorizontalPodAutoscaler (autoscaling/v2); image {}.", p.image),
        format!("Nodes: {} labelled node.kubernetes.io/instance-type={} (cloud node pools set it), GPUs advertised as {} by the vendor's device plugin.", plan.instance_type, plan.instance_type, p.resource),
    ];
    match gfd_product(&plan.gpu) {
        Some(product) => lines.push(format!("GPU feature discovery (NVIDIA GPU Operator) labels the nodes {GFD_PRODUCT_LABEL}={product}.")),
        None => lines.push(format!("No {GFD_PRODUCT_LABEL} value is known for {}: nodes are selected by instance type only.", plan.gpu)),
    }
    lines.extend([
        format!("Gated checkpoints read HF_TOKEN from Secret {HF_SECRET}: kubectl create secret generic {HF_SECRET} --from-literal=token=hf_..."),
        format!("Replicas: {} at first (the plan, sized for the peak); the HPA scales between min_replicas {min} and {}; the PodDisruptionBudget keeps {min} available. Remove spec.replicas before re-applying so the HPA keeps its count.", plan.replicas, plan.replicas),
        format!("HPA target: {:.1} running requests per pod = capacity {:.3} req/s × {:.3} s per request in a batch slot (Little's law), rounded down.", hpa_target_running_requests(plan), d.capacity_requests_per_s_per_replica, d.service_s),
        format!("The HPA reads vLLM's vllm:num_requests_running (Prometheus, /metrics on port {HTTP_PORT}) through prometheus-adapter as {AUTOSCALING_METRIC}, e.g. the rule:"),
        "  seriesQuery: 'vllm:num_requests_running{namespace!=\"\",pod!=\"\"}'".into(),
        "  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}".into(),
        "  name: {matches: '^vllm:(.*)$', as: 'vllm_${1}'}".into(),
        "  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'".into(),
    ]);
    lines
}
