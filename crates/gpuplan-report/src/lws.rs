//! LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`, kubernetes-sigs/lws): a
//! group of pods scheduled and restarted together, the Kubernetes shape of a
//! replica that spans several nodes. `k8s-openapi` has only the built-in
//! APIs, so the custom resource is typed here, after the fields of the CRD
//! (`config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml`) that
//! the export uses.

use crate::engine::shell_word;
use crate::k8s::{count, metadata, pod_template, vllm_container, PodParams};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// `apiVersion` of the custom resource.
pub(crate) const API_VERSION: &str = "leaderworkerset.x-k8s.io/v1";
/// `kind` of the custom resource.
pub(crate) const KIND: &str = "LeaderWorkerSet";
/// The label LWS puts on each pod of a group: 0 on the leader.
pub(crate) const WORKER_INDEX_LABEL: &str = "leaderworkerset.sigs.k8s.io/worker-index";
/// Ray's head port on the leader.
const RAY_PORT: u16 = 6379;

/// A LeaderWorkerSet object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSet {
    /// `leaderworkerset.x-k8s.io/v1`.
    pub api_version: String,
    /// `LeaderWorkerSet`.
    pub kind: String,
    /// Name and labels.
    pub metadata: ObjectMeta,
    /// The groups.
    pub spec: LeaderWorkerSetSpec,
}

/// `spec` of a LeaderWorkerSet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSetSpec {
    /// Groups (model replicas); the CRD defaults it to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// `LeaderCreated` (default) or `LeaderReady`: when workers are created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_policy: Option<String>,
    /// The pods of one group.
    pub leader_worker_template: LeaderWorkerTemplate,
}

/// `spec.leaderWorkerTemplate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerTemplate {
    /// Pods per group, the leader included; the CRD defaults it to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i32>,
    /// `RecreateGroupOnPodRestart` (default) or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    /// The leader pod (worker index 0); the worker template when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_template: Option<PodTemplateSpec>,
    /// The worker pods.
    pub worker_template: PodTemplateSpec,
}

/// Nodes one replica spans.
fn nodes(p: &PodParams) -> u32 {
    p.plan.gpus_per_replica.div_ceil(p.plan.gpus_per_instance)
}

/// One group per replica, one pod per node: the leader starts the Ray head,
/// waits until every worker has joined, then runs `vllm serve` with the
/// plan's arguments over Ray (vLLM's multi-node serving); workers join Ray.
pub(crate) fn leader_worker_set(p: &PodParams) -> LeaderWorkerSet {
    let gpus = p.plan.gpus_per_instance;
    let shell = |script: String| (vec!["/bin/sh".to_string(), "-c".to_string()], vec![script]);
    let (cmd, args) = shell(leader_script(p));
    let leader = vllm_container(p, cmd, args, gpus, true);
    let (cmd, args) = shell(format!(
        "exec ray start --address=\"${{LWS_LEADER_ADDRESS}}:{RAY_PORT}\" --block"
    ));
    let worker = vllm_container(p, cmd, args, gpus, false);
    LeaderWorkerSet {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        metadata: metadata(&p.name),
        spec: LeaderWorkerSetSpec {
            replicas: Some(count(p.plan.replicas)),
            startup_policy: Some("LeaderCreated".into()),
            leader_worker_template: LeaderWorkerTemplate {
                size: Some(count(nodes(p))),
                restart_policy: Some("RecreateGroupOnPodRestart".into()),
                leader_template: Some(pod_template(p, leader)),
                worker_template: pod_template(p, worker),
            },
        },
    }
}

/// The leader's shell script.
fn leader_script(p: &PodParams) -> String {
    let serve: Vec<String> = p.args.argv().iter().map(|a| shell_word(a)).collect();
    format!(
        "ray start --head --port={RAY_PORT}\n\
         until [ \"$(python3 -c 'import ray; ray.init(address=\"auto\"); print(sum(n[\"Alive\"] for n in ray.nodes()))' 2>/dev/null)\" = \"${{LWS_GROUP_SIZE}}\" ]; do sleep 5; done\n\
         exec vllm serve {} --distributed-executor-backend ray\n",
        serve.join(" ")
    )
}
