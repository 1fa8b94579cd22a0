//! Guards on the bundled data: tensor rates follow one accumulate convention, and every
//! offering agrees with the GPU spec it resolves to (or is a flagged, listed anomaly).
//!
//! The convention (data/SOURCES.md, `GpuSpec` docs): every tensor column is the dense rate a
//! real inference GEMM runs at: FP32 accumulate for TF32, BF16, FP16, FP8 and FP4, INT32
//! accumulate for INT8. GeForce cards run FP16-accumulate at twice the FP32-accumulate rate;
//! such a figure must never enter the table.

use gpuplan_catalog::{
    AnomalyKind, Catalog, GpuSpec, Offering, MAX_HOST_GIB_PER_GPU, MAX_VCPUS_PER_GPU,
    MIN_VCPUS_PER_GPU,
};

/// Datasheet columns are rounded separately (B200: BF16 2250 against TF32 1100 = 2.045×), so
/// ratio rules allow 5 %. An FP16-accumulate or sparse figure is off by 2×, far outside.
const RATIO_TOLERANCE: f64 = 1.05;

/// One ratio rule between two tensor columns: `lhs ≤ factor × rhs` (within the tolerance).
struct Rule {
    name: &'static str,
    why: &'static str,
    lhs: fn(&GpuSpec) -> Option<f64>,
    factor: f64,
    rhs: fn(&GpuSpec) -> Option<f64>,
}

fn half(g: &GpuSpec) -> Option<f64> {
    g.half_tflops()
}

const RULES: &[Rule] = &[
    Rule {
        name: "fp16 ≤ bf16",
        why: "BF16 has only an FP32-accumulate rate; an FP16 rate above it is an FP16-accumulate figure",
        lhs: |g| g.fp16_tflops,
        factor: 1.0,
        rhs: |g| g.bf16_tflops,
    },
    Rule {
        name: "bf16 ≤ 2 × tf32",
        why: "TF32 always accumulates in FP32 and runs at half the FP32-accumulate 16-bit rate",
        lhs: half,
        factor: 2.0,
        rhs: |g| g.tf32_tflops,
    },
    Rule {
        name: "tf32 ≤ bf16",
        why: "TF32 is never faster than 16-bit",
        lhs: |g| g.tf32_tflops,
        factor: 1.0,
        rhs: half,
    },
    Rule {
        name: "fp8 ≤ 2 × bf16",
        why: "FP8 with FP32 accumulate is at most twice the FP32-accumulate 16-bit rate; 4× is an FP16-accumulate figure",
        lhs: |g| g.fp8_tflops,
        factor: 2.0,
        rhs: half,
    },
    Rule {
        name: "bf16 ≤ fp8",
        why: "FP8 is never slower than 16-bit where it exists",
        lhs: half,
        factor: 1.0,
        rhs: |g| g.fp8_tflops,
    },
    Rule {
        name: "int8 ≤ 2 × fp8",
        why: "INT8 (INT32 accumulate) equals FP8 on data-centre parts and is twice the FP32-accumulate FP8 rate on GeForce; more is a sparse figure",
        lhs: |g| g.int8_tops,
        factor: 2.0,
        rhs: |g| g.fp8_tflops,
    },
    Rule {
        name: "int8 ≤ 4 × bf16",
        why: "INT8 is at most four times the FP32-accumulate 16-bit rate (GeForce); more is a sparse figure",
        lhs: |g| g.int8_tops,
        factor: 4.0,
        rhs: half,
    },
    Rule {
        name: "fp8 ≤ fp4",
        why: "FP4 is never slower than FP8 where it exists",
        lhs: |g| g.fp8_tflops,
        factor: 1.0,
        rhs: |g| g.fp4_tflops,
    },
    Rule {
        name: "fp4 ≤ 4 × fp8",
        why: "FP4 is at most four times the FP32-accumulate FP8 rate (RTX 5090: 1676 against 419)",
        lhs: |g| g.fp4_tflops,
        factor: 4.0,
        rhs: |g| g.fp8_tflops,
    },
    Rule {
        name: "fp4 ≤ 2 × int8",
        why: "FP4 is at most twice the INT8 rate; more is a sparse figure",
        lhs: |g| g.fp4_tflops,
        factor: 2.0,
        rhs: |g| g.int8_tops,
    },
];

