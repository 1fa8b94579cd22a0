//! Round trips: every export is parsed back (serde, into `k8s-openapi` types
//! and the crate's own SkyPilot and LeaderWorkerSet types) and compared with
//! the plan it came from. The plan's `vllm serve` words are the oracle for
//! the engine arguments, read here independently of the crate's parser.

use gpuplan_catalog::Catalog;
use gpuplan_core::{plan, Calibration, InferenceWorkload, Plan, PlanOptions, RawWorkload};
use gpuplan_report::{
    export, hpa_target_running_requests, ExportContext, ExportError, ExportFile, ExportKind,
    LeaderWorkerSet, SkyPilotTask, AUTOSCALING_METRIC, HEALTH_PATH, HTTP_PORT,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Container, PodTemplateSpec, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

const EXAMPLES: [&str; 3] = ["chat-70b", "code-completion", "rag-long-context"];

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::embedded().unwrap())
}

/// An example workload and its ranked plans (the search alone, no
/// simulation), searched once per test binary.
fn planned(example: &str) -> (InferenceWorkload, Vec<Plan>) {
    type Planned = (InferenceWorkload, Vec<Plan>);
    static PLANNED: OnceLock<Mutex<HashMap<String, Planned>>> = OnceLock::new();
    let cache = PLANNED.get_or_init(Default::default);
    if let Some(hit) = cache.lock().unwrap().get(example) {
        return hit.clone();
    }
    let searched = search(example);
    cache
        .lock()
        .unwrap()
        .insert(example.to_string(), searched.clone());
    searched
}

fn search(example: &str) -> (InferenceWorkload, Vec<Plan>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../examples/{example}.toml"));
    let raw: RawWorkload = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let w = raw.validate(catalog(), None).unwrap();
    let report = plan(
        catalog(),
        &w,
        &Calibration::bundled(),
        PlanOptions { top: 50 },
    );
    assert!(!report.plans.is_empty(), "{example}: no plan");
    (w, report.plans)
}

fn export_plan(
    w: &InferenceWorkload,
    plans: &[Plan],
    rank: usize,
    kind: ExportKind,
) -> Vec<ExportFile> {
    let ctx = ExportContext {
        catalog: catalog(),
        workload: w,
        workload_file: "examples/x.toml",
        plans,
    };
    export(&ctx, rank, kind).unwrap()
}

/// `vllm serve MODEL FLAGS…` → `[MODEL, FLAGS…]`.
fn serve_words(p: &Plan) -> Vec<String> {
    let words: Vec<String> = p.launch_command.split(' ').map(str::to_string).collect();
    assert_eq!(words[..2], ["vllm", "serve"]);
    words[2..].to_vec()
}

/// The YAML documents of a file, each parsed into `T` by its `kind`.
fn documents(text: &str) -> Vec<(String, serde_norway::Value)> {
    serde_norway::Deserializer::from_str(text)
        .map(|doc| {
            let value = serde_norway::Value::deserialize(doc).unwrap();
            let kind = value["kind"].as_str().unwrap().to_string();
            (kind, value)
        })
        .collect()
}

fn typed<T: serde::de::DeserializeOwned>(docs: &[(String, serde_norway::Value)], kind: &str) -> T {
    let (_, value) = docs
        .iter()
        .find(|(k, _)| k == kind)
        .unwrap_or_else(|| panic!("no {kind}"));
    serde_norway::from_value(value.clone()).unwrap()
}

fn gpu_limit(c: &Container) -> u32 {
    let limits = c.resources.as_ref().unwrap().limits.as_ref().unwrap();
    let (name, q) = limits.iter().next().unwrap();
    assert!(name == "nvidia.com/gpu" || name == "amd.com/gpu", "{name}");
    q.0.parse().unwrap()
}

fn pod(template: &PodTemplateSpec) -> &k8s_openapi::api::core::v1::PodSpec {
    template.spec.as_ref().unwrap()
}

