//! Many services on shared GPUs: NVIDIA MIG geometry, the performance of a
//! slice, fleet workloads and their packing onto priced GPUs.
//!
//! - [`geometry`]: the placement rules of `data/mig_notes.md`, the check of a
//!   user-given combination, the enumeration of every valid layout.
//! - [`slice`]: a MIG instance, a fractional cloud GPU or a time share as a
//!   scaled [`gpuplan_catalog::GpuSpec`] the inference model runs on unchanged.
//! - [`sizing`]: what a service needs on such a device (the planner's own
//!   capacity search).
//! - [`fleet`]: `kind = "fleet"` workloads.
//! - [`pack`]: service instances onto MIG slices of the fewest GPUs (exact
//!   branch and bound for small fleets, first fit decreasing beyond, with a
//!   lower bound).
//! - [`fleet_plan`], [`alternatives`], [`pricing`], [`report`]: the priced
//!   plan and what a user would otherwise do.

mod alternatives;
mod fleet;
mod fleet_plan;
mod geometry;
#[cfg(test)]
mod geometry_tests;
mod pack;
mod pricing;
mod report;
mod sizing;
mod slice;

pub use alternatives::TIME_SHARE_STEPS;
pub use fleet::{parse_fleet, Fleet, RawFleet, FLEET_SERVICES};
pub use fleet_plan::plan_fleet;
pub use geometry::{
    mig_gpu_names, parse_placements, GpuLayout, LayoutViolation, MigGeometry, Placement,
    SliceProfile, MAX_LAYOUTS, MAX_MEMORY_SLICES,
};
pub use pack::{
    lower_bound, pack, GpuContents, GpuShapes, PackMethod, Packing, ServiceDemand, SliceOption,
    EXACT_MAX_COMBINATIONS, EXACT_MAX_INSTANCES, EXACT_NODE_BUDGET, HEURISTIC_RERUNS,
    MAX_PACKED_PROFILES,
};
pub use pricing::InstancePurchase;
pub use report::{
    Alternative, AlternativeLine, Baseline, FleetReport, GpuAssignment, GpuTypeResult,
    ProfileOption, ProfileRejection, ServiceSlices, SliceAssignment,
};
pub use sizing::{device_deployment, fit_on_device, DeviceFit};
pub use slice::{fractional_gpu, mig_instance_gpu, mig_usable_sm_fraction};
