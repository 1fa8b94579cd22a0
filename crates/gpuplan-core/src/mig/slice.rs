//! A share of a GPU as a [`GpuSpec`] the inference model runs on unchanged:
//! a MIG instance (its compute slices' share of the SMs, its memory slices'
//! share of bandwidth, its profile's usable memory), a fractional cloud GPU
//! (AWS g6f: a fixed share of everything), or a time-sliced share without
//! isolation.
//!
//! The scaled spec keeps the GPU's name and architecture, so the engine's
//! kernel and checkpoint rules and the calibrated efficiencies of the family
//! apply as on the whole GPU; only the peaks and the memory shrink.

use super::geometry::{MigGeometry, SliceProfile};
use crate::memory::REPORTED_CAPACITY_FRACTION;
use gpuplan_catalog::GpuSpec;

/// SMs of an A100 (NVIDIA A100 whitepaper: 108 SMs enabled).
const A100_SMS: f64 = 108.0;

/// SMs MIG mode hands out on an A100: 7 compute slices of 14 SMs (a 1g
/// instance reports 14 multiprocessors, `deviceQuery` in MIG mode, NJIT ARCS
/// "MIG Profile Comparison" of A100-SXM4-80GB); the other 10 stay idle.
const A100_MIG_SMS: f64 = 7.0 * 14.0;

/// The A100-class parts whose MIG mode leaves SMs idle (A800 is the same die).
const A100_CLASS: [&str; 6] = [
    "A100-SXM-40GB",
    "A100-PCIe-40GB",
    "A100-SXM-80GB",
    "A100-PCIe-80GB",
    "A800-SXM-80GB",
    "A800-PCIe-80GB",
];

/// Share of a GPU's SMs that MIG mode can hand out to its compute slices.
///
/// A100: 98 of 108 (measured). A30: 4 slices of 14 SMs = all 56. For the
/// Hopper and Blackwell parts no per-instance SM count was found in the
/// corpus; they are taken as all SMs usable (the User Guide's "fraction of
/// SMs" = slices/7), an upper bound on a slice's compute.
pub fn mig_usable_sm_fraction(gpu: &GpuSpec) -> f64 {
    if A100_CLASS.contains(&gpu.name.as_str()) {
        A100_MIG_SMS / A100_SMS
    } else {
        1.0
    }
}

/// The GPU as seen from inside one MIG instance of `profile`.
pub fn mig_instance_gpu(gpu: &GpuSpec, geometry: &MigGeometry, profile: &SliceProfile) -> GpuSpec {
    // Share of the whole GPU's tensor and vector peaks: the instance's
    // compute slices out of the GPU's, of the SMs MIG mode uses.
    let compute_share = f64::from(profile.compute_slices) / f64::from(geometry.compute_slices)
        * mig_usable_sm_fraction(gpu);
    // Share of HBM bandwidth (and L2): memory slices out of the GPU's.
    let memory_share = f64::from(profile.memory_slices) / f64::from(geometry.memory_slices);
    // `memory_gib` of a profile is what CUDA reports already; the memory model
    // takes REPORTED_CAPACITY_FRACTION of the advertised size, so undo it.
    // Without a capture: the memory slices' share of the advertised memory.
    let memory_gib = profile
        .memory_gib
        .map(|reported| reported / REPORTED_CAPACITY_FRACTION)
        .unwrap_or(gpu.memory_gib * memory_share);
    scaled(gpu, compute_share, memory_share, memory_gib)
}

/// A fixed `fraction` of every resource of `gpu`: a fractional cloud GPU
/// (AWS g6f) or a time-sliced share.
pub fn fractional_gpu(gpu: &GpuSpec, fraction: f64) -> GpuSpec {
    scaled(gpu, fraction, fraction, gpu.memory_gib * fraction)
}

/// `gpu` with its compute peaks times `compute_share`, its bandwidth times
/// `bandwidth_share` and `memory_gib` of memory; no scale-up link (an
/// instance serves alone: TP 1) and no MIG of its own.
fn scaled(gpu: &GpuSpec, compute_share: f64, bandwidth_share: f64, memory_gib: f64) -> GpuSpec {
    let times = |v: Option<f64>| v.map(|x| x * compute_share);
    GpuSpec {
        memory_gib,
        memory_bandwidth_gbps: gpu.memory_bandwidth_gbps * bandwidth_share,
        fp32_tflops: times(gpu.fp32_tflops),
        tf32_tflops: times(gpu.tf32_tflops),
        bf16_tflops: times(gpu.bf16_tflops),
        fp16_tflops: times(gpu.fp16_tflops),
        fp8_tflops: times(gpu.fp8_tflops),
        int8_tops: times(gpu.int8_tops),
        fp4_tflops: times(gpu.fp4_tflops),
        nvlink_gbps: 0.0,
        mig_max_instances: 0,
        ..gpu.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{catalog, gpu};

    #[test]
    fn a_3g_instance_of_an_h100_has_three_sevenths_of_compute_and_half_the_bandwidth() {
        let h100 = gpu("H100-SXM-80GB");
        let g = MigGeometry::of(catalog(), "H100-SXM-80GB").unwrap();
        let p = &g.profiles[g.profile_index("3g.40gb").unwrap()];
        let s = mig_instance_gpu(h100, &g, p);
        // 989.4 × 3/7 = 424.03 TFLOP/s; 3350 × 4/8 = 1675 GB/s.
        assert!((s.bf16_tflops.unwrap() - 424.03).abs() < 0.01);
        assert!((s.memory_bandwidth_gbps - 1675.0).abs() < 1e-9);
        // 39.5 GiB reported: the memory model's 99 % of it gives 39.5 back.
        assert!((s.memory_gib * REPORTED_CAPACITY_FRACTION - 39.5).abs() < 1e-9);
        assert_eq!((s.nvlink_gbps, s.name.as_str()), (0.0, "H100-SXM-80GB"));
    }

    #[test]
    fn an_a100_slice_has_fourteen_of_its_108_sms() {
        let a100 = gpu("A100-SXM-80GB");
        let g = MigGeometry::of(catalog(), "A100-SXM-80GB").unwrap();
        let p = &g.profiles[g.profile_index("1g.10gb").unwrap()];
        let s = mig_instance_gpu(a100, &g, p);
        // 312 × 14/108 = 40.44 TFLOP/s.
        assert!((s.bf16_tflops.unwrap() - 40.444).abs() < 0.01);
    }

    #[test]
    fn a_fraction_scales_everything() {
        let l4 = gpu("L4-24GB");
        let s = fractional_gpu(l4, 0.125);
        // 24 GiB / 8 = 3; 300 GB/s / 8 = 37.5; 121 / 8 = 15.125.
        assert_eq!(s.memory_gib, 3.0);
        assert_eq!(s.memory_bandwidth_gbps, 37.5);
        assert_eq!(s.bf16_tflops, Some(15.125));
    }
}