/// Node selector, toleration and shared memory of a replica's pods.
fn check_pod_placement(p: &Plan, template: &PodTemplateSpec) {
    let spec = pod(template);
    let selector = spec.node_selector.as_ref().unwrap();
    assert_eq!(
        selector["node.kubernetes.io/instance-type"],
        p.instance_type
    );
    let tolerations = spec.tolerations.as_ref().unwrap();
    assert!(tolerations[0].key.as_deref().unwrap().ends_with("/gpu"));
    let shm = spec.volumes.iter().flatten().any(|v| {
        v.empty_dir
            .as_ref()
            .is_some_and(|e| e.medium.as_deref() == Some("Memory"))
    });
    assert_eq!(shm, p.tp > 1, "shared memory volume iff TP > 1");
}

/// Service, PodDisruptionBudget and HPA against the workload and plan.
fn check_service_budget_autoscaler(
    w: &InferenceWorkload,
    p: &Plan,
    docs: &[(String, serde_norway::Value)],
    target_kind: &str,
) {
    let service: Service = typed(docs, "Service");
    let port = &service.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    assert_eq!(port.port, HTTP_PORT);
    let pdb: PodDisruptionBudget = typed(docs, "PodDisruptionBudget");
    let min = w.constraints.min_replicas as i32;
    assert_eq!(pdb.spec.unwrap().min_available, Some(IntOrString::Int(min)));
    let hpa: HorizontalPodAutoscaler = typed(docs, "HorizontalPodAutoscaler");
    assert_eq!(hpa.spec.min_replicas, Some(min));
    assert_eq!(hpa.spec.max_replicas, p.replicas as i32);
    assert_eq!(hpa.spec.scale_target_ref.kind, target_kind);
    let metric = hpa.spec.metrics.unwrap()[0].pods.clone().unwrap();
    assert_eq!(metric.metric.name, AUTOSCALING_METRIC);
    let target: f64 = metric.target.average_value.unwrap().0.parse().unwrap();
    // Little's law by hand: capacity × slot time, floored to 0.1.
    let d = &p.derivation;
    let expected = (d.capacity_requests_per_s_per_replica * d.service_s * 10.0).floor() / 10.0;
    assert!(
        (target - expected.max(0.1)).abs() < 1e-9,
        "{target} vs {expected}"
    );
    assert_eq!(target, hpa_target_running_requests(p));
    assert!(
        target <= p.max_num_seqs as f64,
        "never more running than the batch cap"
    );
}

#[test]
fn kubernetes_objects_parse_back_into_the_plan() {
    for example in EXAMPLES {
        let (w, plans) = planned(example);
        let p = &plans[0];
        let files = export_plan(&w, &plans, 1, ExportKind::K8s);
        let docs = documents(&files[0].contents);
        let kinds: Vec<&str> = docs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "Deployment",
                "Service",
                "PodDisruptionBudget",
                "HorizontalPodAutoscaler"
            ]
        );
        let d: Deployment = typed(&docs, "Deployment");
        let spec = d.spec;
        assert_eq!(spec.replicas, Some(p.replicas as i32), "{example}");
        let c = &pod(&spec.template).containers[0];
        assert_eq!(
            c.command.as_deref(),
            Some(&["vllm".to_string(), "serve".to_string()][..])
        );
        assert_eq!(
            c.args.as_ref().unwrap(),
            &serve_words(p),
            "{example}: args are the plan's"
        );
        assert_eq!(gpu_limit(c), p.gpus_per_replica);
        assert!(c.image.as_deref().unwrap().starts_with("vllm/vllm-openai"));
        let probe = c
            .readiness_probe
            .as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap();
        assert_eq!(probe.path.as_deref(), Some(HEALTH_PATH));
        assert!(c.liveness_probe.is_some() && c.startup_probe.is_some());
        check_pod_placement(p, &spec.template);
        let labels = spec
            .template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref()
            .unwrap();
        for (k, v) in spec.selector.match_labels.as_ref().unwrap() {
            assert_eq!(labels.get(k), Some(v), "the selector picks the pods");
        }
        check_service_budget_autoscaler(&w, p, &docs, "Deployment");
    }
}

