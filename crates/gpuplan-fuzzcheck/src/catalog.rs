//! Catalog inputs: every CSV table, SkyPilot `vms.csv`, HF `config.json`,
//! parametric model ids and benchmark files.

use crate::fixtures::{self, text};
use crate::{assert_finite, assert_non_negative};
use gpuplan_catalog::limits;
use gpuplan_catalog::{
    check_model, import_hf_config, import_skypilot_vms, parse_benchmarks, parse_parametric_gpt,
    Catalog, CatalogError, GpuSpec, ModelArch, Precision, TableKind, Variant,
};
use gpuplan_core::{
    check_replica, estimate, inference_memory, EngineLimits, Layout, ReplicaSpec, Spelling,
};
use std::collections::HashSet;

/// A rejected input names `file` and a line or a field.
pub(crate) fn assert_located(e: &CatalogError, file: &str) {
    assert_eq!(
        e.file.as_deref(),
        Some(file),
        "the error does not name the file: {e}"
    );
    assert!(
        e.line.is_some() || e.field.is_some(),
        "the error names neither a line nor a field: {e}"
    );
    assert!(e.to_string().starts_with(file), "{e}");
}

/// Adds one table to the small catalog's tables and builds: the error names
/// the user's file and a row or a field; a catalog that builds keeps the
/// catalog's invariants, and the models run on what the file added.
fn table(kind: TableKind, data: &[u8]) {
    let Some(text) = text(data) else { return };
    let file = format!("user/{}", kind.file_name());
    let mut b = fixtures::builder().clone();
    if let Err(e) = b.extend(kind, &file, text) {
        assert_located(&e, &file);
        return;
    }
    match b.build() {
        Err(e) => assert_located(&e, &file),
        Ok(c) => check_catalog(&c),
    }
}

/// `--gpus` / `gpus.csv`.
pub fn catalog_gpus(data: &[u8]) {
    table(TableKind::Gpus, data);
}

/// `gpu_aliases.csv`.
pub fn catalog_gpu_aliases(data: &[u8]) {
    table(TableKind::GpuAliases, data);
}

/// `mig_profiles.csv`.
pub fn catalog_mig_profiles(data: &[u8]) {
    table(TableKind::MigProfiles, data);
}

/// `--offerings` / `cloud_offerings.csv`.
pub fn catalog_offerings(data: &[u8]) {
    table(TableKind::Offerings, data);
}

/// `regions.csv`.
pub fn catalog_regions(data: &[u8]) {
    table(TableKind::Regions, data);
}

/// `--models` / `models.csv`.
pub fn catalog_models(data: &[u8]) {
    table(TableKind::Models, data);
}

/// `checkpoints.csv`.
pub fn catalog_checkpoints(data: &[u8]) {
    table(TableKind::Checkpoints, data);
}

