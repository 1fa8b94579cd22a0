//! The named efficiency factors of the performance model (`data/calibration.csv`).
//!
//! Each factor has a meaning and bounds; they are fitted only on the
//! inference rows of `benchmarks_dev.csv` by `gpuplan validate --fit`.

use crate::error::{CoreError, Result};
use gpuplan_catalog::{GpuSpec, Precision};

/// The bundled calibration table.
pub const BUNDLED_CALIBRATION: &str = include_str!("../../../data/calibration.csv");

/// One factor as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Factor {
    /// Name (`compute_efficiency.Hopper.8`, `iteration_overhead_ms` ...).
    pub name: String,
    /// Value.
    pub value: f64,
    /// Lowest physically sensible value.
    pub min: f64,
    /// Highest physically sensible value.
    pub max: f64,
    /// What it means.
    pub meaning: String,
}

/// All factors, with typed accessors.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The factors in file order.
    pub factors: Vec<Factor>,
}

/// Architecture family used to key efficiency factors.
pub fn family(gpu: &GpuSpec) -> &str {
    match gpu.architecture.as_str() {
        "Ada Lovelace" => "Ada",
        other => other,
    }
}

/// Precision class of the tensor units a GEMM runs on: "16", "8" or "4".
pub fn precision_class(compute: Precision) -> &'static str {
    match compute {
        Precision::Fp8 | Precision::Int8 => "8",
        Precision::Fp4 => "4",
        _ => "16",
    }
}

impl Calibration {
    /// The bundled factors.
    pub fn bundled() -> Calibration {
        // The bundled table is checked by a unit test; fall back to nothing can't happen.
        Calibration::parse(BUNDLED_CALIBRATION).unwrap_or(Calibration { factors: vec![] })
    }

    /// Parses the CSV (`name,value,min,max,meaning`).
    pub fn parse(text: &str) -> Result<Calibration> {
        let mut factors = Vec::new();
        for (i, line) in text.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let mut parts = line.splitn(5, ',');
            let mut next = || parts.next().unwrap_or("").trim().to_string();
            let name = next();
            let nums: Vec<String> = (0..3).map(|_| next()).collect();
            let meaning = next().trim_matches('"').to_string();
            let parse = |s: &str, what: &str| {
                s.parse::<f64>().map_err(|_| {
                    CoreError::invalid(
                        format!("calibration.csv line {} {what}", i + 1),
                        s,
                        "a number",
                    )
                })
            };
            let f = Factor {
                value: parse(&nums[0], "value")?,
                min: parse(&nums[1], "min")?,
                max: parse(&nums[2], "max")?,
                meaning,
                name,
            };
            if !(f.min <= f.value && f.value <= f.max) {
                return Err(CoreError::invalid(
                    format!("calibration.csv line {} value", i + 1),
                    f.value.to_string(),
                    format!("within [{}, {}]", f.min, f.max),
                ));
            }
            factors.push(f);
        }
        Ok(Calibration { factors })
    }

    /// Writes the CSV back.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("name,value,min,max,meaning\n");
        for f in &self.factors {
            out.push_str(&format!(
                "{},{:.4},{},{},\"{}\"\n",
                f.name, f.value, f.min, f.max, f.meaning
            ));
        }
        out
    }

    /// A factor by name.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.factors
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.value)
    }

    fn get_or(&self, name: &str, default: f64) -> f64 {
        self.get(name).unwrap_or(default)
    }

    /// Mean of the factors whose name starts with `prefix`.
    fn mean_of(&self, prefix: &str) -> Option<f64> {
        let v: Vec<f64> = self
            .factors
            .iter()
            .filter(|f| f.name.starts_with(prefix))
            .map(|f| f.value)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// Achieved share of tensor peak for this GPU family and compute precision.
    /// Families or precisions without a fitted factor use the same family's
    /// other precision, else the mean of all fitted compute factors.
    pub fn compute_efficiency(&self, gpu: &GpuSpec, compute: Precision) -> f64 {
        let fam = family(gpu);
        self.get(&format!(
            "compute_efficiency.{fam}.{}",
            precision_class(compute)
        ))
        .or_else(|| self.mean_of(&format!("compute_efficiency.{fam}.")))
        .or_else(|| self.mean_of("compute_efficiency."))
        .unwrap_or(0.5)
    }

    /// Achieved share of memory bandwidth for this GPU family (mean of the
    /// fitted families when the family has none).
    pub fn bandwidth_efficiency(&self, gpu: &GpuSpec) -> f64 {
        self.get(&format!("bandwidth_efficiency.{}", family(gpu)))
            .or_else(|| self.mean_of("bandwidth_efficiency."))
            .unwrap_or(0.8)
    }

    /// Whether the GPU's family has fitted factors (else the estimate extrapolates).
    pub fn has_family(&self, gpu: &GpuSpec) -> bool {
        self.get(&format!("bandwidth_efficiency.{}", family(gpu)))
            .is_some()
    }

    /// NVLink all-reduce efficiency.
    pub fn allreduce_nvlink_efficiency(&self) -> f64 {
        self.get_or("allreduce_nvlink_efficiency", 0.6)
    }

    /// Effective PCIe gen4 all-reduce bandwidth, GB/s.
    pub fn allreduce_pcie_gen4_gbps(&self) -> f64 {
        self.get_or("allreduce_pcie_gen4_gbps", 16.0)
    }

    /// Ring-step latency over NVLink, seconds.
    pub fn hop_latency_nvlink_s(&self) -> f64 {
        self.get_or("allreduce_hop_latency_nvlink_us", 3.0) * 1e-6
    }

    /// Ring-step latency over PCIe, seconds.
    pub fn hop_latency_pcie_s(&self) -> f64 {
        self.get_or("allreduce_hop_latency_pcie_us", 6.0) * 1e-6
    }

    /// Fixed cost per iteration per pipeline stage, seconds.
    pub fn iteration_overhead_s(&self) -> f64 {
        self.get_or("iteration_overhead_ms", 3.0) * 1e-3
    }

    /// Roofline overlap exponent.
    pub fn roofline_exponent(&self) -> f64 {
        self.get_or("roofline_overlap_exponent", 1.4)
    }

    /// Expert GEMM efficiency relative to dense.
    pub fn moe_gemm_efficiency(&self) -> f64 {
        self.get_or("moe_gemm_efficiency", 0.7)
    }

    /// TensorRT-LLM runtime memory reserve, GiB.
    pub fn trtllm_reserve_gib(&self) -> f64 {
        self.get_or("trtllm_runtime_reserve_gib", 2.85)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_table_parses_and_round_trips() {
        let c = Calibration::parse(BUNDLED_CALIBRATION).unwrap();
        assert!(c.factors.len() >= 10);
        let again = Calibration::parse(&c.to_csv()).unwrap();
        assert_eq!(c.factors.len(), again.factors.len());
        for (a, b) in c.factors.iter().zip(&again.factors) {
            assert_eq!(a.name, b.name);
            assert!((a.value - b.value).abs() < 1e-4);
            assert_eq!(a.meaning, b.meaning);
        }
    }

    #[test]
    fn every_efficiency_is_a_fraction() {
        let c = Calibration::bundled();
        for f in &c.factors {
            if f.name.contains("efficiency") {
                assert!(f.value > 0.0 && f.value <= 1.0, "{}", f.name);
            }
        }
    }
}
