//! The links a training job's collectives run over: the scale-up fabric
//! inside a node (NVLink / Infinity Fabric / PCIe) and the scale-out network
//! between nodes (EFA, InfiniBand, RoCE, or plain Ethernet).

use crate::calibration::Calibration;
use gpuplan_catalog::{GpuSpec, Offering, ScaleUp};
use serde::Serialize;

/// Scale-out bandwidth assumed for an instance whose network the catalog does
/// not state, Gb/s per instance: the 100 Gb/s Ethernet of GPU VMs without an
/// RDMA fabric (e.g. AWS g5/g6.48xlarge, GCP a2/g2 at their largest size).
pub const UNSTATED_NETWORK_GBITS: f64 = 100.0;

/// What the GPUs of one job are connected by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fabric {
    /// GPUs per node (instance).
    pub gpus_per_node: u32,
    /// Bandwidth one GPU can send inside the node in a collective, bytes/s,
    /// before efficiency (NVLink per direction, or the PCIe all-reduce rate).
    pub intra_node_bytes_s: f64,
    /// Whether the scale-up link is NVLink-class (else PCIe).
    pub nvlink_class: bool,
    /// One GPU's share of the node's scale-out network, bytes/s, line rate.
    pub network_bytes_s_per_gpu: f64,
    /// Node network, Gb/s, as stated or assumed.
    pub network_gbits: f64,
    /// Whether the network is an RDMA fabric fast enough for multi-node training.
    pub fast_fabric: bool,
    /// Whether the network figure is an assumption ([`UNSTATED_NETWORK_GBITS`]).
    pub network_assumed: bool,
}

impl Fabric {
    /// The fabric of a cloud offering with this GPU.
    pub fn of_offering(offering: &Offering, gpu: &GpuSpec, cal: &Calibration) -> Fabric {
        let gpus_per_node = offering.accelerator_count.round().max(1.0) as u32;
        let nvlink = matches!(
            offering.scale_up(),
            ScaleUp::Nvlink | ScaleUp::InfinityFabric | ScaleUp::Neuronlink | ScaleUp::TpuIci
        ) || (offering.scale_up() == ScaleUp::Unknown && gpu.nvlink_gbps > 0.0);
        let (gbits, assumed) = match offering.scale_out_gbits() {
            Some(g) => (g, false),
            None => (UNSTATED_NETWORK_GBITS, true),
        };
        Fabric::new(gpu, gpus_per_node, nvlink, gbits, assumed, cal)
    }

    /// A fabric from its figures: `network_gbits` per node.
    pub fn new(
        gpu: &GpuSpec,
        gpus_per_node: u32,
        nvlink_class: bool,
        network_gbits: f64,
        network_assumed: bool,
        cal: &Calibration,
    ) -> Fabric {
        let gpus_per_node = gpus_per_node.max(1);
        // A PCIe board's NVLink bridge joins pairs of NVL boards only;
        // bigger groups and other boards cross PCIe.
        let nvlink_usable = nvlink_class && gpu.nvlink_joins(gpus_per_node);
        let intra = if nvlink_usable {
            // nvlink_gbps is the bidirectional total: one direction carries half.
            gpu.nvlink_gbps / 2.0 * 1e9
        } else {
            // Effective ring bandwidth over PCIe through the host (fitted on inference).
            let gen = gpu.pcie_gen.unwrap_or(4);
            cal.allreduce_pcie_gen4_gbps() * 1e9 * if gen >= 5 { 2.0 } else { 1.0 }
        };
        Fabric {
            gpus_per_node,
            intra_node_bytes_s: intra,
            nvlink_class: nvlink_usable,
            network_bytes_s_per_gpu: network_gbits * 1e9 / 8.0 / f64::from(gpus_per_node),
            network_gbits,
            fast_fabric: network_gbits >= 1600.0 && !network_assumed,
            network_assumed,
        }
    }

    /// A short label: `NVLink + 3200 Gb/s`.
    pub fn label(&self) -> String {
        format!(
            "{} + {} Gb/s{}",
            if self.nvlink_class { "NVLink" } else { "PCIe" },
            self.network_gbits,
            if self.network_assumed {
                " (assumed)"
            } else {
                ""
            }
        )
    }
}
