//! Many services on shared GPUs: NVIDIA MIG geometry, the performance of a
//! slice, fleet workloads and their packing onto priced GPUs.
//!
//! - [`geometry`]: the placement rules of `data/mig_notes.md`, the check of a
//!   user-given combination, the enumeration of every valid layout.

mod geometry;
#[cfg(test)]
mod geometry_tests;

pub use geometry::{
    mig_gpu_names, parse_placements, GpuLayout, LayoutViolation, MigGeometry, Placement,
    SliceProfile, MAX_MEMORY_SLICES,
};
