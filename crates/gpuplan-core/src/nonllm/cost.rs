//! Time of a forward pass on one GPU: the LLM engines' roofline with the
//! GPU's dense tensor rate at the compute precision, the efficiencies fitted
//! on the LLM benchmarks (`data/calibration.csv`), and one achieved-share
//! factor per family (`data/nonllm_calibration.csv`).

use super::work::Work;
use crate::calibration::Calibration;
use crate::engine::tensor_tflops;
use crate::perf::roofline;
use gpuplan_catalog::{GpuSpec, NonLlmFamily, Precision};

/// The bundled per-family factors, fitted on the non-LLM rows of
/// `benchmarks_dev_2.csv` (`gpuplan validate --set mlperf --fit`).
pub const BUNDLED_NONLLM_CALIBRATION: &str =
    include_str!("../../../../data/nonllm_calibration.csv");

/// The per-family factors (a [`Calibration`] table of their own).
pub fn bundled_factors() -> Calibration {
    // The bundled file is checked by a unit test; an unreadable one yields an
    // empty table, whose lookups fall back to 1.
    Calibration::parse_against(
        BUNDLED_NONLLM_CALIBRATION,
        BUNDLED_NONLLM_CALIBRATION,
        "data/nonllm_calibration.csv",
    )
    .unwrap_or(Calibration {
        factors: Vec::new(),
    })
}

/// Achieved share of the roofline time a family's engines reach.
pub fn family_efficiency(factors: &Calibration, family: NonLlmFamily) -> f64 {
    factors
        .get(&format!("nonllm_efficiency.{}", family.as_str()))
        .unwrap_or(1.0)
}

/// Achieved share of the LLM-calibrated 8-bit (INT8/FP8) tensor rate that a
/// family's engines reach (`nonllm_8bit_efficiency.<family>`, 1 when the
/// table has none). MLPerf's INT8 BERT runs only ~1.13× its FP16 speed on
/// the same H100/H200, not the 2× of the peaks that the LLM rows' FP8
/// efficiency (K = 4096–16384 GEMMs) implies: BERT's K = 1024 GEMMs and the
/// quantise/dequantise kernels around them reach far less of the 8-bit peak.
pub fn eight_bit_share(factors: &Calibration, family: NonLlmFamily) -> f64 {
    factors
        .get(&format!("{EIGHT_BIT_FACTOR}.{}", family.as_str()))
        .unwrap_or(1.0)
}

/// The prefix of the per-family 8-bit factors in `data/nonllm_calibration.csv`.
pub const EIGHT_BIT_FACTOR: &str = "nonllm_8bit_efficiency";

/// The rates one GPU runs a component at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Achieved GEMM/convolution FLOP/s.
    pub gemm_flops_s: f64,
    /// Achieved attention FLOP/s.
    pub attention_flops_s: f64,
    /// Achieved memory bytes/s.
    pub bytes_s: f64,
    /// Bytes per weight.
    pub weight_bytes: f64,
    /// Bytes per activation element.
    pub activation_bytes: f64,
    /// Smooth-roofline exponent.
    pub roof_p: f64,
    /// Family factor (time is divided by it).
    pub family_eff: f64,
}

impl Rates {
    /// Rates for weights at `precision`: GEMMs at that precision's dense
    /// tensor rate (8-bit attention too, as TensorRT's fused 8-bit MHA runs;
    /// else 16-bit), activations in 16 bits (32 for FP32). 8-bit rates are
    /// scaled by `eight_bit_share` (see [`eight_bit_share`]).
    pub fn new(
        gpu: &GpuSpec,
        precision: Precision,
        cal: &Calibration,
        family_eff: f64,
        eight_bit_share: f64,
    ) -> Result<Rates, String> {
        // 4-bit weights: no diffusion/speech/encoder engine in scope runs
        // 4-bit GEMMs, so they compute at the 16-bit rate (W4A16).
        let compute = match precision {
            Precision::Int4 | Precision::Fp4 => Precision::Fp16,
            p => p,
        };
        let gemm = tensor_tflops(gpu, compute).ok_or_else(|| {
            format!(
                "{} publishes no {} tensor throughput (gpus.csv)",
                gpu.name, compute
            )
        })?;
        let attention_precision = match compute {
            Precision::Fp32 | Precision::Fp8 | Precision::Int8 => compute,
            _ => Precision::Fp16,
        };
        let attention = tensor_tflops(gpu, attention_precision).unwrap_or(gemm);
        let activation_bytes = if compute == Precision::Fp32 { 4.0 } else { 2.0 };
        let share = |p: Precision| {
            if matches!(p, Precision::Int8 | Precision::Fp8) {
                eight_bit_share
            } else {
                1.0
            }
        };
        Ok(Rates {
            gemm_flops_s: gemm * 1e12 * cal.compute_efficiency(gpu, compute) * share(compute),
            attention_flops_s: attention
                * 1e12
                * cal.compute_efficiency(gpu, attention_precision)
                * share(attention_precision),
            bytes_s: gpu.memory_bandwidth_gbps * 1e9 * cal.bandwidth_efficiency(gpu),
            weight_bytes: precision.bytes_per_element(),
            activation_bytes,
            roof_p: cal.roofline_exponent(),
            family_eff,
        })
    }

    /// Seconds for `work`, reading `weight_params` weights once and
    /// `extra_bytes` more (caches): smooth roofline of compute and memory
    /// time, divided by the family factor.
    pub fn time_s(&self, work: &Work, weight_params: f64, extra_bytes: f64) -> f64 {
        let compute =
            work.gemm_flops / self.gemm_flops_s + work.attention_flops / self.attention_flops_s;
        // Weights once; each activation written once and read once.
        let bytes = weight_params * self.weight_bytes
            + 2.0 * work.activation_elems * self.activation_bytes
            + extra_bytes;
        let memory = bytes / self.bytes_s;
        roofline(compute, memory, self.roof_p) / self.family_eff
    }

    /// Whether compute (rather than memory traffic) dominates `work`.
    pub fn compute_bound(&self, work: &Work, weight_params: f64, extra_bytes: f64) -> bool {
        let compute =
            work.gemm_flops / self.gemm_flops_s + work.attention_flops / self.attention_flops_s;
        let bytes = weight_params * self.weight_bytes
            + 2.0 * work.activation_elems * self.activation_bytes
            + extra_bytes;
        compute >= bytes / self.bytes_s
    }
}
