//! Accelerator specifications (`data/gpus.csv`) and numeric precisions.

use crate::error::Result;
use crate::limits;
use crate::table::{DuplicateCheck, Table};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// A numeric format for weights, KV cache or compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// IEEE single precision (4 bytes).
    Fp32,
    /// bfloat16 (2 bytes).
    Bf16,
    /// IEEE half precision (2 bytes).
    Fp16,
    /// FP8 (E4M3) weights and activations (1 byte), as TensorRT-LLM/vLLM `fp8`.
    Fp8,
    /// INT8 weights and activations (W8A8, 1 byte), as vLLM's `quantized.w8a8` checkpoints.
    Int8,
    /// INT4 weight-only with group scales (AWQ/GPTQ style); compute in 16-bit.
    Int4,
    /// NVFP4 / MXFP4 4-bit floats with block scales; compute in FP4 where the GPU has it.
    Fp4,
}

/// All precisions, in display order.
pub const ALL_PRECISIONS: [Precision; 7] = [
    Precision::Fp32,
    Precision::Bf16,
    Precision::Fp16,
    Precision::Fp8,
    Precision::Int8,
    Precision::Int4,
    Precision::Fp4,
];

impl Precision {
    /// Bytes per stored element, including block/group scale overhead.
    ///
    /// INT4: 0.5 byte + one fp16 scale and one fp16 zero point per group of 128
    /// weights (AWQ/GPTQ default) = 0.5 + 4/128. FP4 (NVFP4): 0.5 byte + one FP8
    /// scale per 16 elements = 0.5 + 1/16.
    pub fn bytes_per_element(self) -> f64 {
        match self {
            Precision::Fp32 => 4.0,
            Precision::Bf16 | Precision::Fp16 => 2.0,
            Precision::Fp8 | Precision::Int8 => 1.0,
            Precision::Int4 => 0.5 + 4.0 / 128.0,
            Precision::Fp4 => 0.5 + 1.0 / 16.0,
        }
    }

