//! Integration tests of the bundled catalog.

use gpuplan_catalog::{import_hf_config, Catalog, CatalogBuilder, TableKind};

fn catalog() -> Catalog {
    Catalog::embedded().expect("bundled catalog loads")
}

#[test]
fn every_bundled_model_matches_its_exact_parameter_count() {
    let c = catalog();
    assert!(c.models().len() >= 25, "at least 25 models");
    for m in c.models() {
        let exact = m
            .exact_params
            .unwrap_or_else(|| panic!("{} has no exact_params", m.id));
        let got = m.params().total();
        let err = (got as f64 / exact as f64 - 1.0).abs();
        assert!(
            err < 0.005,
            "{}: computed {got}, exact {exact} ({:.3}%)",
            m.id,
            err * 100.0
        );
    }
}

#[test]
fn moe_active_parameters_match_published_figures() {
    let c = catalog();
    // Mixtral 8x7B: 12.9B active (Mistral); DeepSeek-V3: 37B active (report);
    // Qwen3-235B-A22B: 22B active (model card).
    for (id, active_b, tol) in [
        ("mixtral-8x7b", 12.9, 0.01),
        ("deepseek-v3", 37.0, 0.03),
        ("qwen3-235b-a22b", 22.0, 0.02),
    ] {
        let p = c.model(id).unwrap().params();
        let got = p.active() as f64 / 1e9;
        assert!(
            (got / active_b - 1.0).abs() < tol,
            "{id}: active {got}B vs {active_b}B"
        );
    }
}

#[test]
fn gpu_lookup_accepts_aliases_case_insensitively() {
    let c = catalog();
    for name in [
        "h100",
        "H100-SXM",
        "H100-80GB",
        "NVIDIA H100 80GB HBM3",
        "nvidia-h100-80gb",
    ] {
        assert_eq!(c.gpu(name).unwrap().name, "H100-SXM-80GB", "{name}");
    }
    assert_eq!(c.gpu("a100-80gb").unwrap().name, "A100-SXM-80GB");
    let err = c.gpu("H1000").unwrap_err().to_string();
    assert!(
        err.contains("unknown GPU `H1000`") && err.contains("H100"),
        "{err}"
    );
}

#[test]
fn model_lookup_accepts_hf_repo_ids_and_suggests() {
    let c = catalog();
    assert_eq!(
        c.model("meta-llama/Llama-3.1-70B").unwrap().id,
        "llama-3.1-70b"
    );
    assert_eq!(c.model("LLAMA-3.1-8B").unwrap().id, "llama-3.1-8b");
    let err = c.model("llama-3.1-7b").unwrap_err().to_string();
    assert!(
        err.contains("did you mean") && err.contains("llama-3.1-"),
        "{err}"
    );
    assert_eq!(c.model("gpt-h4096-l30-a32-v131072").unwrap().num_layers, 30);
}

#[test]
fn every_offering_region_has_a_location() {
    let c = catalog();
    for o in c.offerings() {
        assert!(
            c.region(&o.provider, &o.region).is_some(),
            "{}/{} has no region row",
            o.provider,
            o.region
        );
    }
}

#[test]
fn unresolved_accelerators_are_reported_not_dropped() {
    let c = catalog();
    let unresolved: usize = c.unresolved_accelerators().values().sum();
    let resolved = c.offerings().iter().filter(|o| o.gpu.is_some()).count();
    assert_eq!(unresolved + resolved, c.offerings().len());
    assert!(resolved > 3000, "most offerings resolve: {resolved}");
    if unresolved > 0 {
        assert!(c.warnings().iter().any(|w| w.contains("no GPU spec")));
    }
}

#[test]
fn user_table_overrides_a_bundled_row() {
    let mut b = CatalogBuilder::embedded().unwrap();
    let csv = "name,vendor,architecture,memory_gib,memory_bandwidth_gbps,bf16_tflops,nvlink_gbps,source\n\
               H100-SXM-80GB,NVIDIA,Hopper,80,9999,989.4,900,my lab measurement\n";
    b.extend(TableKind::Gpus, "my/gpus.csv", csv).unwrap();
    let c = b.build().unwrap();
    assert_eq!(c.gpu("h100").unwrap().memory_bandwidth_gbps, 9999.0);
}

#[test]
fn alias_to_unknown_gpu_is_an_error_naming_the_file() {
    let mut b = CatalogBuilder::embedded().unwrap();
    b.extend(
        TableKind::GpuAliases,
        "my/aliases.csv",
        "name,alias\nH999,foo\n",
    )
    .unwrap();
    let err = b.build().unwrap_err().to_string();
    assert!(
        err.contains("my/aliases.csv, line 2") && err.contains("H999"),
        "{err}"
    );
}

