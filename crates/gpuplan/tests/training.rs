//! `gpuplan plan` on training workloads: the examples, the JSON contract,
//! `--explain`, infeasible and bad input.

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

const EXAMPLES: [&str; 5] = [
    "examples/training/lora-8b.toml",
    "examples/training/full-70b.toml",
    "examples/training/pretrain-7b.toml",
    "examples/training/qlora-70b.toml",
    "examples/training/spot-8b.toml",
];

#[test]
fn every_training_example_plans_with_the_json_contract() {
    for ex in EXAMPLES {
        let out = gpuplan(&["plan", ex, "--json"]);
        assert_eq!(out.code, 0, "{ex}: {}", out.stderr);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let plans = v["plans"].as_array().unwrap();
        assert!(!plans.is_empty(), "{ex}");
        for p in plans {
            for field in [
                "step_time_s",
                "tokens_per_s",
                "mfu",
                "time_to_train_hours",
                "total_cost_usd",
                "checkpoint_interval_min",
                "egress_usd",
                "tp",
                "pp",
                "dp",
                "zero_stage",
                "micro_batch",
                "recompute",
            ] {
                assert!(p.get(field).is_some(), "{ex}: {field} missing");
            }
            let gpus = p["gpus"].as_u64().unwrap();
            let product =
                p["tp"].as_u64().unwrap() * p["pp"].as_u64().unwrap() * p["dp"].as_u64().unwrap();
            assert_eq!(gpus, product, "{ex}: tp·pp·dp must use every GPU");
            assert!(
                p["peak_memory_gib"].as_f64().unwrap() <= p["gpu_memory_gib"].as_f64().unwrap()
            );
            assert!(
                p["time_to_train_hours"].as_f64().unwrap() >= p["ideal_hours"].as_f64().unwrap()
            );
            let mfu = p["mfu"].as_f64().unwrap();
            assert!(mfu > 0.0 && mfu < 1.0, "{ex}: mfu {mfu}");
        }
        // Ranked by total cost.
        let costs: Vec<f64> = plans
            .iter()
            .map(|p| p["total_cost_usd"].as_f64().unwrap())
            .collect();
        assert!(
            costs.windows(2).all(|w| w[0] <= w[1] + 1e-9),
            "{ex}: {costs:?}"
        );
    }
}