    /// The lowercase name used in files and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
            Precision::Fp4 => "fp4",
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fp32" | "float32" => Ok(Precision::Fp32),
            "bf16" | "bfloat16" => Ok(Precision::Bf16),
            "fp16" | "float16" | "half" => Ok(Precision::Fp16),
            "fp8" | "float8" | "fp8-linear (bf16 rest)" | "fp8-linear" => Ok(Precision::Fp8),
            "int8" | "w8a8" | "w8a16" => Ok(Precision::Int8),
            "int4" | "w4a16" | "awq" | "gptq" => Ok(Precision::Int4),
            "fp4" | "nvfp4" | "mxfp4" => Ok(Precision::Fp4),
            other => Err(format!(
                "unknown precision `{other}`: expected one of fp32, bf16, fp16, fp8, int8, int4, fp4"
            )),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Precision {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One accelerator model as its vendor specifies it.
///
/// **Tensor-rate convention.** Every tensor column (`tf32_tflops` … `fp4_tflops`) is the
/// *dense* rate (sparse figures halved) at which a real inference GEMM runs: FP32 accumulate
/// for TF32, BF16, FP16, FP8 and FP4, INT32 accumulate for INT8. GeForce cards run
/// FP16-accumulate at twice their FP32-accumulate rate; that figure is never used, because
/// inference engines (cuBLASLt, vLLM, TensorRT-LLM) accumulate in FP32. Hence on GeForce
/// parts INT8 is twice FP8 and four times BF16 (RTX 4090: BF16 165.2, FP8 330.3, INT8 660.6),
/// while on data-centre and professional parts INT8 equals FP8. `tests/spec_guards.rs`
/// checks the ratios between the columns of every row; `data/SOURCES.md` documents each column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuSpec {
    /// Canonical name, e.g. `H100-SXM-80GB`.
    pub name: String,
    /// NVIDIA, AMD, Google, Intel, AWS ...
    pub vendor: String,
    /// Architecture family as the vendor names it (Hopper, Ampere, CDNA3 ...).
    pub architecture: String,
    /// Advertised memory capacity, GiB.
    pub memory_gib: f64,
    /// Peak memory bandwidth, GB/s (10^9 bytes per second).
    pub memory_bandwidth_gbps: f64,
    /// Vector FP32, TFLOP/s.
    pub fp32_tflops: Option<f64>,
    /// Dense TF32 tensor (FP32 accumulate), TFLOP/s.
    pub tf32_tflops: Option<f64>,
    /// Dense BF16 tensor with FP32 accumulate, TFLOP/s.
    pub bf16_tflops: Option<f64>,
    /// Dense FP16 tensor with FP32 accumulate (never the GeForce FP16-accumulate rate), TFLOP/s.
    pub fp16_tflops: Option<f64>,
    /// Dense FP8 tensor with FP32 accumulate (never the GeForce FP16-accumulate rate), TFLOP/s.
    pub fp8_tflops: Option<f64>,
    /// Dense INT8 tensor (INT32 accumulate), TOP/s.
    pub int8_tops: Option<f64>,
    /// Dense FP4 tensor (NVFP4/MXFP4 with block scales) with FP32 accumulate, TFLOP/s.
    pub fp4_tflops: Option<f64>,
    /// Total bidirectional scale-up bandwidth per GPU (NVLink, Infinity Fabric, ICI), GB/s; 0 = PCIe only.
    pub nvlink_gbps: f64,
    /// PCIe generation of the host link.
    pub pcie_gen: Option<u32>,
    /// SXM, PCIe, OAM, Superchip, TPU ...
    pub form_factor: String,
    /// Board power, W.
    pub tdp_w: Option<f64>,
    /// Board power per dense 16-bit TFLOP/s, relative to the best-provisioned
    /// data-centre module (SXM, OAM, superchip) of the same architecture
    /// (set for every GPU when the catalog is built). Below 1 the part
    /// cannot hold the boost clock its peaks assume in compute-bound work
    /// (MI300X at 750 W against MI325X at 1,000 W, same peaks). `None`: no
    /// TDP, no 16-bit peak, or no module of the architecture to compare with.
    pub power_headroom: Option<f64>,
    /// Maximum MIG instances (0 = no MIG).
    pub mig_max_instances: u32,
    /// Year of release.
    pub release_year: Option<u32>,
    /// Where the figures come from.
    pub source: String,
}

impl GpuSpec {
    /// Dense 16-bit tensor throughput (BF16, else FP16), TFLOP/s.
    pub fn half_tflops(&self) -> Option<f64> {
        self.bf16_tflops.or(self.fp16_tflops)
    }

    /// Whether the GPU has no fast scale-up link (PCIe only).
    pub fn pcie_only(&self) -> bool {
        self.nvlink_gbps <= 0.0
    }

    /// Whether a group of `gpus` of this part reach each other over NVLink.
    /// A module's or superchip's NVLink spans its node. A PCIe board's NVLink
    /// is a bridge joining pairs, assumed only on the boards sold as bridged
    /// pairs (the NVL parts, `H100-NVL-94GB`): on the others it is an
    /// accessory most servers and clouds leave out (NVIDIA's own 8 × A100
    /// PCIe performance system had none, and its TP2 throughput is a PCIe
    /// one), so their rings cross PCIe.
    pub fn nvlink_joins(&self, gpus: u32) -> bool {
        if self.nvlink_gbps <= 0.0 {
            return false;
        }
        if self.form_factor != "PCIe" {
            return true;
        }
        gpus <= 2 && self.name.contains("-NVL-")
    }

