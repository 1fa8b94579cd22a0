//! The named efficiency factors of the training step-time model
//! (`data/training_calibration.csv`), fitted only on the training-throughput
//! rows of `benchmarks_dev.csv` by `gpuplan validate --fit`.
//!
//! Same format and rules as the inference table ([`Calibration`]): every
//! factor named once, each value within its bounds.

use super::step::AttentionKernel;
use crate::calibration::{family, precision_class, Calibration};
use crate::error::Result;
use gpuplan_catalog::{GpuSpec, Precision};

/// The bundled training calibration table.
pub const BUNDLED_TRAINING_CALIBRATION: &str =
    include_str!("../../../../data/training_calibration.csv");

const TABLE_NAME: &str = "data/training_calibration.csv";

/// The training factors, with typed accessors.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainingFactors {
    /// The table (same row type as the inference calibration).
    pub table: Calibration,
}

impl TrainingFactors {
    /// The bundled factors.
    pub fn bundled() -> TrainingFactors {
        TrainingFactors {
            table: Calibration::parse_against(
                BUNDLED_TRAINING_CALIBRATION,
                BUNDLED_TRAINING_CALIBRATION,
                TABLE_NAME,
            )
            .unwrap_or(Calibration {
                factors: Vec::new(),
            }),
        }
    }

    /// Parses a user's table: every bundled training factor exactly once,
    /// each within its bundled bounds.
    pub fn parse(text: &str) -> Result<TrainingFactors> {
        Ok(TrainingFactors {
            table: Calibration::parse_against(text, BUNDLED_TRAINING_CALIBRATION, TABLE_NAME)?,
        })
    }

    fn value(&self, name: &str) -> Option<f64> {
        self.table.get(name)
    }

    /// Achieved share of the dense tensor peak in large training GEMMs for
    /// this GPU family and GEMM precision; families without a fitted factor
    /// use the mean of the fitted ones at that precision class, then all.
    pub fn gemm_efficiency(&self, gpu: &GpuSpec, compute: Precision) -> f64 {
        let class = precision_class(compute);
        self.value(&format!("training_gemm_efficiency.{}.{class}", family(gpu)))
            .or_else(|| {
                let v: Vec<f64> = self
                    .table
                    .factors
                    .iter()
                    .filter(|f| {
                        f.name.starts_with("training_gemm_efficiency.")
                            && f.name.ends_with(&format!(".{class}"))
                    })
                    .map(|f| f.value)
                    .collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            })
            .or_else(|| self.table.mean_of("training_gemm_efficiency."))
            .unwrap_or(f64::NAN)
    }

    /// Whether this family and precision have a fitted GEMM factor.
    pub fn has_family(&self, gpu: &GpuSpec, compute: Precision) -> bool {
        self.value(&format!(
            "training_gemm_efficiency.{}.{}",
            family(gpu),
            precision_class(compute)
        ))
        .is_some()
    }

    /// Achieved share of the 16-bit tensor peak in fused (flash) attention,
    /// forward and backward.
    pub fn attention_efficiency(&self, kernel: AttentionKernel) -> f64 {
        self.value(&format!(
            "training_attention_efficiency.{}",
            kernel.as_str()
        ))
        .unwrap_or(f64::NAN)
    }

    /// Achieved share of the link bandwidth (NVLink per direction, or the
    /// NIC line rate) in large NCCL collectives.
    pub fn collective_efficiency(&self) -> f64 {
        self.value("training_collective_efficiency")
            .unwrap_or(f64::NAN)
    }

    /// Share of the compute that data-parallel communication can hide behind.
    pub fn dp_overlap(&self) -> f64 {
        self.value("training_dp_overlap").unwrap_or(f64::NAN)
    }
}
