//! Engines as a plan choice: every launch command parsed and checked flag by
//! flag against the engine's documented options, the plan's numbers carried
//! into the flags, engines compared in one plan, and engines refused where
//! they do not run.

use gpuplan_catalog::{Catalog, Precision};
use gpuplan_core::{plan, Calibration, Engine, InferenceWorkload, Plan, PlanOptions, RawWorkload};
use std::collections::HashMap;

/// What a flag's value must look like.
#[derive(Debug, Clone, Copy)]
enum Value {
    /// A whole number ≥ 1.
    Count,
    /// A number in (0, 1].
    Fraction,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A host address.
    Host,
    /// A file name.
    File,
}

/// `vllm serve` options the commands use (docs.vllm.ai, "vllm serve" CLI
/// reference: EngineArgs and the OpenAI server's frontend arguments).
const VLLM_FLAGS: &[(&str, Value)] = &[
    ("--tensor-parallel-size", Value::Count),
    ("--pipeline-parallel-size", Value::Count),
    ("--max-num-seqs", Value::Count),
    ("--max-num-batched-tokens", Value::Count),
    ("--gpu-memory-utilization", Value::Fraction),
    ("--max-model-len", Value::Count),
    (
        "--dtype",
        Value::OneOf(&["auto", "half", "float16", "bfloat16", "float", "float32"]),
    ),
    (
        "--quantization",
        Value::OneOf(&["fp8", "awq", "gptq", "awq_marlin", "gptq_marlin"]),
    ),
    (
        "--kv-cache-dtype",
        Value::OneOf(&["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]),
    ),
];

/// `python -m sglang.launch_server` options (docs.sglang.ai, "Server
/// Arguments").
const SGLANG_FLAGS: &[(&str, Value)] = &[
    ("--model-path", Value::File),
    ("--tp-size", Value::Count),
    ("--pp-size", Value::Count),
    ("--max-running-requests", Value::Count),
    ("--chunked-prefill-size", Value::Count),
    ("--context-length", Value::Count),
    ("--mem-fraction-static", Value::Fraction),
    ("--host", Value::Host),
    ("--port", Value::Count),
    (
        "--dtype",
        Value::OneOf(&["auto", "half", "float16", "bfloat16", "float", "float32"]),
    ),
    (
        "--quantization",
        Value::OneOf(&[
            "fp8",
            "awq",
            "gptq",
            "w8a8_int8",
            "w8a8_fp8",
            "modelopt_fp8",
        ]),
    ),
    (
        "--kv-cache-dtype",
        Value::OneOf(&["auto", "fp8_e5m2", "fp8_e4m3"]),
    ),
];

/// `trtllm-serve MODEL` options (nvidia.github.io/TensorRT-LLM,
/// "trtllm-serve" command reference).
const TRTLLM_FLAGS: &[(&str, Value)] = &[
    (
        "--backend",
        Value::OneOf(&["pytorch", "trt", "_autodeploy"]),
    ),
    ("--tp_size", Value::Count),
    ("--pp_size", Value::Count),
    ("--max_batch_size", Value::Count),
    ("--max_beam_width", Value::Count),
    ("--max_num_tokens", Value::Count),
    ("--max_seq_len", Value::Count),
    ("--kv_cache_free_gpu_memory_fraction", Value::Fraction),
    ("--host", Value::Host),
    ("--port", Value::Count),
    ("--extra_llm_api_options", Value::File),
];

fn catalog() -> Catalog {
    Catalog::embedded().unwrap()
}

fn workload(c: &Catalog, extra_top: &str, constraints: &str) -> InferenceWorkload {
    let text = format!(
        r#"
kind = "inference"
{extra_top}
[model]
id = "llama-3.1-70b"
precisions = ["bf16", "fp8", "int4"]
[traffic]
requests_per_s = 6
input_tokens = {{ mean = 1500, p99 = 6000 }}
output_tokens = {{ mean = 250, p99 = 1000 }}
[slo]
ttft_ms_p99 = 3000
tpot_ms_p99 = 80
[constraints]
{constraints}
"#
    );
    let raw: RawWorkload = toml::from_str(&text).unwrap();
    raw.validate(c, None).unwrap()
}

/// The command split into (program words, positional model, flag → value).
fn parse(command: &str, program: &[&str]) -> (String, HashMap<String, String>) {
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(&words[..program.len()], program, "{command}");
    let mut rest = &words[program.len()..];
    let mut model = String::new();
    if !rest[0].starts_with("--") {
        model = rest[0].to_string();
        rest = &rest[1..];
    }
    let mut flags = HashMap::new();
    for pair in rest.chunks(2) {
        assert_eq!(pair.len(), 2, "every flag takes a value: {command}");
        assert!(pair[0].starts_with("--"), "{command}");
        assert!(
            flags
                .insert(pair[0].to_string(), pair[1].to_string())
                .is_none(),
            "{} given twice: {command}",
            pair[0]
        );
    }
    (model, flags)
}

/// Every flag documented, every value of its documented kind.
fn check_flags(command: &str, flags: &HashMap<String, String>, table: &[(&str, Value)]) {
    for (flag, value) in flags {
        let Some((_, kind)) = table.iter().find(|(name, _)| name == flag) else {
            panic!("{flag} is not a documented option: {command}");
        };
        match kind {
            Value::Count => assert!(value.parse::<u64>().is_ok_and(|v| v >= 1), "{flag} {value}"),
            Value::Fraction => assert!(
                value.parse::<f64>().is_ok_and(|v| v > 0.0 && v <= 1.0),
                "{flag} {value}"
            ),
            Value::OneOf(words) => assert!(words.contains(&value.as_str()), "{flag} {value}"),
            Value::Host => assert_eq!(value, "0.0.0.0", "{flag}"),
            Value::File => assert!(!value.is_empty()),
        }
    }
}

fn num(flags: &HashMap<String, String>, flag: &str) -> u64 {
    flags[flag].parse().unwrap()
}

/// The plan's numbers, in the engine's flags.
fn check_plan(p: &Plan) {
    let cmd = p.launch_command.as_str();
    match p.engine {
        Engine::Vllm => {
            let (model, f) = parse(cmd, &["vllm", "serve"]);
            check_flags(cmd, &f, VLLM_FLAGS);
            assert_eq!(model, p.checkpoint);
            assert_eq!(num(&f, "--tensor-parallel-size"), u64::from(p.tp));
            assert_eq!(num(&f, "--pipeline-parallel-size"), u64::from(p.pp));
            assert_eq!(num(&f, "--max-num-seqs"), p.max_num_seqs);
            assert_eq!(num(&f, "--max-num-batched-tokens"), p.max_batched_tokens);
            assert_eq!(num(&f, "--max-model-len"), p.max_model_len);
            let util: f64 = f["--gpu-memory-utilization"].parse().unwrap();
            assert!((util - p.memory_utilization).abs() < 0.006, "{cmd}");
            assert_eq!(
                f.get("--kv-cache-dtype").map(String::as_str),
                (p.kv_precision == Precision::Fp8).then_some("fp8"),
                "{cmd}"
            );
            assert!(p.launch_files.is_empty());
        }
        Engine::Sglang => {
            let (model, f) = parse(cmd, &["python", "-m", "sglang.launch_server"]);
            check_flags(cmd, &f, SGLANG_FLAGS);
            assert!(
                model.is_empty(),
                "SGLang takes the model as --model-path: {cmd}"
            );
            assert_eq!(f["--model-path"], p.checkpoint);
            assert_eq!(num(&f, "--tp-size"), u64::from(p.tp));
            assert_eq!(num(&f, "--pp-size"), u64::from(p.pp));
            assert_eq!(num(&f, "--max-running-requests"), p.max_num_seqs);
            assert_eq!(num(&f, "--chunked-prefill-size"), p.max_batched_tokens);
            assert_eq!(num(&f, "--context-length"), p.max_model_len);
            // Weights and KV pool as a share of the GPU's memory.
            let m = &p.derivation.memory;
            // The total the engine sees: the memory model's (CUDA's reported capacity).
            let gpu_gib = catalog().gpu(&p.gpu).unwrap().memory_gib
                * gpuplan_core::REPORTED_CAPACITY_FRACTION;
            let share: f64 = f["--mem-fraction-static"].parse().unwrap();
            let expected = (m.weights_gib + m.kv_cache_gib) / gpu_gib;
            assert!((share - expected).abs() < 0.006, "{cmd}: {expected}");
            assert!(share <= p.memory_utilization + 0.006, "{cmd}");
            assert_eq!(
                f.get("--kv-cache-dtype").map(String::as_str),
                (p.kv_precision == Precision::Fp8).then_some("fp8_e4m3"),
                "{cmd}"
            );
        }
        Engine::Trtllm => {
            let (model, f) = parse(cmd, &["trtllm-serve"]);
            check_flags(cmd, &f, TRTLLM_FLAGS);
            assert_eq!(model, p.checkpoint);
            assert_eq!(f["--backend"], "pytorch");
            assert_eq!(num(&f, "--tp_size"), u64::from(p.tp));
            assert_eq!(num(&f, "--pp_size"), u64::from(p.pp));
            assert_eq!(num(&f, "--max_batch_size"), p.max_num_seqs);
            assert_eq!(num(&f, "--max_num_tokens"), p.max_batched_tokens);
            assert_eq!(num(&f, "--max_seq_len"), p.max_model_len);
            // The KV pool as a share of what is free after weights and the rest.
            let m = &p.derivation.memory;
            let gpu_gib = catalog().gpu(&p.gpu).unwrap().memory_gib
                * gpuplan_core::REPORTED_CAPACITY_FRACTION;
            let free = gpu_gib - m.weights_gib - m.activations_gib - m.overhead_gib;
            let share: f64 = f["--kv_cache_free_gpu_memory_fraction"].parse().unwrap();
            assert!((share - m.kv_cache_gib / free).abs() < 0.006, "{cmd}");
            match f.get("--extra_llm_api_options") {
                Some(file) => {
                    assert_eq!(p.kv_precision, Precision::Fp8, "{cmd}");
                    let written = p.launch_files.iter().find(|l| &l.path == file).unwrap();
                    assert_eq!(written.contents, "kv_cache_config:\n  dtype: fp8\n");
                }
                None => assert_ne!(p.kv_precision, Precision::Fp8, "{cmd}"),
            }
        }
    }
}

#[test]
fn every_engine_gets_a_documented_command_with_the_plan_numbers() {
    let c = catalog();
    let w = workload(
        &c,
        r#"engines = ["vllm", "sglang", "trtllm"]"#,
        r#"gpus = ["H100", "L40S", "A100-80GB"]"#,
    );
    let report = plan(&c, &w, &Calibration::bundled(), PlanOptions { top: 200 });
    let mut seen = HashMap::new();
    for p in report.plans.iter().chain(&report.pareto) {
        check_plan(p);
        *seen.entry(p.engine).or_insert(0) += 1;
    }
    for e in Engine::ALL {
        assert!(
            seen.get(&e).copied().unwrap_or(0) > 0,
            "no {e} plan: {seen:?}"
        );
    }
}

#[test]
fn tensorrt_llm_takes_an_fp8_kv_cache_from_its_options_file_and_refuses_foreign_checkpoints() {
    let c = catalog();
    let text = r#"
kind = "inference"
engine = "trtllm"
[model]
id = "llama-3.1-8b"
precisions = ["bf16", "fp8", "int4"]
kv_precision = "fp8"
[traffic]
requests_per_s = 4
input_tokens = { mean = 1000, p99 = 3000 }
output_tokens = { mean = 200, p99 = 600 }
[slo]
ttft_ms_p99 = 2000
tpot_ms_p99 = 60
[constraints]
gpus = ["H100"]
"#;
    let raw: RawWorkload = toml::from_str(text).unwrap();
    let w = raw.validate(&c, None).unwrap();
    let report = plan(&c, &w, &Calibration::bundled(), PlanOptions { top: 20 });
    assert!(!report.plans.is_empty());
    let mut fp8 = 0;
    for p in &report.plans {
        // The 16-bit checkpoint and NVIDIA's ModelOpt FP8 one load; the
        // catalog's INT4 ones (AutoAWQ / AutoGPTQ) do not.
        match p.precision {
            Precision::Bf16 => assert!(p.launch_command.contains("meta-llama/")),
            Precision::Fp8 => {
                fp8 += 1;
                assert!(
                    p.launch_command
                        .starts_with("trtllm-serve nvidia/Llama-3.1-8B-Instruct-FP8 "),
                    "{}",
                    p.launch_command
                );
            }
            other => panic!("{other}: {}", p.launch_command),
        }
        assert_eq!(p.kv_precision, Precision::Fp8);
        assert_eq!(p.launch_files.len(), 1);
        check_plan(p);
    }
    assert!(fp8 > 0, "no FP8 plan on TensorRT-LLM");
    let rejected = serde_json::to_value(&report.rejected).unwrap();
    let example = rejected["engine_unsupported"]["example"].as_str().unwrap();
    assert!(example.contains("ModelOpt"), "{example}");
}

#[test]
fn each_engine_serves_the_fp8_checkpoint_it_loads() {
    let c = catalog();
    let model = c.model("llama-3.1-70b").unwrap();
    let h100 = c.gpu("H100").unwrap();
    let repo = |engine| {
        gpuplan_core::serving_choice_on(
            &c,
            &model,
            gpuplan_catalog::Variant::Instruct,
            h100,
            Precision::Fp8,
            engine,
        )
        .unwrap()
        .repo
    };
    // vLLM and SGLang keep the first row (compressed-tensors); TensorRT-LLM
    // takes NVIDIA's ModelOpt export.
    assert_eq!(
        repo(Engine::Vllm),
        "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8"
    );
    assert_eq!(
        repo(Engine::Sglang),
        "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8"
    );
    assert_eq!(repo(Engine::Trtllm), "nvidia/Llama-3.1-70B-Instruct-FP8");
    // A model with no ModelOpt export: TensorRT-LLM still gets the first
    // row, and the capacity step refuses it with the reason.
    let mixtral = c.model("mixtral-8x7b").unwrap();
    let choice = gpuplan_core::serving_choice_on(
        &c,
        &mixtral,
        gpuplan_catalog::Variant::Instruct,
        h100,
        Precision::Fp8,
        Engine::Trtllm,
    )
    .unwrap();
    assert!(Engine::Trtllm
        .loads(&choice)
        .unwrap_err()
        .contains("ModelOpt"));
}

#[test]
fn the_engine_changes_the_prediction_by_its_fitted_step_time() {
    let c = catalog();
    let one = |engine: &str| {
        let mut w = workload(
            &c,
            &format!(r#"engine = "{engine}""#),
            r#"gpus = ["H100"]
providers = ["aws"]"#,
        );
        // The same checkpoint on both (TensorRT-LLM loads the 16-bit one).
        w.precisions = vec![Precision::Bf16];
        plan(&c, &w, &Calibration::bundled(), PlanOptions { top: 1 })
            .plans
            .remove(0)
    };
    let (vllm, trt) = (one("vllm"), one("trtllm"));
    assert_eq!((vllm.engine, trt.engine), (Engine::Vllm, Engine::Trtllm));
    let factor = Calibration::bundled().get("engine_step_time.vllm").unwrap();
    assert!(
        factor > 1.0,
        "vLLM fitted slower than TensorRT-LLM: {factor}"
    );
    // The same replica, on TensorRT-LLM, iterates faster by the factor.
    let ratio = vllm.derivation.iteration_ms_full_batch / trt.derivation.iteration_ms_full_batch;
    if vllm.max_num_seqs == trt.max_num_seqs && vllm.tp == trt.tp && vllm.precision == trt.precision
    {
        assert!((ratio - factor).abs() < 1e-6, "{ratio} vs {factor}");
    }
    assert!(
        trt.usd_per_hour <= vllm.usd_per_hour,
        "a faster engine never needs a dearer fleet: {} > {}",
        trt.usd_per_hour,
        vllm.usd_per_hour
    );
}

#[test]
fn tensorrt_llm_is_refused_on_amd_with_the_reason() {
    let c = catalog();
    let w = workload(
        &c,
        r#"engines = ["vllm", "trtllm"]"#,
        r#"gpus = ["MI300X"]"#,
    );
    let report = plan(&c, &w, &Calibration::bundled(), PlanOptions { top: 50 });
    assert!(!report.plans.is_empty());
    assert!(report.plans.iter().all(|p| p.engine == Engine::Vllm));
    let rejected = serde_json::to_value(&report.rejected).unwrap();
    let reason = &rejected["engine_unsupported"];
    assert!(reason.is_object(), "{rejected}");
    let example = reason["example"].as_str().unwrap_or_default();
    assert!(
        example.contains("MI300X") && example.contains("NVIDIA GPUs only"),
        "{reason}"
    );
}

#[test]
fn workloads_name_engines_as_a_word_a_table_or_a_list() {
    let c = catalog();
    let parse = |top: &str| -> Result<InferenceWorkload, String> {
        let text = format!(
            "kind = \"inference\"\n{top}\n[model]\nid = \"llama-3.1-8b\"\n[traffic]\nrequests_per_s = 1\ninput_tokens = {{ mean = 100, p99 = 200 }}\noutput_tokens = {{ mean = 100, p99 = 200 }}\n"
        );
        let raw: RawWorkload = toml::from_str(&text).map_err(|e| e.to_string())?;
        raw.validate(&c, None).map_err(|e| e.to_string())
    };
    assert_eq!(parse("").unwrap().engines, [Engine::Vllm]);
    assert_eq!(
        parse("engine = \"sglang\"").unwrap().engines,
        [Engine::Sglang]
    );
    let table = parse("[engine]\nname = \"trtllm\"\nmax_batched_tokens = 4096").unwrap();
    assert_eq!(
        (table.engines[0], table.max_batched_tokens),
        (Engine::Trtllm, 4096)
    );
    assert_eq!(
        parse("engines = [\"trtllm\", \"vllm\"]").unwrap().engines,
        [Engine::Trtllm, Engine::Vllm]
    );
    for (bad, says) in [
        ("engine = \"tgi\"", "one of vllm, sglang, trtllm"),
        ("engines = []", "at least one"),
        ("engines = [\"vllm\", \"VLLM\"]", "each engine once"),
        ("engine = \"vllm\"\nengines = [\"sglang\"]", "not both"),
        ("engine = 3", "an engine name"),
        ("[engine]\nnmae = \"vllm\"", "nmae"),
    ] {
        let err = parse(bad).unwrap_err();
        assert!(err.contains(says), "{bad}: {err}");
    }
}

#[test]
fn the_bundled_vllm_step_time_is_the_fit_on_its_rows() {
    use gpuplan_catalog::{parse_benchmarks, BUNDLED_BENCHMARKS_DEV_2};
    use gpuplan_core::mlperf_inference::bundled_input_lengths;
    use gpuplan_core::{engine_loss, engine_rows, fit_engine_factors, MIN_ENGINE_ROWS};
    let c = catalog();
    let rows = parse_benchmarks("benchmarks_dev_2.csv", BUNDLED_BENCHMARKS_DEV_2).unwrap();
    let cal = Calibration::bundled();
    let lengths = bundled_input_lengths();
    let mine = engine_rows(&c, &rows, "vllm", &cal, &lengths);
    assert!(mine.len() >= MIN_ENGINE_ROWS, "{} vLLM rows", mine.len());
    assert!(mine
        .iter()
        .all(|r| r.engine == "vllm" && !r.gpu.starts_with("MI")));
    let fitted = fit_engine_factors(&c, &rows, &cal, &lengths);
    assert_eq!(
        fitted.get("engine_step_time.vllm"),
        cal.get("engine_step_time.vllm"),
        "refit: gpuplan validate --set mlperf --kind inference --fit"
    );
    // The fit beats TensorRT-LLM's speed on vLLM's own rows.
    let mut as_trtllm = cal.clone();
    for f in &mut as_trtllm.factors {
        if f.name == "engine_step_time.vllm" {
            f.value = 1.0;
        }
    }
    assert!(engine_loss(&c, &mine, &cal, &lengths) < engine_loss(&c, &mine, &as_trtllm, &lengths));
    // Every other factor is untouched.
    for (a, b) in fitted.factors.iter().zip(&cal.factors) {
        if a.name != "engine_step_time.vllm" {
            assert_eq!(a.value, b.value, "{}", a.name);
        }
    }
}