    /// Host-link bandwidth per direction, GB/s, from the PCIe generation
    /// (x16: gen3 15.75, gen4 31.5, gen5 63 GB/s).
    pub fn pcie_gbps_per_direction(&self) -> f64 {
        match self.pcie_gen.unwrap_or(4) {
            0..=3 => 15.75,
            4 => 31.5,
            _ => 63.0,
        }
    }
}

pub(crate) fn parse_gpus(file: &str, text: &str) -> Result<Vec<GpuSpec>> {
    let table = Table::parse(file, text)?;
    table.require(&[
        "name",
        "vendor",
        "architecture",
        "memory_gib",
        "memory_bandwidth_gbps",
        "nvlink_gbps",
        "source",
    ])?;
    let mut dups = DuplicateCheck::new();
    let mut out = Vec::new();
    for row in table.rows() {
        let name = row.string("name")?;
        dups.check_name(&row, "name", &name)?;
        let tflops = |column: &str| row.opt_span(column, limits::GPU_TFLOPS);
        let gpu = GpuSpec {
            vendor: row.string("vendor")?,
            architecture: row.string("architecture")?,
            memory_gib: row.span("memory_gib", limits::GPU_MEMORY_GIB)?,
            memory_bandwidth_gbps: row
                .span("memory_bandwidth_gbps", limits::GPU_MEMORY_BANDWIDTH_GBPS)?,
            fp32_tflops: tflops("fp32_tflops")?,
            tf32_tflops: tflops("tf32_tflops")?,
            bf16_tflops: tflops("bf16_tflops")?,
            fp16_tflops: tflops("fp16_tflops")?,
            fp8_tflops: tflops("fp8_tflops")?,
            int8_tops: tflops("int8_tops")?,
            fp4_tflops: tflops("fp4_tflops")?,
            nvlink_gbps: row
                .opt_span("nvlink_gbps", limits::GPU_NVLINK_GBPS)?
                .unwrap_or(0.0),
            pcie_gen: row.opt_count("pcie_gen", limits::GPU_PCIE_GEN)?.map(narrow),
            form_factor: row.opt_string("form_factor").unwrap_or_default(),
            tdp_w: row.opt_span("tdp_w", limits::GPU_TDP_W)?,
            power_headroom: None,
            mig_max_instances: narrow(
                row.opt_count("mig_max_instances", limits::GPU_MIG_MAX_INSTANCES)?
                    .unwrap_or(0),
            ),
            release_year: row
                .opt_count("release_year", limits::GPU_RELEASE_YEAR)?
                .map(narrow),
            source: row.string("source")?,
            name,
        };
        out.push(gpu);
    }
    Ok(out)
}

/// Board power per dense 16-bit TFLOP/s, W.
fn watts_per_tflops(gpu: &GpuSpec) -> Option<f64> {
    Some(gpu.tdp_w? / gpu.half_tflops().filter(|t| *t > 0.0)?)
}

/// Whether the part is a data-centre module (SXM, OAM, superchip): the
/// form factors provisioned to run their tensor cores at the boost clock.
fn is_module(gpu: &GpuSpec) -> bool {
    let form = gpu.form_factor.to_ascii_lowercase();
    form.starts_with("sxm") || form == "oam" || form == "superchip"
}

/// Sets every GPU's [`GpuSpec::power_headroom`]: its watts per dense 16-bit
/// TFLOP/s over the most of any module of its architecture. The module
/// with the most power per FLOP is taken as running at its boost clock;
/// a part of the same silicon with less power per FLOP must lower its
/// clock under sustained GEMMs (P ≈ C·V²·f).
pub(crate) fn set_power_headroom(gpus: &mut [GpuSpec]) {
    let reference = |architecture: &str, gpus: &[GpuSpec]| {
        gpus.iter()
            .filter(|g| g.architecture == architecture && is_module(g))
            .filter_map(watts_per_tflops)
            .reduce(f64::max)
    };
    let headroom: Vec<Option<f64>> = gpus
        .iter()
        .map(|g| Some(watts_per_tflops(g)? / reference(&g.architecture, gpus)?))
        .collect();
    for (gpu, h) in gpus.iter_mut().zip(headroom) {
        gpu.power_headroom = h;
    }
}

/// A count already checked against a range whose maximum fits `u32`.
pub(crate) fn narrow(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int4_bytes_include_group_scales() {
        // 0.5 byte per weight + (2-byte scale + 2-byte zero) / 128 weights
        assert!((Precision::Int4.bytes_per_element() - 0.53125).abs() < 1e-12);
        assert!((Precision::Fp4.bytes_per_element() - 0.5625).abs() < 1e-12);
    }

    #[test]
    fn precision_parses_aliases() {
        assert_eq!("BF16".parse::<Precision>(), Ok(Precision::Bf16));
        assert_eq!("awq".parse::<Precision>(), Ok(Precision::Int4));
        assert!("fp7".parse::<Precision>().is_err());
    }

    #[test]
    fn rejects_zero_memory_with_location() {
        let csv = "name,vendor,architecture,memory_gib,memory_bandwidth_gbps,bf16_tflops,nvlink_gbps,source\n\
                   X,NVIDIA,Hopper,0,100,10,0,test\n";
        let err = parse_gpus("gpus.csv", csv).unwrap_err().to_string();
        assert!(err.contains("gpus.csv"), "{err}");
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("memory_gib"), "{err}");
    }