/// What every built catalog satisfies, whatever its files said.
pub(crate) fn check_catalog(c: &Catalog) {
    let base = fixtures::catalog();
    assert_finite("gpus", c.gpus());
    let mut new_gpus = 0;
    for g in c.gpus() {
        assert!(
            limits::GPU_MEMORY_GIB.contains(g.memory_gib),
            "{}: memory {}",
            g.name,
            g.memory_gib
        );
        assert!(limits::GPU_MEMORY_BANDWIDTH_GBPS.contains(g.memory_bandwidth_gbps));
        let found = c.gpu(&g.name).expect("every GPU is found by its name");
        assert_eq!(
            found.name, g.name,
            "GPU `{}` is shadowed by `{}`",
            g.name, found.name
        );
        if base.gpus().iter().all(|b| b != g) && new_gpus < 3 {
            new_gpus += 1;
            gpu_runs(c, g);
        }
    }
    let mut new_models = 0;
    for m in c.models() {
        assert_eq!(check_model(m), Ok(()), "{}", m.id);
        for name in std::iter::once(&m.id)
            .chain(&m.aliases)
            .chain(m.hf_repo.iter())
        {
            let found = c
                .model(name)
                .unwrap_or_else(|e| panic!("model `{}` not found by its name `{name}`: {e}", m.id));
            assert_eq!(
                found.id, m.id,
                "`{name}` of model `{}` finds model `{}`",
                m.id, found.id
            );
        }
        if base.models().iter().all(|b| b != m) && new_models < 3 {
            new_models += 1;
            model_runs(c, m);
        }
    }
    assert_finite("offerings", c.offerings());
    for o in c.offerings() {
        assert!(limits::OFFERING_ACCELERATOR_COUNT.contains(o.accelerator_count));
        for p in [o.price_per_hour, o.spot_price_per_hour]
            .into_iter()
            .flatten()
        {
            assert!(p > 0.0 && limits::OFFERING_PRICE_USD_PER_HOUR.contains(p));
        }
        if let Some(g) = o.scale_out_gbits() {
            assert!(limits::OFFERING_SCALE_OUT_GBITS.contains(g), "{o:?}");
        }
        if let Some(g) = &o.gpu {
            assert_eq!(&c.gpu(g).expect("an offering's GPU exists").name, g);
        }
        assert!(!o.provider.is_empty() && o.provider == o.provider.to_ascii_lowercase());
    }
    for w in c.offerings().windows(2) {
        assert!(
            w[0].list_price() <= w[1].list_price(),
            "offerings are sorted cheapest first"
        );
    }
    for p in c.mig_profiles() {
        assert_eq!(
            c.gpu(&p.gpu).map(|g| g.name.as_str()).ok(),
            Some(p.gpu.as_str()),
            "a MIG profile is stored under its GPU's canonical name"
        );
    }
    let ids: HashSet<&str> = c.models().iter().map(|m| m.id.as_str()).collect();
    for k in c.checkpoints() {
        assert!(ids.contains(k.model.as_str()), "{k:?}");
    }
    assert_finite("anomalies", c.anomalies());
}

/// The memory and speed of a bundled model on a new GPU are finite.
fn gpu_runs(c: &Catalog, gpu: &GpuSpec) {
    let model = c.model("llama-3.1-8b").expect("a bundled model");
    replica_runs(c, &model, gpu, Precision::Bf16);
}

/// The memory and speed of a new model on an H100 are finite.
fn model_runs(c: &Catalog, model: &ModelArch) {
    let h100 = c.gpu("H100").expect("a bundled GPU");
    replica_runs(c, model, h100, Precision::Bf16);
}

/// Runs `fit` and `estimate`'s path on one GPU: the validation layer, the
/// memory model and, when it fits, the performance model at a modest load.
/// Whatever the check accepts gives finite, non-negative numbers.
pub(crate) fn replica_runs(c: &Catalog, model: &ModelArch, gpu: &GpuSpec, precision: Precision) {
    let params = model.params();
    assert!(
        (params.total() as f64) <= limits::MAX_MODEL_PARAMS,
        "{}",
        model.id
    );
    assert!(params.active() <= params.total(), "{}", model.id);
    let (input_len, output_len) = (512u64, 128u64);
    let context = (input_len + output_len).min(model.max_position_embeddings);
    let spec = ReplicaSpec {
        model,
        gpu,
        precision,
        kv_precision: precision,
        layout: Layout::SINGLE,
        limits: EngineLimits::default(),
        context_len: context,
        engine: gpuplan_core::Engine::Vllm,
        spelling: Spelling::FLAGS,
    };
    let Ok(checked) = check_replica(&spec, c, Variant::Instruct) else {
        return;
    };
    let memory = inference_memory(&checked.memory_input())
        .unwrap_or_else(|e| panic!("a checked replica's memory: {e}"));
    assert_finite("memory", &memory);
    assert_non_negative("kv bytes per token", memory.kv_cache_bytes_per_token);
    if !memory.fits || context < input_len + output_len {
        return;
    }
    let dep = checked
        .deployment(fixtures::calibration())
        .unwrap_or_else(|e| panic!("a checked replica's deployment: {e}"));
    let limits = EngineLimits::default();
    if let Ok(e) = estimate(
        &dep,
        &memory,
        input_len,
        output_len,
        None,
        limits.max_num_seqs,
        limits.max_batched_tokens,
    ) {
        assert_finite("estimate", &e);
        assert!(e.ttft_ms > 0.0 && e.tpot_ms > 0.0, "{e:?}");
    }
}

