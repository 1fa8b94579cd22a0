//! `gpuplan mig --export mig-parted`: the YAML parses back into the schema,
//! and its configs hold exactly the plan's MIG instances.

use gpuplan_catalog::Catalog;
use gpuplan_core::{parse_fleet, plan_fleet, Calibration, WorkloadFormat};
use gpuplan_report::{mig_parted, Devices, MigPartedConfig};
use std::collections::BTreeMap;

#[test]
fn mig_parted_export_parses_back_with_the_plan_s_instances() {
    let catalog = Catalog::embedded().unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fleets/fleet-12.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let fleet = parse_fleet(path, &text, WorkloadFormat::Toml)
        .and_then(|raw| raw.validate(path, &catalog))
        .unwrap();
    let report = plan_fleet(&catalog, &Calibration::bundled(), &fleet, Some("H100")).unwrap();
    assert!(report.feasible);
    let yaml = mig_parted(&report).unwrap();
    assert!(yaml.starts_with("# gpuplan mig: fleet fleet-12"), "{yaml}");
    let parsed: MigPartedConfig = serde_norway::from_str(&yaml).unwrap();
    assert_eq!(parsed.version, "v1");
    // Each node line of the header names a config; summing each node's
    // config over its GPUs gives back the plan's profile counts.
    let per_node = report.purchase.as_ref().unwrap().gpus_per_instance as u32;
    let mut exported: BTreeMap<String, u32> = BTreeMap::new();
    for line in yaml.lines().filter(|l| l.starts_with("# node ")) {
        let name = line
            .split(" -c ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        for group in &parsed.mig_configs[name] {
            let gpus = match &group.devices {
                Devices::All(all) => {
                    assert_eq!(all, "all");
                    per_node
                }
                Devices::List(list) => list.len() as u32,
            };
            assert_eq!(group.mig_enabled, !group.mig_devices.is_empty());
            for (profile, n) in &group.mig_devices {
                *exported.entry(profile.clone()).or_default() += n * gpus;
            }
        }
    }
    let mut planned: BTreeMap<String, u32> = BTreeMap::new();
    for g in &report.gpus {
        for s in &g.layout {
            *planned.entry(s.profile.clone()).or_default() += 1;
        }
    }
    assert_eq!(exported, planned);
}

#[test]
fn mig_k8s_export_requests_each_service_s_mig_device() {
    let catalog = Catalog::embedded().unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fleets/fleet-12.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let fleet = parse_fleet(path, &text, WorkloadFormat::Toml)
        .and_then(|raw| raw.validate(path, &catalog))
        .unwrap();
    let report = plan_fleet(&catalog, &Calibration::bundled(), &fleet, Some("H100")).unwrap();
    let yaml = gpuplan_report::mig_k8s(&report, &catalog).unwrap();
    let docs: Vec<serde_norway::Value> = yaml
        .split("\n---\n")
        .map(|d| serde_norway::from_str(d).unwrap())
        .collect();
    let deployments: Vec<&serde_norway::Value> =
        docs.iter().filter(|d| d["kind"] == "Deployment").collect();
    assert_eq!(deployments.len(), report.services.len());
    assert_eq!(
        docs.iter().filter(|d| d["kind"] == "Service").count(),
        report.services.len()
    );
    // Replicas × one MIG device per pod = the plan's instances of each profile.
    let mut requested: BTreeMap<String, u64> = BTreeMap::new();
    for d in &deployments {
        let replicas = d["spec"]["replicas"].as_u64().unwrap();
        let limits = d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
            .as_mapping()
            .unwrap();
        assert_eq!(limits.len(), 1);
        let (resource, qty) = limits.iter().next().unwrap();
        assert_eq!(qty.as_str(), Some("1"));
        let profile = resource
            .as_str()
            .unwrap()
            .strip_prefix("nvidia.com/mig-")
            .unwrap();
        *requested.entry(profile.to_string()).or_default() += replicas;
        let args = d["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_sequence()
            .unwrap();
        assert!(args.iter().any(|a| a == "--max-num-seqs"));
    }
    let mut planned: BTreeMap<String, u64> = BTreeMap::new();
    for g in &report.gpus {
        for s in &g.layout {
            *planned.entry(s.profile.clone()).or_default() += 1;
        }
    }
    assert_eq!(requested, planned);
}