#[test]
fn deadlines_and_single_gpu_limits_hold() {
    let out = gpuplan(&["plan", "examples/training/pretrain-7b.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for p in v["plans"].as_array().unwrap() {
        assert!(p["time_to_train_hours"].as_f64().unwrap() <= 720.0);
        // The data set lives in aws us-east-1: elsewhere it costs egress or is flagged.
        if p["provider"] != "aws" || p["region"] != "us-east-1" {
            assert_ne!(p["data_route"], "local");
        }
    }
    let out = gpuplan(&["plan", "examples/training/qlora-70b.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for p in v["plans"].as_array().unwrap() {
        assert_eq!(p["gpus"], 1);
    }
}

#[test]
fn spot_plans_report_the_checkpoint_interval_and_break_even() {
    let out = gpuplan(&["plan", "examples/training/spot-8b.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let spot: Vec<&serde_json::Value> = v["plans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["spot"] == true)
        .collect();
    assert!(!spot.is_empty());
    for p in spot {
        assert!(p["interruptions_per_hour"].as_f64().unwrap() > 0.0);
        assert!(p["checkpoint_interval_min"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn explain_prints_the_breakdown_and_a_launch_command() {
    let out = gpuplan(&["plan", "examples/training/full-70b.toml", "--explain", "1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for needle in [
        "Where the step goes",
        "GEMMs",
        "checkpoint every",
        "torchrun",
        "--parallelism.tensor_parallel_degree",
    ] {
        assert!(
            out.stdout.contains(needle),
            "{needle} missing:\n{}",
            out.stdout
        );
    }
    let out = gpuplan(&[
        "plan",
        "examples/training/pretrain-7b.toml",
        "--explain",
        "1",
    ]);
    assert!(
        out.stdout.contains("pretrain_gpt.py --num-layers 32"),
        "{}",
        out.stdout
    );
}

#[test]
fn infeasible_training_exits_1_with_reasons_and_bad_input_exits_2_naming_the_field() {
    let dir = std::env::temp_dir().join(format!("gpuplan-train-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let tight = write(
        "tight.toml",
        "kind = \"training\"\n[model]\nid = \"llama-3.1-70b\"\n[training]\ntokens = 1e12\nseq_len = 4096\nglobal_batch = 64\n[goals]\ndeadline_hours = 1\n[constraints]\nmax_gpus = 8\n",
    );
    let out = gpuplan(&["plan", &tight]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout.contains("MissesDeadline") && out.stdout.contains("Hint:"),
        "{}",
        out.stdout
    );
    for (body, field) in [
        ("[training]\ntokens = 1e9\nseq_len = 4096\nglobal_batch = 8\nmethod = \"dora\"\n", "training.method"),
        ("[training]\ntokens = -5\nseq_len = 4096\nglobal_batch = 8\n", "training.tokens"),
        ("[training]\nseq_len = 4096\nglobal_batch = 8\n", "training.tokens"),
        ("[training]\ntokens = 1e9\nseq_len = 4096\nglobal_batch = 8\nprecision = \"fp4\"\n", "training.precision"),
        ("[training]\ntokens = 1e9\nseq_len = 999999\nglobal_batch = 8\n", "training.seq_len"),
        ("[training]\ntokens = 1e9\nseq_len = 4096\nglobal_batch = 8\nbatch = 3\n", "batch"),
        ("[training]\ntokens = 1e9\nseq_len = 4096\nglobal_batch = 8\n[data]\nsize_gb = 10\nprovider = \"nowhere\"\n", "data.provider"),
    ] {
        let p = write("bad.toml", &format!("kind = \"training\"\n[model]\nid = \"llama-3.1-8b\"\n{body}"));
        let out = gpuplan(&["plan", &p]);
        assert_eq!(out.code, 2, "{field}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(field), "{field}: {}", out.stderr);
    }
}

#[test]
fn training_exports_use_every_node_and_estimate_training_times_one_layout() {
    let out = gpuplan(&[
        "plan",
        "examples/training/pretrain-7b.toml",
        "--export",
        "k8s",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(
        &gpuplan(&["plan", "examples/training/pretrain-7b.toml", "--json"]).stdout,
    )
    .unwrap();
    let nodes = v["plans"][0]["nodes"].as_u64().unwrap();
    assert!(
        out.stdout.contains(&format!("completions: {nodes}")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("completionMode: Indexed") && out.stdout.contains("clusterIP: None")
    );
    let out = gpuplan(&[
        "plan",
        "examples/training/pretrain-7b.toml",
        "--export",
        "skypilot",
    ]);
    assert!(
        out.stdout.contains(&format!("num_nodes: {nodes}")),
        "{}",
        out.stdout
    );
    let out = gpuplan(&[
        "estimate",
        "--training",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "H100",
        "--count",
        "8",
        "--dp",
        "8",
        "--zero",
        "3",
        "--micro-batch",
        "1",
        "--seq-len",
        "8192",
        "--recompute",
        "selective",
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let e: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let step = &e["step"];
    let parts: f64 = [
        "gemm_s",
        "attention_s",
        "elementwise_s",
        "tp_comm_s",
        "pipeline_s",
        "dp_comm_exposed_s",
        "moe_all_to_all_s",
        "optimizer_s",
    ]
    .iter()
    .map(|k| step[*k].as_f64().unwrap())
    .sum();
    let total = step["step_s"].as_f64().unwrap();
    assert!((parts - total).abs() <= 1e-9 * total, "{parts} vs {total}");
    assert_eq!(e["fits"], true);
    // --input-len is for serving, not with --training.
    let out = gpuplan(&[
        "estimate",
        "--training",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "H100",
        "--input-len",
        "10",
    ]);
    assert_eq!(out.code, 2);
}

#[test]
fn a_verb_given_another_kind_of_workload_names_the_verb_that_takes_it() {
    for (args, hint) in [
        (
            vec!["simulate", "examples/training/lora-8b.toml"],
            "gpuplan plan examples/training/lora-8b.toml",
        ),
        (
            vec!["mig", "examples/training/lora-8b.toml"],
            "gpuplan plan examples/training/lora-8b.toml",
        ),
        (
            vec!["plan", "examples/fleets/fleet-12.toml"],
            "gpuplan mig examples/fleets/fleet-12.toml",
        ),
    ] {
        let out = gpuplan(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(hint) && out.stderr.contains("kind = "),
            "{args:?}: {}",
            out.stderr
        );
    }
}
