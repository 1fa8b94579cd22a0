//! The sane range of every number the catalog reads, in one place.
//!
//! Each bound is far beyond any real system, so no real row is rejected, but
//! close enough that absurd input (`1e308`, `2^64 − 1`, a typo with six extra
//! zeros) is rejected at the boundary with the file, line, field, the value
//! and the range, instead of overflowing or saturating later and coming out
//! as a plausible wrong number. The bounds also keep every product the models
//! form (parameter counts, bytes per token, tokens per cache) far from the
//! limits of `u64` and exact in `f64`.

/// A closed range of whole numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// Smallest allowed value.
    pub min: u64,
    /// Largest allowed value.
    pub max: u64,
}

impl Count {
    /// The range `min..=max`.
    pub const fn new(min: u64, max: u64) -> Count {
        Count { min, max }
    }

    /// Whether `v` is allowed.
    pub fn contains(self, v: u64) -> bool {
        (self.min..=self.max).contains(&v)
    }

    /// The range in words: "a whole number from 1 to 1048576".
    pub fn describe(self) -> String {
        format!("a whole number from {} to {}", self.min, self.max)
    }
}

/// A range of finite numbers, closed above; open below when `min_exclusive`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Lower bound.
    pub min: f64,
    /// Whether the lower bound itself is excluded (`> min` rather than `>= min`).
    pub min_exclusive: bool,
    /// Largest allowed value.
    pub max: f64,
}

impl Span {
    /// `min < v <= max`.
    pub const fn above(min: f64, max: f64) -> Span {
        Span {
            min,
            min_exclusive: true,
            max,
        }
    }

    /// `min <= v <= max`.
    pub const fn from(min: f64, max: f64) -> Span {
        Span {
            min,
            min_exclusive: false,
            max,
        }
    }

    /// Whether `v` is finite and allowed.
    pub fn contains(self, v: f64) -> bool {
        let low = if self.min_exclusive {
            v > self.min
        } else {
            v >= self.min
        };
        v.is_finite() && low && v <= self.max
    }

    /// The range in words: "a number > 0 and at most 4096".
    pub fn describe(self) -> String {
        if self.min_exclusive {
            format!("a number > {} and at most {}", self.min, self.max)
        } else {
            format!("a number from {} to {}", self.min, self.max)
        }
    }
}

// ---- GPUs (`gpus.csv`) ----

/// Advertised GPU memory, GiB. The largest accelerator in 2026 has 288 GiB;
/// 4096 GiB (4 TiB) on one device is beyond any roadmap.
pub const GPU_MEMORY_GIB: Span = Span::above(0.0, 4096.0);
/// Memory bandwidth, GB/s. The fastest HBM stack today gives 8 TB/s; 1 PB/s is absurd.
pub const GPU_MEMORY_BANDWIDTH_GBPS: Span = Span::above(0.0, 1e6);
/// Any tensor or vector rate, TFLOP/s (TOP/s). The densest FP4 rate today is ~13 PFLOP/s;
/// 1 EFLOP/s on one device is absurd.
pub const GPU_TFLOPS: Span = Span::above(0.0, 1e6);
/// Scale-up bandwidth per GPU, GB/s (0 = PCIe only). NVLink 5 gives 1.8 TB/s.
pub const GPU_NVLINK_GBPS: Span = Span::from(0.0, 1e5);
/// PCIe generation of the host link (gen 7 is the newest specified).
pub const GPU_PCIE_GEN: Count = Count::new(1, 16);
/// Board power, W (today's largest is 1.2 kW).
pub const GPU_TDP_W: Span = Span::from(0.0, 1e5);
/// MIG instances per GPU (NVIDIA's maximum is 7; 0 = no MIG).
pub const GPU_MIG_MAX_INSTANCES: Count = Count::new(0, 64);
/// Year of release.
pub const GPU_RELEASE_YEAR: Count = Count::new(1990, 2100);

// ---- MIG profiles (`mig_profiles.csv`) ----

/// Compute or memory slices of one MIG profile (NVIDIA: at most 7 and 8).
pub const MIG_SLICES: Count = Count::new(1, 64);
/// Instances of one profile per GPU, and valid start slices.
pub const MIG_INSTANCES: Count = Count::new(1, 64);
/// Start slice of a MIG placement.
pub const MIG_START_SLICE: Count = Count::new(0, 63);

// ---- Offerings (`cloud_offerings.csv`, SkyPilot `vms.csv`) and regions ----

/// Accelerators per instance; fractional for GPU slices. The bundled table's
/// largest is a 6144-chip TPU slice; a TPU v5p pod has 8960 chips, so 65536
/// leaves room while `1e12` is rejected.
pub const OFFERING_ACCELERATOR_COUNT: Span = Span::above(0.0, 65536.0);
/// vCPUs per instance (largest today ~1000 per host; pods aggregate hosts).
pub const OFFERING_VCPUS: Span = Span::from(0.0, 1e7);
/// Host memory per instance, GiB (1 PiB).
pub const OFFERING_MEMORY_GIB: Span = Span::from(0.0, 1_048_576.0);
/// Scale-out network bandwidth per instance, Gb/s, as the `interconnect`
/// column states it after a `+` (`nvlink+efa-3200`). The fastest instances
/// today have 6400 Gb/s (8 × 800G); 100 Tb/s leaves room while `efa-1e308`
/// (which would pass every "fast fabric" test) is rejected.
pub const OFFERING_SCALE_OUT_GBITS: Span = Span::above(0.0, 1e5);
/// Price, USD per instance-hour (0 = not offered). The bundled maximum is
/// ~29k USD/h for a whole TPU pod; 10 million USD/h is absurd.
pub const OFFERING_PRICE_USD_PER_HOUR: Span = Span::from(0.0, 1e7);

