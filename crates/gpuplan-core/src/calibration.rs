//! The named efficiency factors of the performance model (`data/calibration.csv`).
//!
//! Each factor has a meaning and bounds; they are fitted only on the
//! inference rows of `benchmarks_dev.csv` by `gpuplan validate --fit`.
//!
//! The bundled table is the one set of defaults: a user's table is parsed
//! like every other CSV (csv + serde), must name every bundled factor exactly
//! once and no other, and each value must lie within its bundled bounds.

use crate::error::{CoreError, Result};
use gpuplan_catalog::{GpuSpec, Precision};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The bundled calibration table.
pub const BUNDLED_CALIBRATION: &str = include_str!("../../../data/calibration.csv");

/// The factor that turns a GPU's power headroom into the share of its boost
/// clock it holds ([`Calibration::sustained_clock_share`]); fitted on the
/// MLPerf rows of two parts with the same silicon and peaks at different
/// power (MI300X, MI325X).
pub const POWER_CLOCK_EXPONENT: &str = "power_clock_exponent";

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

/// One row of the CSV as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFactor {
    name: String,
    value: f64,
    min: f64,
    max: f64,
    meaning: String,
}

/// Parses rows: syntax, finite numbers, `min <= value <= max`, no name
/// twice. Each factor comes with its line.
fn parse_rows(text: &str) -> Result<Vec<(u64, Factor)>> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let malformed = |line: u64, e: &csv::Error| {
        CoreError::invalid(
            format!("line {line}"),
            e.to_string(),
            "a row name,value,min,max,meaning with numbers in value, min and max",
        )
    };
    let headers = reader.headers().map_err(|e| malformed(1, &e))?.clone();
    let mut factors: Vec<(u64, Factor)> = Vec::new();
    let mut lines: HashMap<String, u64> = HashMap::new();
    for record in reader.records() {
        let record =
            record.map_err(|e| malformed(e.position().map(|p| p.line()).unwrap_or(0), &e))?;
        let line = record.position().map(|p| p.line()).unwrap_or(0);
        let record: RawFactor = record
            .deserialize(Some(&headers))
            .map_err(|e| malformed(line, &e))?;
        let RawFactor {
            name,
            value,
            min,
            max,
            meaning,
        } = record;
        if let Some(first) = lines.insert(name.clone(), line) {
            return Err(CoreError::invalid(
                format!("name (line {line})"),
                &name,
                format!("each factor once (first set on line {first})"),
            ));
        }
        if !(min.is_finite() && max.is_finite() && min <= value && value <= max) {
            return Err(CoreError::invalid(
                format!("{name}.value (line {line})"),
                value.to_string(),
                format!("a number from min ({min}) to max ({max})"),
            ));
        }
        factors.push((
            line,
            Factor {
                name,
                value,
                min,
                max,
                meaning,
            },
        ));
    }
    Ok(factors)
}

/// `text` as one CSV field: quoted (quotes doubled) when `always` or when it
/// holds a comma, a quote or a line break.
fn csv_field(text: &str, always: bool) -> String {
    if always || text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The bundled table, parsed once.
fn bundled_table() -> &'static Calibration {
    static BUNDLED: OnceLock<Calibration> = OnceLock::new();
    BUNDLED.get_or_init(|| Calibration {
        // The bundled table is checked by a unit test, so this never comes back empty.
        factors: parse_rows(BUNDLED_CALIBRATION)
            .unwrap_or_default()
            .into_iter()
            .map(|(_, f)| f)
            .collect(),
    })
}

impl Calibration {
    /// The bundled factors.
    pub fn bundled() -> Calibration {
        bundled_table().clone()
    }

    /// Parses a calibration table (`name,value,min,max,meaning`). Every factor
    /// of the bundled table must appear exactly once and no other; each value
    /// must lie within its own row's bounds and the bundled bounds (an
    /// efficiency of 50 = 5000% is rejected). Errors name the line, field,
    /// value and range; the caller adds the file name.
    pub fn parse(text: &str) -> Result<Calibration> {
        Calibration::parse_against(text, BUNDLED_CALIBRATION, "data/calibration.csv")
    }