    #[test]
    fn rejects_out_of_range_numbers_naming_the_range() {
        let header = "name,vendor,architecture,memory_gib,memory_bandwidth_gbps,bf16_tflops,nvlink_gbps,mig_max_instances,source\n";
        for (row, field, value) in [
            ("X,NVIDIA,Hopper,1e308,100,10,0,0,t", "memory_gib", "1e308"),
            (
                "X,NVIDIA,Hopper,80,100,10,0,99999999999,t",
                "mig_max_instances",
                "99999999999",
            ),
            ("X,NVIDIA,Hopper,80,100,inf,0,0,t", "bf16_tflops", "inf"),
        ] {
            let err = parse_gpus("gpus.csv", &format!("{header}{row}\n"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("field `{field}`")), "{err}");
            assert!(err.contains(&format!("`{value}`")), "{err}");
            assert!(err.contains("from") || err.contains("at most"), "{err}");
        }
    }

    #[test]
    fn rejects_duplicate_names() {
        let csv = "name,vendor,architecture,memory_gib,memory_bandwidth_gbps,bf16_tflops,nvlink_gbps,source\n\
                   X,NVIDIA,Hopper,80,100,10,0,test\nx,NVIDIA,Hopper,80,100,10,0,test\n";
        let err = parse_gpus("gpus.csv", csv).unwrap_err().to_string();
        assert!(err.contains("duplicate id `x`"), "{err}");
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("first defined on line 2"), "{err}");
    }

    /// Found by the fuzz contract "every GPU is found by its name"
    /// (`catalog_gpus`): `X A` and `X-A` look up the same, so the second
    /// silently shadowed the first; and a user's `V100 SXM2 16GB` was added
    /// beside the bundled `V100-SXM2-16GB` instead of replacing it.
    #[test]
    fn names_that_look_up_the_same_are_one_gpu() {
        let header = "name,vendor,architecture,memory_gib,memory_bandwidth_gbps,bf16_tflops,nvlink_gbps,source\n";
        let e = parse_gpus(
            "g.csv",
            &format!(
                "{header}X A,NVIDIA,Hopper,80,3000,900,0,t\nx_a,NVIDIA,Hopper,40,3000,900,0,t\n"
            ),
        )
        .unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("name")), "{e}");
        assert!(e.to_string().contains("`x_a`"), "shown as written: {e}");
        let mut b = crate::CatalogBuilder::embedded().unwrap();
        b.extend(
            crate::TableKind::Gpus,
            "g.csv",
            &format!("{header}V100 SXM2 16GB,NVIDIA,Volta,32,900,125,300,t\n"),
        )
        .unwrap();
        let c = b.build().unwrap();
        assert_eq!(c.gpu("V100-SXM2-16GB").unwrap().memory_gib, 32.0);
        assert!(
            c.gpus().iter().all(|g| g.name != "V100-SXM2-16GB"),
            "replaced"
        );
    }
}