#[test]
fn a_replica_across_nodes_is_a_leader_worker_set() {
    let (w, mut plans) = planned("rag-long-context");
    // The best two-GPU plan on one instance, made rank 1; pretend each
    // instance holds one GPU, so a replica spans two nodes.
    let i = plans
        .iter()
        .position(|p| p.tp * p.pp == 2)
        .expect("a two-GPU plan among the ranked ones");
    let its_rank = plans[i].rank;
    plans.swap(0, i);
    (plans[0].rank, plans[i].rank) = (1, its_rank);
    let p = plans[0].clone();
    plans[0].gpus_per_instance = 1;
    let files = export_plan(&w, &plans, 1, ExportKind::K8s);
    let docs = documents(&files[0].contents);
    assert!(docs.iter().all(|(k, _)| k != "Deployment"));
    let lws: LeaderWorkerSet = typed(&docs, "LeaderWorkerSet");
    assert_eq!(lws.spec.replicas, Some(p.replicas as i32));
    let t = &lws.spec.leader_worker_template;
    assert_eq!(t.size, Some(2));
    let leader = &pod(t.leader_template.as_ref().unwrap()).containers[0];
    let script = &leader.args.as_ref().unwrap()[0];
    let serve = format!(
        "exec vllm serve {} --distributed-executor-backend ray",
        serve_words(&p).join(" ")
    );
    assert!(script.contains(&serve), "{script}");
    assert_eq!(gpu_limit(leader), 1);
    let worker = &pod(&t.worker_template).containers[0];
    assert_eq!(gpu_limit(worker), 1);
    assert!(worker.args.as_ref().unwrap()[0].contains("ray start --address"));
    assert!(worker.readiness_probe.is_none(), "workers serve nothing");
    let service: Service = typed(&docs, "Service");
    let selector = service.spec.unwrap().selector.unwrap();
    assert_eq!(selector["leaderworkerset.sigs.k8s.io/worker-index"], "0");
    check_service_budget_autoscaler(&w, &plans[0], &docs, "LeaderWorkerSet");
}

#[test]
fn skypilot_tasks_parse_back_into_the_plan() {
    for example in EXAMPLES {
        let (w, plans) = planned(example);
        let p = &plans[0];
        let files = export_plan(&w, &plans, 1, ExportKind::SkyPilot);
        let task: SkyPilotTask = serde_norway::from_str(&files[0].contents).unwrap();
        let r = &task.resources;
        let first = r.any_of.as_ref().map_or(r, |c| &c[0]);
        assert_eq!(first.cloud.as_deref(), Some(p.provider.as_str()));
        assert_eq!(first.region.as_deref(), Some(p.region.as_str()));
        let (_, count) = first
            .accelerators
            .as_deref()
            .unwrap()
            .split_once(':')
            .unwrap();
        assert_eq!(
            count.parse::<u32>().unwrap(),
            p.gpus_per_replica.min(p.gpus_per_instance)
        );
        assert_eq!(r.use_spot, Some(p.spot));
        assert_eq!(r.ports, Some(HTTP_PORT));
        assert!(r.disk_size.unwrap() >= 256);
        assert_eq!(
            task.run,
            format!("exec vllm serve {}\n", serve_words(p).join(" "))
        );
        let policy = &task.service.replica_policy;
        assert_eq!(policy.min_replicas, w.constraints.min_replicas);
        assert_eq!(policy.max_replicas, p.replicas);
        let capacity = p.derivation.capacity_requests_per_s_per_replica;
        assert!(
            policy.target_qps_per_replica <= capacity
                && policy.target_qps_per_replica > capacity - 0.01
        );
        assert_eq!(task.service.readiness_probe.path, HEALTH_PATH);
    }
}

