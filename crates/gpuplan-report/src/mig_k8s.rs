//! `gpuplan mig FLEET --export k8s`: per service a Deployment whose pods
//! each request one MIG device of the service's profile as the NVIDIA device
//! plugin's mixed strategy exposes it (`nvidia.com/mig-3g.40gb`), spread over
//! nodes, and a Service in front. The nodes take their MIG layout from the
//! mig-parted export (`nvidia.com/mig.config`).

use crate::accelerators::{gfd_product, GFD_PRODUCT_LABEL};
use crate::engine::{vllm_image, EXPORT_MIN_VLLM};
use crate::error::ExportError;
use crate::k8s::{labels, metadata, HEALTH_PATH, HTTP_PORT};
use crate::object_name;
use gpuplan_catalog::Catalog;
use gpuplan_core::{FleetReport, ServiceSlices};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, HTTPGetAction, PodSpec, PodTemplateSpec, Probe, ResourceRequirements,
    Service, ServicePort, ServiceSpec, Toleration, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The device plugin's resource for one MIG device of `profile` (mixed strategy).
pub fn mig_resource(profile: &str) -> String {
    format!("nvidia.com/mig-{profile}")
}

/// The Kubernetes objects of a feasible fleet plan, as one YAML stream.
pub fn mig_k8s(report: &FleetReport, catalog: &Catalog) -> Result<String, ExportError> {
    let gpu = match (&report.gpu, report.feasible) {
        (Some(g), true) => g,
        _ => {
            return Err(ExportError::NoFleetPlan {
                fleet: report.fleet.clone(),
            })
        }
    };
    let spec = catalog.gpu(gpu).ok();
    let mut docs = Vec::new();
    for s in &report.services {
        let name = object_name(&s.name);
        let image = vllm_image(spec, newer(&s.fit.min_vllm_version, EXPORT_MIN_VLLM));
        docs.push(yaml(&deployment(s, &name, &image, gpu)?)?);
        docs.push(yaml(&service(&name))?);
    }
    let header = format!(
        "# gpuplan mig: fleet {}, {} services on {} × {gpu} (MIG, mixed strategy), ${:.2}/h\n\
         # Nodes take their MIG layout from the mig-parted export (label nvidia.com/mig.config).\n",
        report.fleet,
        report.services.len(),
        report.total_gpus,
        report.usd_per_hour
    );
    Ok(header + &docs.join("---\n"))
}

/// The later of two `x.y.z` versions.
fn newer<'a>(a: &'a str, b: &'a str) -> &'a str {
    let parse = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    if parse(a) > parse(b) {
        a
    } else {
        b
    }
}

fn yaml<T: serde::Serialize>(object: &T) -> Result<String, ExportError> {
    serde_norway::to_string(object).map_err(|source| ExportError::Yaml {
        file: "k8s.yaml",
        source,
    })
}

/// One service's Deployment: an instance per pod, one MIG device each.
fn deployment(
    s: &ServiceSlices,
    name: &str,
    image: &str,
    gpu: &str,
) -> Result<Deployment, ExportError> {
    let args: Vec<String> = s
        .fit
        .vllm_command
        .strip_prefix("vllm serve ")
        .ok_or_else(|| ExportError::MalformedCommand {
            rank: 0,
            command: s.fit.vllm_command.clone(),
            checkpoint: s.fit.checkpoint.clone(),
        })?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let match_labels = BTreeMap::from([("app.kubernetes.io/name".to_string(), name.to_string())]);
    let mut node_selector =
        BTreeMap::from([("nvidia.com/mig.strategy".to_string(), "mixed".to_string())]);
    if let Some(product) = gfd_product(gpu) {
        node_selector.insert(GFD_PRODUCT_LABEL.into(), product.into());
    }
    let pod = PodSpec {
        containers: vec![container(s, image, args)],
        node_selector: Some(node_selector),
        tolerations: Some(vec![Toleration {
            key: Some("nvidia.com/gpu".into()),
            operator: Some("Exists".into()),
            effect: Some("NoSchedule".into()),
            ..Toleration::default()
        }]),
        // Instances on distinct nodes where the cluster allows it (min replicas on distinct GPUs).
        topology_spread_constraints: Some(vec![TopologySpreadConstraint {
            max_skew: 1,
            topology_key: "kubernetes.io/hostname".into(),
            when_unsatisfiable: "ScheduleAnyway".into(),
            label_selector: Some(LabelSelector {
                match_labels: Some(match_labels.clone()),
                ..LabelSelector::default()
            }),
            ..TopologySpreadConstraint::default()
        }]),
        ..PodSpec::default()
    };
    Ok(Deployment {
        metadata: metadata(name),
        spec: DeploymentSpec {
            replicas: Some(i32::try_from(s.fit.instances).unwrap_or(i32::MAX)),
            selector: LabelSelector {
                match_labels: Some(match_labels),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    labels: Some(labels(name)),
                    ..Default::default()
                }),
                spec: Some(pod),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    })
}

/// The vLLM container of one instance.
fn container(s: &ServiceSlices, image: &str, args: Vec<String>) -> Container {
    let limits = BTreeMap::from([(mig_resource(&s.profile), Quantity("1".into()))]);
    Container {
        name: "vllm".into(),
        image: Some(image.to_string()),
        command: Some(vec!["vllm".into(), "serve".into()]),
        args: Some(args),
        ports: Some(vec![ContainerPort {
            name: Some("http".into()),
            container_port: HTTP_PORT,
            ..ContainerPort::default()
        }]),
        resources: Some(ResourceRequirements {
            limits: Some(limits),
            ..ResourceRequirements::default()
        }),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some(HEALTH_PATH.into()),
                port: IntOrString::String("http".into()),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(10),
            ..Probe::default()
        }),
        ..Container::default()
    }
}

/// The Service in front of one service's instances.
fn service(name: &str) -> Service {
    Service {
        metadata: metadata(name),
        spec: Some(ServiceSpec {
            selector: Some(BTreeMap::from([(
                "app.kubernetes.io/name".to_string(),
                name.to_string(),
            )])),
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