    /// Parses `text` against a reference table (`reference`, named
    /// `reference_name` in messages): the same factors, each within the
    /// reference bounds.
    pub fn parse_against(text: &str, reference: &str, reference_name: &str) -> Result<Calibration> {
        let factors = parse_rows(text)?;
        let bundled = Calibration {
            factors: parse_rows(reference)?.into_iter().map(|(_, f)| f).collect(),
        };
        let bundled = &bundled;
        for (line, f) in &factors {
            let Some(b) = bundled.factors.iter().find(|b| b.name == f.name) else {
                return Err(CoreError::invalid(
                    format!("name (line {line})"),
                    &f.name,
                    format!(
                        "one of the factors of {reference_name}: {}",
                        bundled
                            .factors
                            .iter()
                            .map(|b| b.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            if !(b.min <= f.value && f.value <= b.max) {
                return Err(CoreError::invalid(
                    format!("{}.value (line {line})", f.name),
                    f.value.to_string(),
                    format!(
                        "a number from {} to {} (the physically sensible bounds of this factor)",
                        b.min, b.max
                    ),
                ));
            }
        }
        let missing: Vec<&str> = bundled
            .factors
            .iter()
            .filter(|b| !factors.iter().any(|(_, f)| f.name == b.name))
            .map(|b| b.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(CoreError::invalid(
                "factors",
                format!("{} of {} given", factors.len(), bundled.factors.len()),
                format!(
                    "every factor of {reference_name}; missing: {}",
                    missing.join(", ")
                ),
            ));
        }
        Ok(Calibration {
            factors: factors.into_iter().map(|(_, f)| f).collect(),
        })
    }

    /// Writes the CSV back, in the bundled file's layout: values to four
    /// decimals (exactly, when rounding would leave the factor's bounds),
    /// bounds as written, the meaning quoted. Fields are quoted as CSV
    /// requires (a comma, quote or line break inside), so what
    /// [`Calibration::parse`] read reads back the same.
    pub fn to_csv(&self) -> String {
        let bundled = bundled_table();
        let mut out = String::from("name,value,min,max,meaning\n");
        for f in &self.factors {
            let rounded = format!("{:.4}", f.value);
            let inside = |v: f64| {
                f.min <= v
                    && v <= f.max
                    && bundled
                        .factors
                        .iter()
                        .find(|b| b.name == f.name)
                        .is_none_or(|b| b.min <= v && v <= b.max)
            };
            let value = match rounded.parse::<f64>() {
                Ok(v) if inside(v) => rounded,
                _ => f.value.to_string(),
            };
            out.push_str(&format!(
                "{},{value},{},{},{}\n",
                csv_field(&f.name, false),
                f.min,
                f.max,
                csv_field(&f.meaning, true)
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

    /// A factor that every parsed table has; a hand-built table without it
    /// falls back to the bundled value (the one set of defaults).
    fn required(&self, name: &str) -> f64 {
        self.get(name)
            .or_else(|| bundled_table().get(name))
            .unwrap_or(f64::NAN)
    }

    /// Mean of the factors whose name starts with `prefix`.
    pub(crate) fn mean_of(&self, prefix: &str) -> Option<f64> {
        // A family fitted on another engine's MLPerf rows (CDNA3 under ROCm
        // vLLM) says nothing about an uncalibrated NVIDIA family: only a
        // prefix naming that family itself reads its factors.
        let own_family = crate::mlperf_inference::fitted_on_mlperf(prefix);
        let v: Vec<f64> = self
            .factors
            .iter()
            .filter(|f| f.name.starts_with(prefix))
            .filter(|f| own_family || !crate::mlperf_inference::fitted_on_mlperf(&f.name))
            .map(|f| f.value)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// Achieved share of tensor peak for this GPU and compute precision: the
    /// family's factor (a part running at its boost clock) times the share
    /// of that clock the part's power lets it hold ([`Self::sustained_clock_share`]).
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
        .or_else(|| bundled_table().mean_of("compute_efficiency."))
        .unwrap_or(f64::NAN)
            * self.sustained_clock_share(gpu)
    }

    /// Share of its boost clock a GPU holds in compute-bound work: its power
    /// headroom (watts per TFLOP/s against its architecture's best-provisioned
    /// module, [`GpuSpec::power_headroom`]) to the power
    /// `power_clock_exponent`. Dynamic power grows faster than the clock
    /// (P ≈ C·V²·f, and V rises with f), so a part with 75% of the power per
    /// FLOP keeps more than 75% of the clock. 1 where the headroom is unknown
    /// or at least that module's.
    pub fn sustained_clock_share(&self, gpu: &GpuSpec) -> f64 {
        match gpu.power_headroom {
            Some(h) if h < 1.0 => h.max(0.0).powf(self.required(POWER_CLOCK_EXPONENT)),
            _ => 1.0,
        }
    }

    /// Achieved share of memory bandwidth for this GPU family (mean of the
    /// fitted families when the family has none).
    pub fn bandwidth_efficiency(&self, gpu: &GpuSpec) -> f64 {
        self.get(&format!("bandwidth_efficiency.{}", family(gpu)))
            .or_else(|| self.mean_of("bandwidth_efficiency."))
            .or_else(|| bundled_table().mean_of("bandwidth_efficiency."))
            .unwrap_or(f64::NAN)
    }

    /// Whether the GPU's family has fitted factors (else the estimate extrapolates).
    pub fn has_family(&self, gpu: &GpuSpec) -> bool {
        self.get(&format!("bandwidth_efficiency.{}", family(gpu)))
            .is_some()
    }

    /// NVLink all-reduce efficiency.
    pub fn allreduce_nvlink_efficiency(&self) -> f64 {
        self.required("allreduce_nvlink_efficiency")
    }

    /// Effective PCIe gen4 all-reduce bandwidth, GB/s.
    pub fn allreduce_pcie_gen4_gbps(&self) -> f64 {
        self.required("allreduce_pcie_gen4_gbps")
    }

    /// Ring-step latency over NVLink, seconds.
    pub fn hop_latency_nvlink_s(&self) -> f64 {
        self.required("allreduce_hop_latency_nvlink_us") * 1e-6
    }

    /// Ring-step latency over PCIe, seconds.
    pub fn hop_latency_pcie_s(&self) -> f64 {
        self.required("allreduce_hop_latency_pcie_us") * 1e-6
    }

    /// Fixed cost per iteration per pipeline stage, seconds.
    pub fn iteration_overhead_s(&self) -> f64 {
        self.required("iteration_overhead_ms") * 1e-3
    }

    /// Fixed cost of one transformer layer per iteration on one GPU, seconds.
    pub fn layer_overhead_s(&self) -> f64 {
        self.required("layer_overhead_us") * 1e-6
    }

    /// Per decoding sequence per iteration, seconds.
    pub fn sequence_overhead_s(&self) -> f64 {
        self.required("sequence_overhead_us") * 1e-6
    }

    /// Roofline overlap exponent.
    pub fn roofline_exponent(&self) -> f64 {
        self.required("roofline_overlap_exponent")
    }

    /// Expert GEMM efficiency relative to dense.
    pub fn moe_gemm_efficiency(&self) -> f64 {
        self.required("moe_gemm_efficiency")
    }

    /// TensorRT-LLM runtime memory reserve, GiB.
    pub fn trtllm_reserve_gib(&self) -> f64 {
        self.required("trtllm_runtime_reserve_gib")
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

    /// Every accessor reads a factor the bundled table has: none falls back to NaN.
    #[test]
    fn every_accessor_is_backed_by_the_bundled_table() {
        let empty = Calibration { factors: vec![] };
        let c = Calibration::bundled();
        let gpu = crate::test_support::gpu("H100");
        for (a, b) in [
            (
                empty.allreduce_nvlink_efficiency(),
                c.allreduce_nvlink_efficiency(),
            ),
            (
                empty.allreduce_pcie_gen4_gbps(),
                c.allreduce_pcie_gen4_gbps(),
            ),
            (empty.hop_latency_nvlink_s(), c.hop_latency_nvlink_s()),
            (empty.hop_latency_pcie_s(), c.hop_latency_pcie_s()),
            (empty.iteration_overhead_s(), c.iteration_overhead_s()),
            (empty.layer_overhead_s(), c.layer_overhead_s()),
            (empty.sequence_overhead_s(), c.sequence_overhead_s()),
            (empty.roofline_exponent(), c.roofline_exponent()),
            (empty.moe_gemm_efficiency(), c.moe_gemm_efficiency()),
            (empty.trtllm_reserve_gib(), c.trtllm_reserve_gib()),
            (empty.bandwidth_efficiency(gpu), c.bandwidth_efficiency(gpu)),
            (
                empty.compute_efficiency(gpu, Precision::Bf16),
                c.mean_of("compute_efficiency.").unwrap(),
            ),
        ] {
            assert!(a.is_finite(), "{a}");
            assert!(b.is_finite(), "{b}");
        }
    }

    /// MI300X and MI325X share CDNA3's silicon and peaks; the 750 W part
    /// holds less of its boost clock in compute-bound work, and only there.
    #[test]
    fn a_part_short_of_power_holds_less_of_its_boost_clock() {
        let c = Calibration::bundled();
        let mi300x = crate::test_support::gpu("MI300X-192GB");
        let mi325x = crate::test_support::gpu("MI325X-256GB");
        let exponent = c.get(POWER_CLOCK_EXPONENT).unwrap();
        assert_eq!(c.sustained_clock_share(mi325x), 1.0);
        let share = c.sustained_clock_share(mi300x);
        assert!((share - 0.75f64.powf(exponent)).abs() < 1e-9);
        assert!(share < 0.9, "{share}");
        let ratio = c.compute_efficiency(mi300x, Precision::Fp8)
            / c.compute_efficiency(mi325x, Precision::Fp8);
        assert!((ratio - share).abs() < 1e-12);
        assert_eq!(
            c.bandwidth_efficiency(mi300x),
            c.bandwidth_efficiency(mi325x)
        );
        let mut unknown = mi300x.clone();
        unknown.power_headroom = None;
        assert_eq!(c.sustained_clock_share(&unknown), 1.0);
        // A part with more power per FLOP than the module is not sped up.
        unknown.power_headroom = Some(1.4);
        assert_eq!(c.sustained_clock_share(&unknown), 1.0);
    }

    fn parse_err(text: &str) -> String {
        Calibration::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn user_tables_are_complete_known_unique_and_in_bounds() {
        let header = "name,value,min,max,meaning\n";
        assert!(parse_err(header).contains("missing: compute_efficiency"));
        assert!(parse_err("").contains("missing"));
        let e = parse_err(&format!(
            "{BUNDLED_CALIBRATION}compute_efficency.Hopper.8,0.5,0,1,typo\n"
        ));
        assert!(
            e.contains("compute_efficency.Hopper.8") && e.contains("one of"),
            "{e}"
        );
        let first = BUNDLED_CALIBRATION.lines().nth(1).unwrap();
        let e = parse_err(&format!("{BUNDLED_CALIBRATION}{first}\n"));
        let dup_line = BUNDLED_CALIBRATION.lines().count() + 1;
        assert!(
            e.contains(&format!("line {dup_line}")) && e.contains("first set on line 2"),
            "{e}"
        );
        let e = parse_err(&format!(
            "{BUNDLED_CALIBRATION}compute_efficiency.Hopper.8,0.5,0,1,x\n"
        ));
        assert!(e.contains(&format!("line {dup_line}")), "{e}");
        let hopper8 = BUNDLED_CALIBRATION
            .lines()
            .find(|l| l.starts_with("compute_efficiency.Hopper.8,"))
            .unwrap();
        let e = parse_err(&BUNDLED_CALIBRATION.replace(
            hopper8,
            "compute_efficiency.Hopper.8,50,0,100,out of bounds",
        ));
        assert!(
            e.contains("compute_efficiency.Hopper.8.value (line 4)")
                && e.contains("= 50")
                && e.contains("0.05 to 1"),
            "{e}"
        );
        let value = hopper8.split(',').nth(1).unwrap();
        let e = parse_err(&BUNDLED_CALIBRATION.replace(
            hopper8,
            &hopper8.replacen(&format!(",{value},"), ",lots,", 1),
        ));
        assert!(e.contains("line 4"), "{e}");
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

    /// Found by fuzzing (`calibration`): a meaning with a quote, or a value
    /// whose four-decimal rounding leaves its bounds, was written so that it
    /// did not read back.
    #[test]
    fn to_csv_reads_back_whatever_parse_accepted() {
        let text = BUNDLED_CALIBRATION
            .replace(
                "\"achieved share of dense FP8 tensor peak, Hopper (H100, H200, GH200)\"",
                "\"say \"\"hi\"\", then\nmore\"",
            )
            .replace(
                "compute_efficiency.Hopper.16,0.5886,0.05,1",
                "compute_efficiency.Hopper.16,0.123456,0.1,0.123456",
            );
        let c = Calibration::parse(&text).unwrap();
        let again =
            Calibration::parse(&c.to_csv()).unwrap_or_else(|e| panic!("{e}\n{}", c.to_csv()));
        assert_eq!(c, again);
        let hopper8 = again
            .factors
            .iter()
            .find(|f| f.name == "compute_efficiency.Hopper.8")
            .unwrap();
        assert_eq!(hopper8.meaning, "say \"hi\", then\nmore");
        // The bundled file's layout is kept: four decimals, the meaning quoted.
        assert_eq!(Calibration::bundled().to_csv(), BUNDLED_CALIBRATION);
    }
}