#[test]
fn skypilot_fails_over_to_the_same_replica_on_other_clouds() {
    let (w, plans) = planned("code-completion");
    let mut found = false;
    for p in plans.iter().take(10) {
        let ctx = ExportContext {
            catalog: catalog(),
            workload: &w,
            workload_file: "examples/x.toml",
            plans: &plans,
        };
        let files = match export(&ctx, p.rank, ExportKind::SkyPilot) {
            Ok(files) => files,
            // A provider SkyPilot cannot launch on has no task, only an error.
            Err(ExportError::NotASkyPilotCloud { provider, .. }) => {
                assert_eq!(provider, p.provider);
                continue;
            }
            Err(e) => panic!("plan {}: {e}", p.rank),
        };
        let task: SkyPilotTask = serde_norway::from_str(&files[0].contents).unwrap();
        let Some(candidates) = task.resources.any_of else {
            continue;
        };
        found = true;
        assert_eq!(candidates[0].cloud.as_deref(), Some(p.provider.as_str()));
        let mut clouds: Vec<_> = candidates
            .iter()
            .map(|c| c.cloud.clone().unwrap())
            .collect();
        let n = clouds.len();
        clouds.sort();
        clouds.dedup();
        assert_eq!(clouds.len(), n, "one candidate per cloud");
        assert!(n <= 1 + gpuplan_report::MAX_ALTERNATIVES);
        assert!(task.resources.cloud.is_none(), "clouds live in any_of");
        for c in &candidates {
            let (_, count) = c.accelerators.as_deref().unwrap().split_once(':').unwrap();
            assert_eq!(count.parse::<u32>().unwrap(), p.gpus_per_replica);
        }
    }
    assert!(found, "some top-10 plan of code-completion has a failover");
}

/// The words of `exec vllm serve \` continuation lines.
fn script_words(script: &str) -> Vec<String> {
    let body = &script[script.find("exec vllm serve").unwrap() + "exec vllm serve".len()..];
    body.split_whitespace()
        .filter(|w| *w != "\\" && *w != "\"$@\"")
        .map(str::to_string)
        .collect()
}

#[test]
fn engine_files_carry_exactly_the_plan_settings() {
    for example in EXAMPLES {
        let (w, plans) = planned(example);
        let p = &plans[0];
        let files = export_plan(&w, &plans, 1, ExportKind::Engine);
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["vllm-serve.sh", "vllm-config.yaml"]);
        assert_eq!(script_words(&files[0].contents), serve_words(p));
        let config: serde_norway::Mapping = serde_norway::from_str(&files[1].contents).unwrap();
        let words = serve_words(p);
        let flags: Vec<(String, String)> = words[1..]
            .chunks(2)
            .map(|pair| {
                (
                    pair[0].trim_start_matches("--").to_string(),
                    pair[1].clone(),
                )
            })
            .collect();
        assert_eq!(config.len(), flags.len());
        for (name, value) in flags {
            let got = &config[name.as_str()];
            match (got.as_f64(), value.parse::<f64>()) {
                (Some(g), Ok(v)) => assert_eq!(g, v, "{name}"),
                _ => assert_eq!(got.as_str(), Some(value.as_str()), "{name}"),
            }
        }
        assert!(files[1].contents.contains(&format!(
            "vllm serve {} --config vllm-config.yaml",
            p.checkpoint
        )));
    }
}