#[test]
fn malformed_csv_names_file_and_line() {
    let mut b = CatalogBuilder::default();
    let err = b
        .extend(TableKind::Offerings, "o.csv", "provider,instance_type,accelerator,accelerator_count,region,price_per_hour\naws,p5,H100,8,us-east-1,-3\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("o.csv, line 2, field `price_per_hour`"),
        "{err}"
    );
    let err = b
        .extend(TableKind::Gpus, "g.csv", "name,vendor\n\"unclosed,x\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("g.csv"), "{err}");
}

/// Importing a stored Hugging Face config gives the bundled architecture.
#[test]
fn hf_config_import_matches_bundled_entries() {
    let c = catalog();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hf");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let id = path.file_stem().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let imported = import_hf_config(&path.display().to_string(), &text, &id).unwrap();
        let bundled = c.model(&id).unwrap();
        assert_eq!(imported.num_layers, bundled.num_layers, "{id}");
        assert_eq!(imported.hidden_size, bundled.hidden_size, "{id}");
        assert_eq!(
            imported.num_attention_heads, bundled.num_attention_heads,
            "{id}"
        );
        assert_eq!(imported.num_kv_heads, bundled.num_kv_heads, "{id}");
        assert_eq!(imported.head_dim, bundled.head_dim, "{id}");
        assert_eq!(imported.vocab_size, bundled.vocab_size, "{id}");
        assert_eq!(
            imported.tie_word_embeddings, bundled.tie_word_embeddings,
            "{id}"
        );
        assert_eq!(imported.moe, bundled.moe, "{id}");
        assert_eq!(imported.mla, bundled.mla, "{id}");
        assert_eq!(imported.sliding_window, bundled.sliding_window, "{id}");
        assert_eq!(imported.mlp_type, bundled.mlp_type, "{id}");
        if !bundled.is_moe() {
            assert_eq!(
                imported.intermediate_size, bundled.intermediate_size,
                "{id}"
            );
        }
        assert_eq!(imported.params().total(), bundled.params().total(), "{id}");
        checked += 1;
    }
    assert!(checked >= 4, "checked {checked} configs");
}

#[test]
fn every_model_with_a_repo_has_a_checkpoint() {
    let c = catalog();
    for m in c.models().iter().filter(|m| m.hf_repo.is_some()) {
        assert!(
            c.checkpoints().iter().any(|k| k.model == m.id),
            "{} has an HF repo but no row in checkpoints.csv",
            m.id
        );
    }
}

#[test]
fn checkpoint_lookup_tells_instruct_from_base() {
    use gpuplan_catalog::{CheckpointFormat, Precision, Variant};
    let c = catalog();
    let instruct = c
        .checkpoint("llama-3.1-70b", Variant::Instruct, Precision::Bf16)
        .unwrap();
    assert_eq!(instruct.repo, "meta-llama/Llama-3.1-70B-Instruct");
    let base = c
        .checkpoint("llama-3.1-70b", Variant::Base, Precision::Bf16)
        .unwrap();
    assert_eq!(base.repo, "meta-llama/Llama-3.1-70B");
    let awq = c
        .checkpoint("llama-3.1-70b", Variant::Instruct, Precision::Int4)
        .unwrap();
    assert_eq!(awq.format, CheckpointFormat::Awq);
    // Llama 3.3 70B has only an instruct release, and it is its own model now.
    assert_eq!(c.model("llama-3.3-70b").unwrap().id, "llama-3.3-70b");
    assert!(c
        .checkpoint("llama-3.3-70b", Variant::Base, Precision::Bf16)
        .is_none());
}

#[test]
fn a_checkpoint_of_an_unknown_model_is_an_error_naming_the_file() {
    let mut b = CatalogBuilder::embedded().unwrap();
    b.extend(
        TableKind::Checkpoints,
        "my/checkpoints.csv",
        "model,variant,precision,repo,format,source\nllama-3.1-70x,instruct,bf16,a/b,bf16,test\n",
    )
    .unwrap();
    let err = b.build().unwrap_err().to_string();
    assert!(err.contains("my/checkpoints.csv"), "{err}");
    assert!(err.contains("unknown model `llama-3.1-70x`"), "{err}");
    assert!(err.contains("llama-3.1-70b"), "{err}");
}