/// The broken rules of one GPU row, each naming the rule, the numbers and why.
fn rate_violations(g: &GpuSpec) -> Vec<String> {
    RULES
        .iter()
        .filter_map(|r| {
            let (lhs, rhs) = ((r.lhs)(g)?, (r.rhs)(g)?);
            (lhs > r.factor * rhs * RATIO_TOLERANCE).then(|| {
                format!(
                    "{}: rule `{}` broken ({lhs} > {} × {rhs}): {}",
                    g.name, r.name, r.factor, r.why
                )
            })
        })
        .collect()
}

#[test]
fn tensor_rates_follow_one_accumulate_convention() {
    let c = Catalog::embedded().expect("bundled catalog loads");
    let broken: Vec<String> = c.gpus().iter().flat_map(rate_violations).collect();
    assert!(
        broken.is_empty(),
        "{} GPU rows break the FP32-accumulate convention:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn an_fp16_accumulate_figure_is_caught() {
    // The RTX 5090's FP8 rate with FP16 accumulate is 838 TFLOPS; with FP32 accumulate 419.
    let c = Catalog::embedded().expect("bundled catalog loads");
    let mut g = c.gpu("RTX5090").expect("RTX 5090 row").clone();
    assert!(rate_violations(&g).is_empty());
    g.fp8_tflops = Some(838.0);
    let broken = rate_violations(&g);
    assert!(
        broken.iter().any(|b| b.contains("fp8 ≤ 2 × bf16")),
        "{broken:?}"
    );
    // An FP16-accumulate BF16/FP16 pair (419) with an FP32-accumulate TF32 (104.8) is caught too.
    let mut g = c.gpu("RTX5090").expect("RTX 5090 row").clone();
    g.fp16_tflops = Some(419.0);
    assert!(rate_violations(&g)
        .iter()
        .any(|b| b.contains("fp16 ≤ bf16")));
}

#[test]
fn rtx_5090_carries_the_fp32_accumulate_rates() {
    // NVIDIA RTX Blackwell whitepaper figures as measured against in main-horse.github.io
    // "Things I learned digging into 5090 perf": FP8→FP32 419, BF16→FP32 209.5, INT8 838, FP4 1676.
    let c = Catalog::embedded().expect("bundled catalog loads");
    let g = c.gpu("RTX5090").expect("RTX 5090 row");
    assert_eq!(g.fp8_tflops, Some(419.0));
    assert_eq!(g.bf16_tflops, Some(209.5));
    assert_eq!(g.int8_tops, Some(838.0));
    assert_eq!(g.fp4_tflops, Some(1676.0));
}

/// Offerings that break a consistency rule, kept as the sources have them and flagged by the
/// catalog as `instance_shape_implausible` (data/SOURCES.md, "Known oddities").
const KNOWN_SHAPE_ANOMALIES: &[(&str, &str, &str)] = &[
    (
        "runpod",
        "8x_L40S_SECURE",
        "1024 vCPUs for 8 GPUs (shared data README)",
    ),
    (
        "vast",
        "2x-A100_PCIE-32-65536",
        "name says PCIe, accelerator `A100` is the SXM 40 GB part; 40 or 80 GB not known",
    ),
];

/// GPU memory sizes (GB) an instance name states as whole tokens (`_80gb`, ` 94GB`), leaving
/// out host-memory sizes after a vCPU count and anything larger than any GPU's memory.
fn stated_gpu_memory_gb(name: &str) -> Vec<f64> {
    let lower = name.to_ascii_lowercase();
    lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .zip(std::iter::once("").chain(lower.split(|c: char| !c.is_ascii_alphanumeric())))
        .filter(|(_, prev)| !prev.ends_with("vcpu"))
        .filter_map(|(tok, _)| tok.strip_suffix("gb")?.parse::<f64>().ok())
        .filter(|gb| *gb <= 300.0)
        .collect()
}

/// What is wrong with one offering against its spec, if anything.
fn shape_violations(o: &Offering, g: &GpuSpec) -> Vec<String> {
    let mut out = Vec::new();
    let name = o.instance_type.to_ascii_lowercase();
    let sxm_spec = g.form_factor.to_ascii_lowercase().starts_with("sxm");
    // Whole tokens: `H100_NVL` says NVL, `H100_NVLINK_80GB` does not.
    let tokens: Vec<&str> = name.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    let says_pcie = tokens.iter().any(|t| *t == "nvl" || t.starts_with("pcie"));
    let says_sxm = tokens.iter().any(|t| t.starts_with("sxm"));
    if says_pcie && !says_sxm && sxm_spec {
        out.push(format!("name says PCIe/NVL, spec {} is SXM", g.name));
    }
    if says_sxm && !says_pcie && !sxm_spec {
        out.push(format!(
            "name says SXM, spec {} is {}",
            g.name, g.form_factor
        ));
    }
    let stated = stated_gpu_memory_gb(&o.instance_type);
    if !stated.is_empty()
        && !stated
            .iter()
            .any(|gb| (gb / g.memory_gib - 1.0).abs() <= 0.1)
    {
        out.push(format!(
            "name says {stated:?} GB, spec {} has {}",
            g.name, g.memory_gib
        ));
    }
    if o.accelerator_count >= 1.0 {
        if let Some(v) = o.vcpus.filter(|v| *v > 0.0) {
            let per = v / o.accelerator_count;
            if !(MIN_VCPUS_PER_GPU..=MAX_VCPUS_PER_GPU).contains(&per) {
                out.push(format!("{per} vCPUs per GPU"));
            }
        }
        if let Some(m) = o.memory_gib.filter(|m| *m > 0.0) {
            let per = m / o.accelerator_count;
            if per > MAX_HOST_GIB_PER_GPU {
                out.push(format!("{per} GiB host memory per GPU"));
            }
        }
    }
    if o.interconnect.to_ascii_lowercase().starts_with("nvlink") && g.nvlink_gbps <= 0.0 {
        out.push(format!(
            "interconnect {} on {} without NVLink",
            o.interconnect, g.name
        ));
    }
    out
}

#[test]
fn offerings_agree_with_their_gpu_specs() {
    let c = Catalog::embedded().expect("bundled catalog loads");
    let mut unexpected = Vec::new();
    let mut unflagged = Vec::new();
    let mut seen_known = std::collections::BTreeSet::new();
    for o in c.offerings() {
        let Some(g) = o.gpu.as_deref().and_then(|n| c.gpu(n).ok()) else {
            continue;
        };
        let v = shape_violations(o, g);
        if v.is_empty() {
            continue;
        }
        let row = format!(
            "{}/{}/{}: {}",
            o.provider,
            o.instance_type,
            o.region,
            v.join("; ")
        );
        let known = KNOWN_SHAPE_ANOMALIES
            .iter()
            .any(|(p, t, _)| *p == o.provider && *t == o.instance_type);
        if !known {
            unexpected.push(row);
            continue;
        }
        seen_known.insert((o.provider.clone(), o.instance_type.clone()));
        let flagged = c
            .offering_anomalies(o)
            .iter()
            .any(|a| a.kind == AnomalyKind::InstanceShapeImplausible);
        if !flagged {
            unflagged.push(row);
        }
    }
    assert!(
        unexpected.is_empty(),
        "{} offerings disagree with their GPU spec (fix the row with a cited source, or list it in KNOWN_SHAPE_ANOMALIES):\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert!(
        unflagged.is_empty(),
        "known anomalies the catalog does not flag as instance_shape_implausible:\n{}",
        unflagged.join("\n")
    );
    for (p, t, why) in KNOWN_SHAPE_ANOMALIES {
        assert!(
            seen_known.contains(&(p.to_string(), t.to_string())),
            "{p}/{t} is listed as a known anomaly ({why}) but no longer breaks a rule: remove it"
        );
    }
}

#[test]
fn corrected_pcie_and_nvl_instances_resolve_to_their_parts() {
    // Shared data README, correction of 2026-12-03.
    let c = Catalog::embedded().expect("bundled catalog loads");
    let expect = [
        ("lambda", "gpu_1x_h100_pcie", "H100-PCIe-80GB"),
        ("azure", "Standard_NC40ads_H100_v5", "H100-NVL-94GB"),
        ("azure", "Standard_NCC40ads_H100_v5", "H100-NVL-94GB"),
        ("azure", "Standard_NC24ads_A100_v4", "A100-PCIe-80GB"),
        ("runpod", "8x_A100-80GB_SECURE", "A100-PCIe-80GB"),
    ];
    for (provider, instance, gpu) in expect {
        let rows: Vec<&Offering> = c
            .offerings()
            .iter()
            .filter(|o| o.provider == provider && o.instance_type == instance)
            .collect();
        assert!(!rows.is_empty(), "{provider}/{instance} missing");
        for o in rows {
            assert_eq!(
                o.gpu.as_deref(),
                Some(gpu),
                "{provider}/{instance}/{}",
                o.region
            );
        }
    }
    let vast_nvl = c
        .offerings()
        .iter()
        .filter(|o| o.provider == "vast" && o.instance_type.contains("H100_NVL"))
        .collect::<Vec<_>>();
    assert!(!vast_nvl.is_empty());
    assert!(vast_nvl
        .iter()
        .all(|o| o.gpu.as_deref() == Some("H100-NVL-94GB")));
}

/// Power headroom compares a part's board power per dense 16-bit TFLOP/s
/// with its architecture's best-provisioned module: MI300X (750 W) and
/// MI325X (1,000 W) share CDNA3's peaks, H100 PCIe and NVL run Hopper's
/// silicon on a fraction of the SXM module's power, and an architecture
/// with no module (Ada) has nothing to compare with.
#[test]
fn power_headroom_compares_parts_with_their_architectures_module() {
    let c = Catalog::embedded().unwrap();
    let headroom = |name: &str| c.gpu(name).unwrap().power_headroom;
    let close = |name: &str, want: f64| {
        let got = headroom(name).unwrap_or(f64::NAN);
        assert!((got - want).abs() < 1e-3, "{name}: {got} against {want}");
    };
    close("MI325X-256GB", 1.0);
    close("MI300X-192GB", 0.75);
    close("H100-SXM-80GB", 1.0);
    // 350 W / 756.5 TFLOP/s against 700 W / 989.4 TFLOP/s.
    close("H100-PCIe-80GB", 350.0 / 756.5 / (700.0 / 989.4));
    close("A100-PCIe-80GB", 300.0 / 400.0);
    assert_eq!(headroom("L40S-48GB"), None, "Ada has no SXM module");
    assert_eq!(headroom("GH200-96GB"), None, "no board power published");
}

/// NVLink reaches a whole group only where the part's NVLink is built in
/// (modules, superchips) or, for a pair, on the PCIe boards sold as bridged
/// pairs; other PCIe boards' rings cross PCIe.
#[test]
fn nvlink_joins_a_group_only_where_the_part_is_built_or_sold_bridged() {
    let c = Catalog::embedded().unwrap();
    let joins = |name: &str, gpus: u32| c.gpu(name).unwrap().nvlink_joins(gpus);
    assert!(joins("H100-SXM-80GB", 8));
    assert!(joins("GB200-186GB", 4));
    assert!(joins("H100-NVL-94GB", 2));
    assert!(!joins("H100-NVL-94GB", 4), "a bridge joins pairs only");
    assert!(!joins("A100-PCIe-80GB", 2), "the bridge is an accessory");
    assert!(!joins("H100-PCIe-80GB", 2));
    assert!(!joins("L40S-48GB", 2), "no NVLink at all");
}