#[test]
fn every_file_opens_with_what_the_plan_promised() {
    let (w, plans) = planned("chat-70b");
    let p = &plans[0];
    for kind in [ExportKind::K8s, ExportKind::SkyPilot, ExportKind::Engine] {
        for f in export_plan(&w, &plans, 1, kind) {
            let text = f
                .contents
                .strip_prefix("#!/usr/bin/env bash\n")
                .unwrap_or(&f.contents);
            assert!(text.starts_with("# Generated by gpuplan "), "{}", f.name);
            let header: String = text
                .lines()
                .take_while(|l| l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n");
            for needle in [
                "examples/x.toml".to_string(),
                format!("plan {}", p.rank),
                format!("{} × {}", p.gpus_per_replica, p.gpu),
                format!("{} {} in {}", p.provider, p.instance_type, p.region),
                format!("p99 TTFT {:.0} ms", p.ttft_ms_p99),
                format!("p99 TPOT {:.1} ms", p.tpot_ms_p99),
                format!("${:.2}/h", p.usd_per_hour),
                p.price_date.clone().unwrap(),
            ] {
                assert!(
                    header.contains(&needle),
                    "{}: no {needle:?} in\n{header}",
                    f.name
                );
            }
        }
    }
}

#[test]
fn impossible_exports_say_why() {
    let (w, mut plans) = planned("chat-70b");
    let ctx = |plans: &[Plan]| -> Vec<Result<Vec<ExportFile>, String>> {
        let ctx = ExportContext {
            catalog: catalog(),
            workload: &w,
            workload_file: "w.toml",
            plans,
        };
        [0, 1, plans.len() + 1]
            .into_iter()
            .map(|rank| export(&ctx, rank, ExportKind::K8s).map_err(|e| e.to_string()))
            .collect()
    };
    let results = ctx(&plans);
    assert_eq!(
        results[0].as_ref().unwrap_err(),
        &format!("--plan 0: expected a plan number from 1 to {}", plans.len())
    );
    assert!(results[1].is_ok());
    assert!(results[2].is_err());
    plans[0].provider = "coreweave".into();
    let c = ExportContext {
        catalog: catalog(),
        workload: &w,
        workload_file: "w.toml",
        plans: &plans,
    };
    let e = export(&c, 1, ExportKind::SkyPilot).unwrap_err();
    assert!(
        matches!(e, ExportError::NotASkyPilotCloud { .. }) && !e.is_internal(),
        "{e}"
    );
    assert!(e.to_string().contains("lambda"), "{e}");
    plans[0].gpu = "Qualcomm-AI100-Standard-16GB".into();
    let c = ExportContext {
        catalog: catalog(),
        workload: &w,
        workload_file: "w.toml",
        plans: &plans,
    };
    let e = export(&c, 1, ExportKind::K8s).unwrap_err();
    assert!(
        matches!(e, ExportError::UnsupportedAccelerator { .. }),
        "{e}"
    );
    plans[0].launch_command = "python -m vllm".into();
    let c = ExportContext {
        catalog: catalog(),
        workload: &w,
        workload_file: "w.toml",
        plans: &plans,
    };
    let e = export(&c, 1, ExportKind::Engine).unwrap_err();
    assert!(e.is_internal(), "{e}");
    // A plan on another engine: a user-facing refusal naming it, never a
    // vLLM file with that engine's command in it.
    plans[0].engine = gpuplan_core::Engine::Sglang;
    plans[0].launch_command = "python -m sglang.launch_server --model-path m".into();
    let c = ExportContext {
        catalog: catalog(),
        workload: &w,
        workload_file: "w.toml",
        plans: &plans,
    };
    for kind in [ExportKind::K8s, ExportKind::SkyPilot] {
        let e = export(&c, 1, kind).unwrap_err();
        assert!(
            matches!(e, ExportError::EngineNotExported { .. }) && !e.is_internal(),
            "{e}"
        );
        assert!(e.to_string().contains("SGLang"), "{e}");
    }
    // The engine export writes its launch script with exactly those flags.
    let files = export(&c, 1, ExportKind::Engine).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].name, "sglang-serve.sh");
    assert!(
        files[0]
            .contents
            .contains("exec python -m sglang.launch_server \\\n  --model-path m \\\n  \"$@\"\n"),
        "{}",
        files[0].contents
    );
    // A command that is not the engine's program is a bug, said as one.
    plans[0].launch_command = "vllm serve m".into();
    let c = ExportContext {
        catalog: catalog(),
        workload: &w,
        workload_file: "w.toml",
        plans: &plans,
    };
    assert!(export(&c, 1, ExportKind::Engine).unwrap_err().is_internal());
}
