//! A fleet's MIG plan as an NVIDIA mig-parted config (schema v1, see
//! `data/mig_notes.md`): one named config per distinct node layout, each a
//! list of device groups with the profile counts of their GPUs. mig-parted
//! places the instances itself; the file carries counts, not starts.
//! Apply with `nvidia-mig-parted apply -f FILE -c NAME`, or label the node
//! `nvidia.com/mig.config=NAME` for the GPU Operator's MIG manager.

use crate::error::ExportError;
use gpuplan_core::{FleetReport, GpuAssignment};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A mig-parted config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigPartedConfig {
    /// Schema version: `v1`.
    pub version: String,
    /// Config name → device groups.
    #[serde(rename = "mig-configs")]
    pub mig_configs: BTreeMap<String, Vec<DeviceGroup>>,
}

/// GPUs of a node that share one MIG setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceGroup {
    /// `all`, or the GPU indices on the node.
    pub devices: Devices,
    /// Whether MIG mode is on.
    #[serde(rename = "mig-enabled")]
    pub mig_enabled: bool,
    /// Profile name → instances per GPU of the group.
    #[serde(
        rename = "mig-devices",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub mig_devices: BTreeMap<String, u32>,
}

/// `devices:` of a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Devices {
    /// `all`.
    All(String),
    /// GPU indices on the node.
    List(Vec<u32>),
}

/// The profile counts of one GPU.
fn counts(g: &GpuAssignment) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for s in &g.layout {
        *out.entry(s.profile.clone()).or_default() += 1;
    }
    out
}

/// The device groups of one node: its GPUs grouped by identical counts;
/// GPUs the plan leaves empty keep MIG off.
fn node_groups(gpus: &[&GpuAssignment], per_node: u32) -> Vec<DeviceGroup> {
    let mut groups: Vec<(BTreeMap<String, u32>, Vec<u32>)> = Vec::new();
    for index in 0..per_node {
        let c = gpus
            .get(index as usize)
            .map(|g| counts(g))
            .unwrap_or_default();
        match groups.iter_mut().find(|(k, _)| *k == c) {
            Some((_, list)) => list.push(index),
            None => groups.push((c, vec![index])),
        }
    }
    let whole_node = groups.len() == 1;
    groups
        .into_iter()
        .map(|(mig_devices, list)| DeviceGroup {
            devices: if whole_node {
                Devices::All("all".into())
            } else {
                Devices::List(list)
            },
            mig_enabled: !mig_devices.is_empty(),
            mig_devices,
        })
        .collect()
}

/// The config file of a feasible fleet plan, with a header naming the
/// config each node takes.
pub fn mig_parted(report: &FleetReport) -> Result<String, ExportError> {
    let Some(buy) = report.purchase.as_ref().filter(|_| report.feasible) else {
        return Err(ExportError::NoFleetPlan {
            fleet: report.fleet.clone(),
        });
    };
    // GPUs per node: the instance's whole number of GPUs.
    let per_node = buy.gpus_per_instance.round().max(1.0) as u32;
    let nodes: Vec<Vec<&GpuAssignment>> = report
        .gpus
        .chunks(per_node as usize)
        .map(|c| c.iter().collect())
        .collect();
    let mut configs: BTreeMap<String, Vec<DeviceGroup>> = BTreeMap::new();
    let mut node_config: Vec<String> = Vec::new();
    for node in &nodes {
        let groups = node_groups(node, per_node);
        let name = match configs.iter().find(|(_, g)| **g == groups) {
            Some((name, _)) => name.clone(),
            None => {
                let name = format!("gpuplan-{}-{}", report.fleet, configs.len() + 1);
                configs.insert(name.clone(), groups);
                name
            }
        };
        node_config.push(name);
    }
    let file = MigPartedConfig {
        version: "v1".into(),
        mig_configs: configs,
    };
    let body = serde_norway::to_string(&file).map_err(|source| ExportError::Yaml {
        file: "mig-parted.yaml",
        source,
    })?;
    let mut header = format!(
        "# gpuplan mig: fleet {}, {} × {} on {} × {} ({}), ${:.2}/h\n",
        report.fleet,
        report.total_gpus,
        report.gpu.as_deref().unwrap_or("GPU"),
        buy.instances,
        buy.instance_type,
        buy.provider,
        report.usd_per_hour
    );
    for (i, name) in node_config.iter().enumerate() {
        header.push_str(&format!(
            "# node {}: nvidia-mig-parted apply -f mig-parted.yaml -c {name} (or label nvidia.com/mig.config={name})\n",
            i + 1
        ));
    }
    Ok(header + &body)
}
