//! MLPerf Training LLM benchmarks: what each processes until it converges
//! (`data/mlperf_training.csv`, from the MLCommons reference convergence
//! points and the v5.1 result logs).

use crate::training_memory::FineTuneMethod;
use serde::Deserialize;
use std::sync::OnceLock;

/// The bundled convergence table.
pub const BUNDLED_MLPERF_TRAINING: &str = include_str!("../../../../data/mlperf_training.csv");

/// One MLPerf Training LLM benchmark.
#[derive(Debug, Clone, Copy)]
pub struct MlperfBenchmark {
    /// Key as in `benchmark_datasets` (`llama2_70b_lora`).
    pub key: &'static str,
    /// What is trained: LoRA r=16 on the q/k/v/o projections for the
    /// fine-tuning benchmark (its README), full pre-training otherwise.
    pub method: FineTuneMethod,
    /// Tokens per sample.
    pub seq_len: u64,
}

/// The LLM benchmarks gpuplan predicts.
pub const MLPERF_BENCHMARKS: [MlperfBenchmark; 4] = [
    MlperfBenchmark {
        key: "llama2_70b_lora",
        method: FineTuneMethod::Lora {
            rank: 16,
            all_linear: false,
        },
        seq_len: 8192,
    },
    MlperfBenchmark {
        key: "llama31_8b",
        method: FineTuneMethod::Full,
        seq_len: 8192,
    },
    MlperfBenchmark {
        key: "llama31_405b",
        method: FineTuneMethod::Full,
        seq_len: 8192,
    },
    MlperfBenchmark {
        key: "gpt3",
        method: FineTuneMethod::Full,
        seq_len: 2048,
    },
];

#[derive(Debug, Deserialize)]
struct RawPoint {
    benchmark: String,
    #[allow(dead_code)]
    seq_len: u64,
    global_batch: u64,
    samples_to_converge: f64,
    #[allow(dead_code)]
    points: String,
    eval_every_samples: Option<f64>,
    eval_samples: Option<f64>,
    evals_skipped: Option<f64>,
    #[allow(dead_code)]
    source: String,
}

/// Samples to converge as a function of the global batch, for one benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct Convergence {
    /// (global batch, samples to converge), ascending by batch.
    pub points: Vec<(u64, f64)>,
    /// Evaluation: every so many samples, over so many samples.
    pub eval: Option<(f64, f64)>,
    /// Evaluations the submissions skip at the start (`SKIP_EVALS`).
    pub evals_skipped: f64,
}

fn table() -> &'static Vec<RawPoint> {
    static TABLE: OnceLock<Vec<RawPoint>> = OnceLock::new();
    TABLE.get_or_init(|| {
        csv::Reader::from_reader(BUNDLED_MLPERF_TRAINING.as_bytes())
            .deserialize()
            .filter_map(|r| r.ok())
            .collect()
    })
}

impl Convergence {
    /// The bundled points of a benchmark.
    pub fn of(key: &str) -> Option<Convergence> {
        let mut points: Vec<(u64, f64)> = table()
            .iter()
            .filter(|p| p.benchmark == key)
            .map(|p| (p.global_batch, p.samples_to_converge))
            .collect();
        points.sort_by_key(|p| p.0);
        let eval = table()
            .iter()
            .find(|p| p.benchmark == key)
            .and_then(|p| Some((p.eval_every_samples?, p.eval_samples?)));
        let evals_skipped = table()
            .iter()
            .find(|p| p.benchmark == key)
            .and_then(|p| p.evals_skipped)
            .unwrap_or(0.0);
        (!points.is_empty()).then_some(Convergence {
            points,
            eval,
            evals_skipped,
        })
    }

    /// Samples to converge at `global_batch`: log-linear interpolation between
    /// the published points; outside their range it is not known.
    pub fn samples_at(&self, global_batch: u64) -> Result<f64, String> {
        let (lo, hi) = (self.points[0].0, self.points[self.points.len() - 1].0);
        if global_batch < lo || global_batch > hi {
            return Err(format!(
                "global batch {global_batch} is outside the published convergence points ({lo}..{hi})"
            ));
        }
        for pair in self.points.windows(2) {
            let ((b0, s0), (b1, s1)) = (pair[0], pair[1]);
            if (b0..=b1).contains(&global_batch) {
                if b0 == b1 {
                    return Ok(s0);
                }
                let t = ((global_batch as f64).ln() - (b0 as f64).ln())
                    / ((b1 as f64).ln() - (b0 as f64).ln());
                return Ok(s0 + t * (s1 - s0));
            }
        }
        Ok(self.points[0].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_benchmark_has_points_and_interpolates_between_them() {
        for b in MLPERF_BENCHMARKS {
            let c = Convergence::of(b.key).expect(b.key);
            assert!(c.points.len() >= 3, "{}", b.key);
            for (batch, samples) in &c.points {
                assert_eq!(c.samples_at(*batch).unwrap(), *samples);
            }
        }
        let lora = Convergence::of("llama2_70b_lora").unwrap();
        let mid = lora.samples_at(12).unwrap();
        assert!(mid > 3312.7 && mid < 4051.2, "{mid}");
        assert!(lora.samples_at(4).is_err());
        assert_eq!(lora.eval, Some((384.0, 173.0)));
    }
}