/// HF `config.json` import: errors name `config.json` and the key; an
/// imported model passes the catalog's own model check and runs.
pub fn hf_config(data: &[u8]) {
    let Some(text) = text(data) else { return };
    match import_hf_config("config.json", text, "fuzz-model") {
        Err(e) => assert_located(&e, "config.json"),
        Ok(m) => {
            assert_eq!(check_model(&m), Ok(()), "{m:?}");
            let c = fixtures::catalog();
            model_runs(c, &m);
        }
    }
}

/// SkyPilot `vms.csv` import (the first byte picks `--skypilot-provider`):
/// errors name the file and a row or field; imported rows are in range and
/// a catalog built with them keeps its invariants.
pub fn skypilot_vms(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Some(text) = text(rest) else { return };
    let provider = ["aws", "GCP", " lambda ", "", "new-cloud"][usize::from(pick) % 5];
    match import_skypilot_vms("vms.csv", text, provider) {
        Err(e) => assert_located(&e, "vms.csv"),
        Ok(rows) => {
            let p = provider.trim().to_ascii_lowercase();
            for o in &rows {
                assert_eq!(o.provider, p);
                assert!(o.price_per_hour.is_some_and(|x| x > 0.0), "{o:?}");
            }
            let mut b = fixtures::builder().clone();
            b.replace_provider_offerings(&p, rows);
            let c = b
                .build()
                .unwrap_or_else(|e| panic!("imported offerings break the build: {e}"));
            check_catalog(&c);
        }
    }
}

/// Parametric model ids (`gpt-h…-l…-a…`), as given and after `gpt-h`:
/// never a panic; an error names the id; a model passes the model check,
/// is found by the catalog under its id, and runs.
pub fn parametric_model(data: &[u8]) {
    let Some(text) = text(data) else { return };
    for id in [text.to_string(), format!("gpt-h{text}")] {
        match parse_parametric_gpt(&id) {
            None => assert!(!id.trim().to_ascii_lowercase().starts_with("gpt-h")),
            Some(Err(msg)) => assert!(msg.contains("parametric model id"), "{msg}"),
            Some(Ok(m)) => {
                assert_eq!(check_model(&m), Ok(()));
                assert_eq!(m.hidden_size, m.num_attention_heads * m.head_dim);
                let c = fixtures::catalog();
                if let Ok(found) = c.model(&id) {
                    // A catalog name wins over the parametric reading.
                    if c.models().iter().all(|x| x.id != found.id) {
                        assert_eq!(found, m);
                    }
                }
                model_runs(c, &m);
            }
        }
    }
}

/// Benchmark files (`validate --benchmarks`): errors name the file and a
/// row or field; parsed rows have positive finite values, and `validate`
/// on them gives a finite report.
pub fn benchmarks(data: &[u8]) {
    let Some(text) = text(data) else { return };
    match parse_benchmarks("bench.csv", text) {
        Err(e) => assert_located(&e, "bench.csv"),
        Ok(rows) => {
            for r in &rows {
                assert!(limits::BENCH_VALUE.contains(r.value), "{r:?}");
            }
            let rows = &rows[..rows.len().min(4)];
            let report = gpuplan_core::validate(fixtures::catalog(), rows, fixtures::calibration());
            assert_finite("validation report", &report);
        }
    }
}
