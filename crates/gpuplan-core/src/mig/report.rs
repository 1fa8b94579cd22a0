//! What `plan_fleet` returns (the JSON contract of `gpuplan mig FLEET`).

use super::pack::PackMethod;
use super::pricing::InstancePurchase;
use super::sizing::DeviceFit;
use crate::plan::SimulatedTails;
use serde::Serialize;

/// One MIG instance of a packed GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SliceAssignment {
    /// Profile name (`3g.40gb`).
    pub profile: String,
    /// Start on the memory-slice axis, as `nvidia-smi mig -lgipp` counts it.
    pub start: u32,
    /// The services it serves (one instance of one service).
    pub services: Vec<String>,
}

/// One packed GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuAssignment {
    /// GPU name.
    pub gpu: String,
    /// Its instances, by start.
    pub layout: Vec<SliceAssignment>,
}

/// How one service is served in the MIG plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceSlices {
    /// Service name.
    pub name: String,
    /// Model id.
    pub model: String,
    /// Profile of its instances.
    pub profile: String,
    /// The smallest profile that serves it (fewest slices, then fewest instances).
    pub smallest_profile: String,
    /// Its instances, precision and predicted tails at the peak.
    pub fit: DeviceFit,
    /// Indices (into `gpus`) of the GPUs hosting it.
    pub on_gpus: Vec<usize>,
    /// Every profile that serves it, with the instances it needs.
    pub options: Vec<ProfileOption>,
    /// Profiles that cannot serve it, with the reason.
    pub rejected_profiles: Vec<ProfileRejection>,
    /// Its instances simulated at the peak (`gpuplan mig` verifies every
    /// service; `gpuplan_sim::verify_fleet` fills it).
    pub simulated: Option<SimulatedTails>,
}

/// A profile that serves a service.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileOption {
    /// Profile name.
    pub profile: String,
    /// Instances needed.
    pub instances: u32,
}

/// A profile that cannot serve a service.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileRejection {
    /// Profile name.
    pub profile: String,
    /// Why.
    pub reason: String,
}

/// GPUs and dollars of one way to run the fleet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alternative {
    /// `mig`, `whole_gpu`, `fractional`, `time_sharing`, `heterogeneous`.
    pub name: String,
    /// What it is, in words.
    pub description: String,
    /// Whether services are isolated from each other (memory, faults, bandwidth).
    pub isolated: bool,
    /// GPUs bought (fractional offerings count their fraction).
    pub gpus: f64,
    /// Total, USD per hour (None when it cannot serve the fleet).
    pub usd_per_hour: Option<f64>,
    /// Share of the bought GPUs' compute doing work at the peak.
    pub utilization: f64,
    /// What it buys, per service or in total.
    pub lines: Vec<AlternativeLine>,
    /// Caveats (services it cannot serve, assumptions).
    pub notes: Vec<String>,
}

/// One line of an alternative: a service (or the pool) on some device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlternativeLine {
    /// Service name, or `all` for a shared pool.
    pub service: String,
    /// The device: `A100-SXM-80GB`, `L4-24GB × 1/8 (g6f.large)`, `H100 × 3/8 time share`.
    pub device: String,
    /// Instances of it.
    pub instances: u32,
    /// USD per hour, when priced per line.
    pub usd_per_hour: Option<f64>,
}

/// The whole-GPU baseline of the JSON contract.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baseline {
    /// GPUs: one or more whole GPUs per service.
    pub total_gpus: u32,
    /// USD per hour (None when some service cannot run on one GPU).
    pub usd_per_hour: Option<f64>,
}

/// The MIG plan on one GPU type, as compared between types.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuTypeResult {
    /// GPU name.
    pub gpu: String,
    /// GPUs the packing needs (None when infeasible).
    pub total_gpus: Option<u32>,
    /// USD per hour (None when infeasible or unpriced).
    pub usd_per_hour: Option<f64>,
    /// Why it is infeasible, when it is.
    pub reason: Option<String>,
}

/// The fleet plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetReport {
    /// Fleet name.
    pub fleet: String,
    /// Whether a MIG plan serves every service within the budget.
    pub feasible: bool,
    /// The GPU type of the plan.
    pub gpu: Option<String>,
    /// The packed GPUs and their layouts.
    pub gpus: Vec<GpuAssignment>,
    /// GPUs of the plan.
    pub total_gpus: u32,
    /// USD per hour of the plan (0 when infeasible).
    pub usd_per_hour: f64,
    /// The instances bought.
    pub purchase: Option<InstancePurchase>,
    /// A lower bound on the GPUs of any MIG packing of the fleet on this GPU.
    pub lower_bound_gpus: u32,
    /// `total_gpus − lower_bound_gpus`.
    pub gap_gpus: u32,
    /// Whether `total_gpus` is proven the fewest.
    pub optimal: bool,
    /// How the packing was found.
    pub method: Option<PackMethod>,
    /// One or more whole GPUs of the same type per service.
    pub baseline_whole_gpu: Baseline,
    /// Per service: profile, instances, predicted tails.
    pub services: Vec<ServiceSlices>,
    /// The plan and what a user would otherwise do, compared.
    pub alternatives: Vec<Alternative>,
    /// The MIG plan on every GPU type tried (before simulation, except the
    /// chosen type's, which shows the final plan).
    pub gpu_types: Vec<GpuTypeResult>,
    /// Why no plan is feasible, when none is.
    pub reasons: Vec<String>,
    /// What changed after simulation (services re-sized with a lower
    /// utilisation cap because their simulated p99s missed an SLO).
    pub notes: Vec<String>,
}
