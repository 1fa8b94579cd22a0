//! Issue 7, "no silent wrong answer": every bad input is rejected with exit 2
//! and a message naming the file or flag, the field as written, the value
//! and what is allowed; none overflows, saturates, is silently ignored or
//! comes back as a plausible wrong number.
//!
//! One line per case: what it reproduces, the arguments (`{input}` is the
//! path of the case's input file), the input file (name, contents), the
//! expected exit code, and substrings the output must contain (stderr; for
//! exit 0, stdout and stderr).

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Case {
    what: &'static str,
    args: Vec<&'static str>,
    input: Option<(&'static str, String)>,
    code: i32,
    needles: Vec<&'static str>,
}

fn case(
    what: &'static str,
    args: &[&'static str],
    input: Option<(&'static str, String)>,
    code: i32,
    needles: &[&'static str],
) -> Case {
    Case {
        what,
        args: args.to_vec(),
        input,
        code,
        needles: needles.to_vec(),
    }
}

/// Runs the binary from the repository root; returns (exit code, stdout, stderr).
fn gpuplan(args: &[String]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory for one case (unique across the tests running in parallel).
fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let index = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("gpuplan-bad-input-{}-{index}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn run(c: &Case) -> Result<(), String> {
    let dir = scratch();
    let input = c.input.as_ref().map(|(name, text)| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write input");
        path.display().to_string()
    });
    let args: Vec<String> = c
        .args
        .iter()
        .map(|a| match &input {
            Some(path) => a.replace("{input}", path),
            None => a.to_string(),
        })
        .collect();
    let (code, stdout, stderr) = gpuplan(&args);
    std::fs::remove_dir_all(&dir).ok();
    let seen = if c.code == 0 {
        format!("{stdout}{stderr}")
    } else {
        stderr.clone()
    };
    let missing: Vec<&str> = c
        .needles
        .iter()
        .copied()
        .filter(|n| !seen.contains(n))
        .collect();
    if code != c.code || !missing.is_empty() {
        return Err(format!(
            "{}: exit {code} (expected {}), missing {missing:?}\n  args: {args:?}\n  stderr: {stderr}  stdout: {}",
            c.what,
            c.code,
            stdout.lines().next().unwrap_or("")
        ));
    }
    Ok(())
}

fn check(cases: Vec<Case>) {
    let failures: Vec<String> = cases.iter().filter_map(|c| run(c).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// A valid workload with `extra` appended (tables after [traffic]).
fn workload(extra: &str) -> String {
    format!("kind = \"inference\"\n[model]\nid = \"llama-3.1-8b\"\n[traffic]\nrequests_per_s = 5\ninput_tokens = {{ mean = 500, p99 = 2000 }}\noutput_tokens = {{ mean = 100, p99 = 400 }}\n{extra}")
}

/// The valid workload with `from` replaced by `to`.
fn workload_with(from: &str, to: &str) -> String {
    let w = workload("");
    assert!(w.contains(from), "{from}");
    w.replace(from, to)
}

/// A Llama-style HF config.json with extra keys (`, "key": value`).
fn hf(extra: &str) -> String {
    format!("{{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"num_hidden_layers\": 32, \"vocab_size\": 128256, \"intermediate_size\": 14336{extra}}}")
}

const MODELS_HEADER: &str = "id,architecture,num_layers,hidden_size,num_attention_heads,num_kv_heads,head_dim,intermediate_size,vocab_size,num_experts,experts_per_token,source\n";
const GPUS_HEADER: &str = "name,vendor,architecture,memory_gib,memory_bandwidth_gbps,bf16_tflops,nvlink_gbps,mig_max_instances,source\n";
const OFFERINGS_HEADER: &str =
    "provider,instance_type,accelerator,accelerator_count,region,price_per_hour\n";
const VMS_HEADER: &str = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n";
const BENCH_HEADER: &str = "id,kind,model,gpu,gpu_count,tp,pp,dp,precision,framework,input_len,output_len,batch_or_concurrency,metric,value,unit\n";
const ESTIMATE: &[&str] = &[
    "estimate",
    "--model",
    "llama-3.1-8b",
    "--gpu",
    "H100",
    "--input-len",
    "100",
    "--output-len",
    "10",
    "--calibration",
    "{input}",
];

fn calibration(edit: impl Fn(&str) -> String) -> String {
    edit(gpuplan_core::BUNDLED_CALIBRATION)
}

fn input(name: &'static str, text: impl Into<String>) -> Option<(&'static str, String)> {
    Some((name, text.into()))
}

/// Class 1: overflow and saturation used to come out as plausible wrong numbers.
#[test]
fn overflow_and_saturation_are_rejected_at_the_boundary() {
    let plan = &["plan", "{input}"];
    let fit_hf = &["fit", "--hf-config", "{input}", "--gpu", "H100"];
    check(vec![
        case("requests_per_s = 1e308 (was 4294967295 replicas)", plan, input("w.toml", workload_with("requests_per_s = 5", "requests_per_s = 1e308")), 2, &["w.toml", "`traffic.requests_per_s`", "1e308", "at most 10000000"]),
        case("max_utilization = 1e-300 (was 4294967295 replicas)", plan, input("w.toml", workload("[constraints]\nmax_utilization = 1e-300\n")), 2, &["w.toml", "`constraints.max_utilization`", "1e-300", "from 0.01 to 0.99"]),
        case("min_replicas = 2^31 (was a 0-instance plan)", plan, input("w.toml", workload("[constraints]\nmin_replicas = 2147483648\n")), 2, &["w.toml", "`constraints.min_replicas`", "2147483648", "from 1 to 100000"]),
        case("min_replicas beyond u64", plan, input("w.toml", workload("[constraints]\nmin_replicas = 99999999999999999999\n")), 2, &["w.toml", "constraints.min_replicas"]),
        case("HF head_dim = 2^62 (was 0 KiB per token, FITS)", fit_hf, input("config.json", hf(", \"head_dim\": 4611686018427387904")), 2, &["config.json", "`head_dim`", "4611686018427387904", "from 1 to 1048576"]),
        case("HF vocab_size = 2^64-1 (was far too few weights)", fit_hf, input("config.json", hf("").replace("128256", "18446744073709551615")), 2, &["config.json", "`vocab_size`", "18446744073709551615", "from 1 to 16777216"]),
        case("HF hidden_size above u64", fit_hf, input("config.json", hf("").replace("4096", "36893488147419103232")), 2, &["config.json", "`hidden_size`", "3.6893488147419103e+19", "from 1 to 1048576"]),
        case("models.csv: every dimension 2^64-1", &["fit", "--models", "{input}", "--model", "huge", "--gpu", "H100"], input("models.csv", format!("{MODELS_HEADER}huge,LlamaForCausalLM,18446744073709551615,18446744073709551615,18446744073709551615,18446744073709551615,18446744073709551615,18446744073709551615,18446744073709551615,,,t\n")), 2, &["models.csv", "line 2", "`num_layers`", "18446744073709551615", "from 1 to 16384"]),
        case("models.csv: expert count 2^64-1", &["fit", "--models", "{input}", "--model", "moe", "--gpu", "H100"], input("models.csv", format!("{MODELS_HEADER}moe,MixtralForCausalLM,32,4096,32,8,128,14336,32000,18446744073709551615,2,t\n")), 2, &["models.csv", "line 2", "`num_experts`", "18446744073709551615", "65536"]),
        case("models.csv: fields in range, product absurd", &["fit", "--models", "{input}", "--model", "wide", "--gpu", "H100"], input("models.csv", format!("{MODELS_HEADER}wide,LlamaForCausalLM,16384,1048576,16384,16384,64,1048576,32000,,,t\n")), 2, &["models.csv", "line 2", "`shape`", "parameters", "at most 1e14"]),
        case("parametric id with a 2^64-1 hidden size", &["fit", "--model", "gpt-h18446744073709551615-l2-a1", "--gpu", "H100"], None, 2, &["--model", "hidden", "18446744073709551615"]),
        case("training micro-batch and seq-len 2^32 (was FITS with 0 GiB)", &["fit", "--training", "--model", "llama-3.1-8b", "--gpu", "H100", "--micro-batch", "4294967296", "--seq-len", "4294967296"], None, 2, &["--micro-batch", "4294967296", "from 1 to 65536"]),
        case("training seq-len 2^32", &["fit", "--training", "--model", "llama-3.1-8b", "--gpu", "H100", "--seq-len", "4294967296"], None, 2, &["--seq-len", "4294967296", "from 1 to 134217728"]),
        case("training tp × pp × dp beyond u32", &["fit", "--training", "--model", "gpt-h1024-l1024-a1024", "--gpu", "H100", "--tp", "1024", "--pp", "1024", "--dp", "1048576"], None, 2, &["tp × pp × dp", "1099511627776", "from 1 to 1048576"]),
        case("fit --tp 65536 --pp 65536 (was FITS on 0 × H100)", &["fit", "--model", "gpt-h4096-l16-a32", "--gpu", "H100", "--tp", "65536", "--pp", "65536"], None, 2, &["--tp", "65536", "from 1 to 1024"]),
        case("estimate --tp 65536 --pp 65536 (was 0 (inf per GPU))", &["estimate", "--model", "gpt-h4096-l16-a32", "--gpu", "H100", "--tp", "65536", "--pp", "65536", "--input-len", "10", "--output-len", "10"], None, 2, &["--tp", "65536", "from 1 to 1024"]),
        case("--gpus memory_gib = 1e308 (was 2^64-1 KV tokens)", &["fit", "--gpus", "{input}", "--model", "llama-3.1-8b", "--gpu", "BIG"], input("gpus.csv", format!("{GPUS_HEADER}BIG,NVIDIA,Hopper,1e308,3350,989,900,0,t\n")), 2, &["gpus.csv", "line 2", "`memory_gib`", "1e308", "at most 4096"]),
        case("mig_max_instances = 99999999999 (was shown as 1215752191)", &["catalog", "gpus", "--gpus", "{input}"], input("gpus.csv", format!("{GPUS_HEADER}X,NVIDIA,Hopper,80,3350,989,900,99999999999,t\n")), 2, &["gpus.csv", "line 2", "`mig_max_instances`", "99999999999", "from 0 to 64"]),
        case("accelerator_count = 1e12 (was 4294967295 GPUs per instance)", &["catalog", "offerings", "--offerings", "{input}"], input("cloud_offerings.csv", format!("{OFFERINGS_HEADER}aws,p5,H100,1e12,us-east-1,98\n")), 2, &["cloud_offerings.csv", "line 2", "`accelerator_count`", "1e12", "at most 65536"]),
        case("SkyPilot AcceleratorCount = 1e12", &["catalog", "offerings", "--skypilot-vms", "{input}", "--skypilot-provider", "aws"], input("vms.csv", format!("{VMS_HEADER}p5,H100,1e12,1,1,98,,us-east-1,\n")), 2, &["vms.csv", "line 2", "`AcceleratorCount`", "1e12", "at most 65536"]),
        case("--memory-utilization NaN", &["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--memory-utilization", "NaN"], None, 2, &["--memory-utilization", "NaN", "at most 1"]),
        case("histogram tokens 1e308", plan, input("w.toml", workload_with("{ mean = 100, p99 = 400 }", "{ histogram = [[1e308, 1]] }")), 2, &["w.toml", "traffic.output_tokens.histogram tokens", "1e308"]),
    ]);
}

/// Class 3: inputs that were silently ignored or half-read.
#[test]
fn inputs_are_never_silently_ignored() {
    // The appended row's line: the header, the bundled rows, then it.
    let repeated_line: &'static str = Box::leak(
        format!(
            "line {}",
            gpuplan_core::BUNDLED_CALIBRATION.lines().count() + 1
        )
        .into_boxed_str(),
    );
    check(vec![
        case("empty calibration file (fell back to in-code defaults)", ESTIMATE, input("cal.csv", ""), 2, &["cal.csv", "missing: compute_efficiency"]),
        case("calibration with only a header", ESTIMATE, input("cal.csv", "name,value,min,max,meaning\n"), 2, &["cal.csv", "missing"]),
        case("calibration naming an unknown factor", ESTIMATE, input("cal.csv", calibration(|t| format!("{t}compute_efficency.Hopper.8,0.5,0.05,1,typo\n"))), 2, &["cal.csv", "compute_efficency.Hopper.8", "one of the factors"]),
        case("calibration repeating a row", ESTIMATE, input("cal.csv", calibration(|t| format!("{t}iteration_overhead_ms,2,0,3,again\n"))), 2, &["cal.csv", repeated_line, "iteration_overhead_ms", "first set on line 15"]),
        case("calibration efficiency of 5000%", ESTIMATE, input("cal.csv", calibration(|t| t.lines().map(|l| if l.starts_with("compute_efficiency.Hopper.8,") { "compute_efficiency.Hopper.8,50,0,100,x".to_string() } else { l.to_string() }).collect::<Vec<_>>().join("\n") + "\n")), 2, &["cal.csv", "compute_efficiency.Hopper.8.value", "50", "from 0.05 to 1"]),
        case("--skypilot-provider without --skypilot-vms", &["catalog", "gpus", "--skypilot-provider", "aws"], None, 2, &["--skypilot-vms"]),
        case("--skypilot-provider ''", &["catalog", "offerings", "--skypilot-vms", "{input}", "--skypilot-provider", ""], input("vms.csv", format!("{VMS_HEADER}p5,H100,8,1,1,98,,us-east-1,\n")), 2, &["--skypilot-provider"]),
        case("duplicate SkyPilot rows", &["catalog", "offerings", "--skypilot-vms", "{input}", "--skypilot-provider", "aws"], input("vms.csv", format!("{VMS_HEADER}p5,H100,8,1,1,98,,us-east-1,a\np5,H100,8,1,1,99,,us-east-1,a\n")), 2, &["vms.csv", "line 3", "`InstanceType`", "first defined on line 2"]),
        case("discounts aws and AWS", &["plan", "{input}"], input("w.toml", workload("[pricing]\ndiscounts = { aws = 0.1, AWS = 0.9 }\n")), 2, &["w.toml", "`pricing.discounts`", "AWS", "aws", "one discount per provider"]),
        case("TOML histogram bucket [1, 2, 3]", &["plan", "{input}"], input("w.toml", workload_with("{ mean = 100, p99 = 400 }", "{ histogram = [[1, 2, 3]] }")), 2, &["w.toml", "line 7", "traffic.output_tokens.histogram[0]", "invalid length 3", "[tokens, weight]"]),
        case("JSON histogram bucket [1, 2, 3]", &["plan", "{input}"], input("w.json", r#"{"kind":"inference","model":{"id":"llama-3.1-8b"},"traffic":{"requests_per_s":3,"input_tokens":{"mean":500},"output_tokens":{"histogram":[[1,2,3]]}}}"#), 2, &["w.json", "traffic.output_tokens.histogram[0]", "[tokens, weight]"]),
        case("a --models row named like a bundled alias replaces the model", &["fit", "--models", "{input}", "--model", "llama2-7b", "--gpu", "H100", "--json"], input("models.csv", format!("{MODELS_HEADER}llama2-7b,LlamaForCausalLM,2,256,4,4,64,512,1000,,,test\n")), 0, &["\"model\": \"llama2-7b\"", "\"fits\": true"]),
        case("benchmark value = 0", &["validate", "--benchmarks", "{input}"], input("b.csv", format!("{BENCH_HEADER}a,inference,llama-3.1-8b,H100,1,1,1,1,fp8,vllm,100,100,,output_tokens_per_s,0,tok/s\n")), 2, &["b.csv", "line 2", "`value`", "`0`", "a number > 0"]),
        case("benchmark tp = 0", &["validate", "--benchmarks", "{input}"], input("b.csv", format!("{BENCH_HEADER}a,inference,llama-3.1-8b,H100,1,0,1,1,fp8,vllm,100,100,,output_tokens_per_s,5,tok/s\n")), 2, &["b.csv", "line 2", "`tp`", "`0`", "from 1 to"]),
        case("benchmark input_len = 0", &["validate", "--benchmarks", "{input}"], input("b.csv", format!("{BENCH_HEADER}a,inference,llama-3.1-8b,H100,1,1,1,1,fp8,vllm,0,100,,output_tokens_per_s,5,tok/s\n")), 2, &["b.csv", "line 2", "`input_len`", "`0`", "from 1 to"]),
    ]);
}

/// Class 4: messages a user can act on: the field as written, the value, the range in words.
#[test]
fn messages_name_the_field_value_and_range() {
    let plan = &["plan", "{input}"];
    let fit = |flag: &'static str, value: &'static str| -> Vec<&'static str> {
        vec![
            "fit",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "H100",
            flag,
            value,
        ]
    };
    check(vec![
        case(
            "string for a number",
            plan,
            input(
                "w.toml",
                workload_with("requests_per_s = 5", "requests_per_s = \"20\""),
            ),
            2,
            &[
                "w.toml",
                "line 5",
                "`traffic.requests_per_s`",
                "\"20\"",
                "expected a number",
            ],
        ),
        case(
            "float for a whole number",
            plan,
            input("w.toml", workload("[constraints]\nmin_replicas = 2.5\n")),
            2,
            &[
                "w.toml",
                "`constraints.min_replicas`",
                "2.5",
                "expected a whole number",
            ],
        ),
        case(
            "negative whole number",
            plan,
            input("w.toml", workload("[constraints]\nmin_replicas = -1\n")),
            2,
            &[
                "w.toml",
                "`constraints.min_replicas`",
                "-1",
                "expected a whole number >= 0",
            ],
        ),
        case(
            "number for a token distribution",
            plan,
            input("w.toml", workload_with("{ mean = 500, p99 = 2000 }", "5")),
            2,
            &[
                "w.toml",
                "`traffic.input_tokens`",
                "a table with mean and p99, or histogram",
            ],
        ),
        case(
            "unknown key in the arrival table",
            plan,
            input(
                "w.toml",
                workload_with(
                    "requests_per_s = 5",
                    "requests_per_s = 5\narrival = { kind = \"gamma\", cv = 2, shape = 1 }",
                ),
            ),
            2,
            &[
                "w.toml",
                "line 6",
                "unknown field `shape`",
                "`kind` or `cv`",
            ],
        ),
        case(
            "kind twice in the arrival table",
            plan,
            input(
                "w.toml",
                workload_with(
                    "requests_per_s = 5",
                    "requests_per_s = 5\narrival = { kind = \"gamma\", kind = \"poisson\" }",
                ),
            ),
            2,
            &["w.toml", "line 6", "duplicate key `kind`"],
        ),
        case(
            "kind twice at the top",
            plan,
            input("w.toml", format!("kind = \"inference\"\n{}", workload(""))),
            2,
            &[
                "w.toml",
                "line 2",
                "duplicate key `kind` (first set on line 1)",
            ],
        ),
        case(
            "JSON: string for a number",
            plan,
            input(
                "w.json",
                r#"{"kind":"inference","model":{"id":"llama-3.1-8b"},"traffic":{"requests_per_s":"20","input_tokens":{"mean":500},"output_tokens":{"mean":100}}}"#,
            ),
            2,
            &[
                "w.json",
                "line 1",
                "`traffic.requests_per_s`",
                "expected a number",
            ],
        ),
        case(
            "JSON: kind twice",
            plan,
            input(
                "w.json",
                "{\"kind\":\"inference\",\n\"kind\":\"inference\"}",
            ),
            2,
            &["w.json", "line 2", "duplicate field `kind`"],
        ),
        case(
            "--count -1",
            &fit("--count", "-1"),
            None,
            2,
            &["--count", "'-1'", "from 1 to 1048576"],
        ),
        case(
            "--pp -1",
            &fit("--pp", "-1"),
            None,
            2,
            &["--pp", "'-1'", "from 1 to 1024"],
        ),
        case(
            "--context -5",
            &fit("--context", "-5"),
            None,
            2,
            &["--context", "'-5'", "from 1 to"],
        ),
        case(
            "--max-batched-tokens -1",
            &fit("--max-batched-tokens", "-1"),
            None,
            2,
            &["--max-batched-tokens", "'-1'", "from 256 to"],
        ),
        case(
            "--zero 4",
            &fit("--zero", "4"),
            None,
            2,
            &["--zero", "'4'", "from 0 to 3"],
        ),
        case(
            "--lora-rank -1",
            &fit("--lora-rank", "-1"),
            None,
            2,
            &["--lora-rank", "'-1'", "from 1 to 65536"],
        ),
        case(
            "--dp -1",
            &fit("--dp", "-1"),
            None,
            2,
            &["--dp", "'-1'", "from 1 to"],
        ),
        case(
            "--top -1",
            &["plan", "examples/chat-70b.toml", "--top", "-1"],
            None,
            2,
            &["--top", "'-1'", "from 1 to 100000"],
        ),
        case(
            "--explain 0",
            &["plan", "examples/chat-70b.toml", "--explain", "0"],
            None,
            2,
            &["--explain", "'0'", "from 1 to"],
        ),
        case(
            "--limit -1",
            &["catalog", "offerings", "--limit", "-1"],
            None,
            2,
            &["--limit", "'-1'", "from 0 to"],
        ),
        case(
            "--concurrency -1",
            &[
                "estimate",
                "--model",
                "llama-3.1-8b",
                "--gpu",
                "H100",
                "--input-len",
                "10",
                "--output-len",
                "10",
                "--concurrency",
                "-1",
            ],
            None,
            2,
            &["--concurrency", "'-1'"],
        ),
        case(
            "--max-num-seqs 0",
            &[
                "estimate",
                "--model",
                "llama-3.1-8b",
                "--gpu",
                "H100",
                "--input-len",
                "10",
                "--output-len",
                "10",
                "--max-num-seqs",
                "0",
            ],
            None,
            2,
            &["--max-num-seqs", "'0'"],
        ),
        case(
            "--input-len -1",
            &[
                "estimate",
                "--model",
                "llama-3.1-8b",
                "--gpu",
                "H100",
                "--input-len",
                "-1",
                "--output-len",
                "10",
            ],
            None,
            2,
            &["--input-len", "'-1'", "from 1 to"],
        ),
        case(
            "--tp 0 (blamed --count 0)",
            &fit("--tp", "0"),
            None,
            2,
            &["'--tp <TP>'", "'0'", "from 1 to 1024"],
        ),
        case(
            "--micro-batches 0 (named micro_batch/seq_len)",
            &[
                "fit",
                "--training",
                "--model",
                "llama-3.1-8b",
                "--gpu",
                "H100",
                "--micro-batches",
                "0",
            ],
            None,
            2,
            &["'--micro-batches <MICRO_BATCHES>'", "'0'"],
        ),
        case(
            "HF num_key_value_heads = 0 (said num_kv_heads (config))",
            &["fit", "--hf-config", "{input}", "--gpu", "H100"],
            input(
                "config.json",
                hf("").replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 0"),
            ),
            2,
            &[
                "config.json",
                "`num_key_value_heads`",
                "`0`",
                "from 1 to 16384",
            ],
        ),
        case(
            "HF num_key_value_heads not dividing the heads",
            &["fit", "--hf-config", "{input}", "--gpu", "H100"],
            input(
                "config.json",
                hf("").replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"),
            ),
            2,
            &[
                "config.json",
                "`num_key_value_heads`",
                "`5`",
                "a divisor of num_attention_heads (32)",
            ],
        ),
        case(
            "HF hidden 4096 with 3 heads (head_dim was silently 1365)",
            &["fit", "--hf-config", "{input}", "--gpu", "H100"],
            input(
                "config.json",
                hf("").replace(
                    "\"num_attention_heads\": 32, \"num_key_value_heads\": 8",
                    "\"num_attention_heads\": 3",
                ),
            ),
            2,
            &[
                "config.json",
                "`num_attention_heads`",
                "`3`",
                "a divisor of hidden_size (4096)",
                "head_dim",
            ],
        ),
    ]);
}

/// `--tp 0` is blamed on `--tp`, never on `--count`.
#[test]
fn tp_zero_does_not_blame_count() {
    let args: Vec<String> = [
        "fit",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "H100",
        "--tp",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (code, _, stderr) = gpuplan(&args);
    assert_eq!(code, 2);
    assert!(!stderr.contains("--count"), "{stderr}");
}
