//! `gpuplan plan` on image-generation, speech-to-text and embedding services
//! (issue 12): the examples, the JSON contract, infeasible (exit 1) and bad
//! input (exit 2, naming file and field).

use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn gpuplan(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn every_service_example_plans_with_a_launch_command() {
    for (file, engine) in [
        ("examples/services/sdxl-images.toml", "demo_txt2img_xl.py"),
        (
            "examples/services/whisper-live.toml",
            "vllm serve openai/whisper-large-v3-turbo",
        ),
        (
            "examples/services/rag-embeddings.toml",
            "text-embeddings-inference",
        ),
    ] {
        let out = gpuplan(&["plan", file, "--json", "--top", "3"]);
        assert_eq!(out.code, 0, "{file}: {}", out.stderr);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let plans = v["plans"].as_array().unwrap();
        assert_eq!(plans.len(), 3, "{file}");
        assert!(
            plans[0]["launch"].as_str().unwrap().contains(engine),
            "{file}"
        );
        assert!(
            plans[0]["usd_per_hour"].as_f64().unwrap()
                <= plans[2]["usd_per_hour"].as_f64().unwrap()
        );
        let text = gpuplan(&["plan", file]);
        assert_eq!(text.code, 0);
        assert!(text.stdout.contains("Launch: "), "{}", text.stdout);
    }
}

#[test]
fn infeasible_is_exit_1_and_bad_input_exit_2_naming_the_field() {
    let dir = std::env::temp_dir().join(format!("gpuplan-nonllm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let tight = write(
        "tight.toml",
        "kind = \"inference\"\n[model]\nid = \"flux.1-dev\"\n[traffic]\nrequests_per_s = 1\n[slo]\nlatency_ms_p99 = 50\n",
    );
    let out = gpuplan(&["plan", &tight]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("E2eSlo"), "{}", out.stdout);
    for (name, text, field) in [
        ("steps.toml", "kind = \"inference\"\n[model]\nid = \"bge-large\"\n[request]\nsteps = 4\n[traffic]\nrequests_per_s = 1\n", "request.steps"),
        ("beam.toml", "kind = \"inference\"\n[model]\nid = \"whisper-small\"\n[request]\nbeam = 0\n[traffic]\nrequests_per_s = 1\n", "request.beam"),
        ("typo.toml", "kind = \"inference\"\n[model]\nid = \"sdxl\"\n[traffic]\nrequest_per_s = 1\n", "request_per_s"),
    ] {
        let path = write(name, text);
        let out = gpuplan(&["plan", &path]);
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert!(out.stderr.contains(name) && out.stderr.contains(field), "{name}: {}", out.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fit_answers_whether_a_non_llm_model_fits_at_each_batch() {
    let out = gpuplan(&[
        "fit",
        "--model",
        "sdxl",
        "--gpu",
        "L4",
        "--precision",
        "fp16",
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["model"], "sdxl-base-1.0");
    assert_eq!(v["fits"], true);
    let max = v["max_batch"].as_u64().unwrap();
    assert!((1..=8).contains(&max), "{max}");
    // FLUX.1-dev's 12B transformer and T5-XXL in 16 bits do not fit an L4.
    let out = gpuplan(&[
        "fit",
        "--model",
        "flux.1-dev",
        "--gpu",
        "L4",
        "--precision",
        "fp16",
    ]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("DOES NOT FIT"));
    let out = gpuplan(&[
        "fit",
        "--model",
        "bge-large",
        "--gpu",
        "L4",
        "--precision",
        "fp9",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--precision"), "{}", out.stderr);
}

#[test]
fn fit_imports_whisper_and_unet_configs() {
    let dir = std::env::temp_dir().join(format!("gpuplan-nonllm-hf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.json");
    std::fs::write(
        &path,
        r#"{"model_type": "whisper", "d_model": 768, "encoder_layers": 12, "decoder_layers": 12,
            "encoder_attention_heads": 12, "decoder_attention_heads": 12, "encoder_ffn_dim": 3072,
            "decoder_ffn_dim": 3072, "num_mel_bins": 80, "vocab_size": 51865}"#,
    )
    .unwrap();
    let p = path.display().to_string();
    let out = gpuplan(&[
        "fit",
        "--hf-config",
        &p,
        "--gpu",
        "T4",
        "--precision",
        "fp16",
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["family"], "speech");
    std::fs::write(
        &path,
        r#"{"_class_name": "UNet2DConditionModel", "block_out_channels": [320, 640]}"#,
    )
    .unwrap();
    let out = gpuplan(&["fit", "--hf-config", &p, "--gpu", "T4"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("config.json") && out.stderr.contains("down_block_types"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verbs_for_llm_engines_only_say_so_with_exit_2() {
    for args in [
        &["simulate", "examples/services/whisper-live.toml"][..],
        &["plan", "examples/services/sdxl-images.toml", "--summary"][..],
        &[
            "plan",
            "examples/services/rag-embeddings.toml",
            "--export",
            "k8s",
        ][..],
    ] {
        let out = gpuplan(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("covers LLM engines only"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn estimate_predicts_a_non_llm_request_in_its_units_and_agrees_with_fit() {
    let json = |args: &[&str]| -> serde_json::Value {
        let out = gpuplan(args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let e = json(&[
        "estimate",
        "--model",
        "sdxl",
        "--gpu",
        "H100",
        "--precision",
        "fp8",
        "--count",
        "2",
        "--concurrency",
        "2",
        "--json",
    ]);
    assert_eq!(e["family"], "diffusion");
    assert_eq!(e["unit_name"], "images");
    assert_eq!(e["batch"]["batch"], 2);
    let (single, batch_rps, best_rps) = (
        e["single"]["total_s"].as_f64().unwrap(),
        e["batch"]["requests_per_s"].as_f64().unwrap(),
        e["best"]["requests_per_s"].as_f64().unwrap(),
    );
    // Two GPUs, each finishing a batch of 2 in its batch time.
    let batch_s = e["batch"]["batch_s"].as_f64().unwrap();
    assert!((batch_rps - 2.0 * 2.0 / batch_s).abs() < 1e-9 * batch_rps);
    assert!(single > 0.0 && single < batch_s, "{single} vs {batch_s}");
    assert!(best_rps >= batch_rps && best_rps >= 2.0 / single * (1.0 - 1e-9));
    // `fit` prints the same batch times: the best batch's rate there, per GPU.
    let f = json(&[
        "fit",
        "--model",
        "sdxl",
        "--gpu",
        "H100",
        "--precision",
        "fp8",
        "--json",
    ]);
    let best_batch = e["best"]["batch"].as_u64().unwrap();
    let row = f["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["batch"].as_u64() == Some(best_batch))
        .expect("fit has the best batch");
    // fit's default request is the same 30-step 1024 px image.
    let fit_rps = row["requests_per_s"].as_f64().unwrap();
    assert!(
        (best_rps - 2.0 * fit_rps).abs() < 1e-6 * best_rps,
        "{best_rps} vs 2 × {fit_rps}"
    );

    // Whisper: a request is one 30 s window whatever the speech in it.
    let w = json(&[
        "estimate",
        "--model",
        "whisper-large-v3",
        "--gpu",
        "L4",
        "--precision",
        "fp16",
        "--audio-seconds",
        "10",
        "--json",
    ]);
    let (rps, units) = (
        w["best"]["requests_per_s"].as_f64().unwrap(),
        w["best"]["units_per_s"].as_f64().unwrap(),
    );
    assert!((units - 30.0 * rps).abs() < 1e-9 * units);
    let tokens_10s = w["unit"]["output_tokens"].as_f64().unwrap();
    let full = json(&[
        "estimate",
        "--model",
        "whisper-large-v3",
        "--gpu",
        "L4",
        "--precision",
        "fp16",
        "--json",
    ]);
    assert!(full["unit"]["output_tokens"].as_f64().unwrap() > 2.9 * tokens_10s);
    // Fewer tokens to decode: a faster request.
    assert!(full["single"]["total_s"].as_f64().unwrap() > w["single"]["total_s"].as_f64().unwrap());

    // Encoders: tokens per second = sequences × their length.
    let b = json(&[
        "estimate",
        "--model",
        "bge-large",
        "--gpu",
        "L4",
        "--precision",
        "fp16",
        "--input-len",
        "128",
        "--json",
    ]);
    let (rps, tokens) = (
        b["best"]["requests_per_s"].as_f64().unwrap(),
        b["best"]["units_per_s"].as_f64().unwrap(),
    );
    assert!((tokens - 128.0 * rps).abs() < 1e-9 * tokens);
}

#[test]
fn estimate_of_a_non_llm_model_refuses_what_does_not_apply() {
    for (args, code, needle) in [
        (
            &["estimate", "--model", "flux.1-dev", "--gpu", "L4"][..],
            1,
            "DOES NOT FIT",
        ),
        (
            &[
                "estimate",
                "--model",
                "sdxl",
                "--gpu",
                "L4",
                "--concurrency",
                "64",
            ][..],
            1,
            "batch 64 needs",
        ),
        (
            &[
                "estimate",
                "--model",
                "sdxl",
                "--gpu",
                "L4",
                "--resolution",
                "1000",
            ][..],
            2,
            "--resolution",
        ),
        (
            &[
                "estimate",
                "--model",
                "sdxl",
                "--gpu",
                "L4",
                "--input-len",
                "10",
            ][..],
            2,
            "--input-len",
        ),
        (
            &["estimate", "--model", "sdxl", "--gpu", "L4", "--tp", "2"][..],
            2,
            "--count",
        ),
        (
            &[
                "estimate",
                "--model",
                "bge-large",
                "--gpu",
                "L4",
                "--input-len",
                "100000",
            ][..],
            2,
            "from 1 to 512",
        ),
        (
            &[
                "estimate",
                "--model",
                "bge-large",
                "--gpu",
                "L4",
                "--steps",
                "4",
            ][..],
            2,
            "--steps",
        ),
        (
            &[
                "estimate",
                "--model",
                "whisper-large-v3",
                "--gpu",
                "L4",
                "--audio-seconds",
                "31",
            ][..],
            2,
            "--audio-seconds",
        ),
        (
            &[
                "estimate",
                "--model",
                "llama-3.1-8b",
                "--gpu",
                "L4",
                "--steps",
                "4",
            ][..],
            2,
            "not to LLMs",
        ),
        (
            &["estimate", "--model", "llama-3.1-8b", "--gpu", "L4"][..],
            2,
            "--input-len and --output-len",
        ),
    ] {
        let out = gpuplan(args);
        assert_eq!(out.code, code, "{args:?}: {} {}", out.stdout, out.stderr);
        let text = if code == 1 { &out.stdout } else { &out.stderr };
        assert!(text.contains(needle), "{args:?}: {text}");
    }
}
