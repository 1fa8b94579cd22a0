//! What the plans would launch: for every example workload's model and
//! precisions on every NVIDIA/AMD GPU of the catalog, the serving choice is a
//! published checkpoint (or the model's own 16-bit repo) with a kernel whose
//! rules allow that GPU, or a reasoned error; and the launch command never
//! forces a slow quantisation kernel or the wrong release.

use gpuplan_catalog::{Catalog, CheckpointFormat, Precision, Variant};
use gpuplan_core::{
    kernel_for, serving_choice, vllm_command, Calibration, Deployment, LaunchSettings, Layout,
    RawWorkload,
};
use std::path::PathBuf;

fn examples() -> Vec<(String, RawWorkload)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("examples/ exists") {
        let path = entry.expect("readable entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).expect("readable example");
            let raw: RawWorkload =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push((path.display().to_string(), raw));
        }
    }
    assert!(out.len() >= 5, "the example workloads are found");
    out
}

#[test]
fn every_example_serves_a_published_checkpoint_or_says_why() {
    let catalog = Catalog::embedded().unwrap();
    let gpus: Vec<_> = catalog
        .gpus()
        .iter()
        .filter(|g| g.vendor == "NVIDIA" || g.vendor == "AMD")
        .collect();
    let settings = |kv| LaunchSettings {
        tp: 1,
        pp: 1,
        max_num_seqs: 32,
        max_batched_tokens: 8192,
        gpu_memory_utilization: 0.9,
        max_model_len: 4096,
        kv_precision: kv,
        gpu_memory_gib: 80.0,
        weights_gib: 16.0,
        kv_cache_gib: 50.0,
        other_gib: 6.0,
        max_beam_width: 1,
    };
    let mut served = 0;
    for (file, raw) in examples() {
        // The release the file asks for; instruct unless it says otherwise.
        let asked = if raw.model.variant.as_deref() == Some("base") {
            Variant::Base
        } else {
            Variant::Instruct
        };
        let w = raw
            .validate(&catalog, None)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(w.variant, asked, "{file}: model.variant");
        for &p in &w.precisions {
            for gpu in &gpus {
                match serving_choice(&catalog, &w.model, w.variant, gpu, p) {
                    Ok(c) => {
                        served += 1;
                        let listed = catalog.checkpoints().iter().any(|k| {
                            k.model == w.model.id && k.variant == w.variant && k.repo == c.repo
                        });
                        assert!(listed, "{file}: {} not in checkpoints.csv", c.repo);
                        // Online FP8 only of the release's own 16-bit repo.
                        if c.quantization.is_some() {
                            assert_eq!(c.format, CheckpointFormat::Bf16, "{file} {p}");
                            assert_eq!(p, Precision::Fp8);
                        }
                        // The kernel is the one the rules give this GPU for that format.
                        let format = if c.quantization.is_some() {
                            CheckpointFormat::Fp8
                        } else {
                            c.format
                        };
                        assert_eq!(
                            kernel_for(&w.model, gpu, format, p),
                            Ok(c.kernel),
                            "{file} {p} {}",
                            gpu.name
                        );
                        for kv in [Precision::Bf16, Precision::Fp8] {
                            let cmd = vllm_command(&c, &settings(kv));
                            assert!(!cmd.contains("--quantization awq"), "{cmd}");
                            assert!(!cmd.contains("--quantization gptq"), "{cmd}");
                            assert_eq!(cmd.contains("--kv-cache-dtype fp8"), kv == Precision::Fp8);
                            let repo = cmd.split_whitespace().nth(2).unwrap_or_default();
                            // Instruct releases: the official repo names it, and
                            // third-party quantisations name the instruct model too.
                            let lower = repo.to_ascii_lowercase();
                            let instruct_repo =
                                lower.contains("instruct") || lower.contains("chat");
                            assert_eq!(
                                instruct_repo,
                                w.variant == Variant::Instruct,
                                "{file}: {repo} is not the {:?} release",
                                w.variant
                            );
                        }
                    }
                    Err(why) => {
                        assert!(
                            why.contains(&gpu.name) || why.contains(&w.model.id),
                            "{file} {p} {}: unreasoned error `{why}`",
                            gpu.name
                        );
                    }
                }
            }
        }
    }
    assert!(served > 100, "most combinations are servable ({served})");
}

#[test]
fn a_servable_choice_has_a_deployment() {
    // Every (GPU, precision) that serving_choice accepts and whose kernel has a
    // published rate is also accepted by Deployment::new: estimate, fit and plan
    // never disagree in that direction. (The other direction is checkpoint
    // availability: Deployment::new on Volta INT4 assumes a GPTQ checkpoint,
    // which Qwen2.5 7B does not publish.)
    let catalog = Catalog::embedded().unwrap();
    let model = catalog.model("llama-3.1-8b").unwrap();
    let cal = Calibration::bundled();
    let layout = Layout { tp: 1, pp: 1 };
    for gpu in catalog.gpus() {
        for p in [
            Precision::Bf16,
            Precision::Fp8,
            Precision::Int8,
            Precision::Int4,
            Precision::Fp4,
        ] {
            let Ok(c) = serving_choice(&catalog, &model, Variant::Instruct, gpu, p) else {
                continue;
            };
            let with =
                Deployment::with_kernel(&model, gpu, layout, p, Precision::Bf16, c.kernel, &cal);
            let new = Deployment::new(&model, gpu, layout, p, Precision::Bf16, &cal);
            if let Ok(d) = with {
                let n = new.unwrap_or_else(|e| panic!("{} {p}: servable but {e}", gpu.name));
                assert_eq!(n.kernel, d.kernel, "{} {p}", gpu.name);
            }
        }
    }
    // And the GPUs that cannot run a precision reject it in both.
    for (g, p) in [
        ("T4-16GB", Precision::Fp8),
        ("Inferentia2-32GB", Precision::Fp8),
    ] {
        let gpu = catalog.gpu(g).unwrap();
        assert!(serving_choice(&catalog, &model, Variant::Instruct, gpu, p).is_err());
        assert!(Deployment::new(&model, gpu, layout, p, Precision::Bf16, &cal).is_err());
    }
}

#[test]
fn variant_is_validated_with_the_field_and_allowed_values() {
    let catalog = Catalog::embedded().unwrap();
    let text = |variant: &str| {
        format!(
            r#"
kind = "inference"
[model]
id = "llama-3.1-8b"
variant = "{variant}"
[traffic]
requests_per_s = 1
input_tokens = {{ mean = 100 }}
output_tokens = {{ mean = 100 }}
"#
        )
    };
    let raw: RawWorkload = toml::from_str(&text("base")).unwrap();
    assert_eq!(raw.validate(&catalog, None).unwrap().variant, Variant::Base);
    let raw: RawWorkload = toml::from_str(&text("chat")).unwrap();
    let err = raw.validate(&catalog, None).unwrap_err().to_string();
    assert!(err.contains("model.variant"), "{err}");
    assert!(err.contains("\"instruct\" or \"base\""), "{err}");
}