// ---- Models (`models.csv`, HF `config.json`, parametric GPT ids) ----

/// Widths: hidden, FFN, expert FFN, MLA ranks and head dims. Real models are
/// below 2^17 (the widest FFN in the catalog is 59,392); 2^20 keeps every
/// product of three widths below 2^60.
pub const MODEL_WIDTH: Count = Count::new(1, 1 << 20);
/// Decoder (and encoder) layers. Real models have at most a few hundred.
pub const MODEL_LAYERS: Count = Count::new(1, 1 << 14);
/// Attention and KV heads (real: at most a few hundred).
pub const MODEL_HEADS: Count = Count::new(1, 1 << 14);
/// Vocabulary size (real: at most ~260k).
pub const MODEL_VOCAB: Count = Count::new(1, 1 << 24);
/// Context length, tokens (real: at most 10M, Llama 4 Scout).
pub const MODEL_CONTEXT: Count = Count::new(1, 1 << 27);
/// Routed experts per MoE layer (real: at most 384).
pub const MODEL_EXPERTS: Count = Count::new(1, 1 << 16);
/// Shared experts and leading dense layers (may be 0).
pub const MODEL_SMALL_COUNT: Count = Count::new(0, 1 << 14);
/// Encoder positions and mel bins of an encoder-decoder model.
pub const MODEL_ENCODER_POSITIONS: Count = Count::new(1, 1 << 24);
/// Parameters of one model: 10^14 (100 trillion), 100× the largest trained model.
/// Checked on the computed count, so shapes whose product is absurd are rejected
/// even when each field is in range.
pub const MAX_MODEL_PARAMS: f64 = 1e14;
/// `official_params` in models.csv, billions (= [`MAX_MODEL_PARAMS`]).
pub const MODEL_OFFICIAL_PARAMS_B: Span = Span::above(0.0, 1e5);

// ---- Benchmarks (`benchmarks_*.csv`) ----

/// A benchmark's p99 latency bound, ms (MLPerf's longest is SDXL's 20 s; a day is absurd).
pub const BENCH_LATENCY_MS: Span = Span::above(0.0, 86_400_000.0);

/// GPUs of one measurement (the largest published runs use ~100k GPUs).
pub const BENCH_GPU_COUNT: Count = Count::new(1, 1 << 20);
/// TP, PP or DP degree of one measurement.
pub const BENCH_PARALLEL_DEGREE: Count = Count::new(1, 1 << 20);
/// Input, output or training sequence length, tokens.
pub const BENCH_TOKENS: Count = Count::new(1, 1 << 27);
/// Concurrency or global batch.
pub const BENCH_BATCH: Count = Count::new(1, 1 << 24);
/// A measured value: > 0 (a zero measurement is a missing one). Parameter
/// counts reach 10^12, so the bound is the parameter bound.
pub const BENCH_VALUE: Span = Span::above(0.0, MAX_MODEL_PARAMS);
/// Requests in one burst or benchmark run.
pub const BENCH_REQUESTS: Count = Count::new(1, 1 << 30);
/// Denoising steps of one image.
pub const BENCH_STEPS: Count = Count::new(1, 10_000);
/// Image side, pixels.
pub const BENCH_RESOLUTION_PX: Count = Count::new(1, 1 << 16);
/// Beam width.
pub const BENCH_BEAM: Count = Count::new(1, 1024);
/// Seconds of audio in one run (a year is absurd).
pub const BENCH_AUDIO_S: Span = Span::above(0.0, 3.2e7);
/// Scale-out network per GPU, Gb/s.
pub const BENCH_NETWORK_GBPS: Span = Span::above(0.0, 1e5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_in_words() {
        assert_eq!(
            MODEL_LAYERS.describe(),
            "a whole number from 1 to 16384",
            "counts name both ends"
        );
        assert_eq!(GPU_MEMORY_GIB.describe(), "a number > 0 and at most 4096");
        assert_eq!(GPU_NVLINK_GBPS.describe(), "a number from 0 to 100000");
    }

    #[test]
    fn spans_reject_non_finite_and_bounds() {
        assert!(GPU_MEMORY_GIB.contains(80.0));
        assert!(!GPU_MEMORY_GIB.contains(0.0), "open below");
        assert!(GPU_MEMORY_GIB.contains(4096.0), "closed above");
        assert!(!GPU_MEMORY_GIB.contains(1e308));
        assert!(!GPU_MEMORY_GIB.contains(f64::NAN));
        assert!(!GPU_MEMORY_GIB.contains(f64::INFINITY));
        assert!(GPU_NVLINK_GBPS.contains(0.0), "closed below");
        assert!(!MODEL_WIDTH.contains(0));
        assert!(!MODEL_WIDTH.contains(u64::MAX));
    }

    /// The parameter count is formed in `u128` from in-range fields: its
    /// largest product (two widths × experts × layers) stays far inside it,
    /// and three widths stay inside `u64`.
    #[test]
    fn bounds_keep_products_inside_the_integer_types() {
        let w = u128::from(MODEL_WIDTH.max);
        assert!(w * w * w < 1 << 62);
        let worst = 4 * w * w * u128::from(MODEL_EXPERTS.max) * u128::from(MODEL_LAYERS.max);
        assert!(worst < 1 << 100, "{worst}");
    }
}
