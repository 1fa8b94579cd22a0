//! `gpuplan simulate`: the JSON contract, determinism, and exit codes.

use std::path::PathBuf;
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

/// Writes `text` to a fresh file named `name` and returns its path.
fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpuplan-simulate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn json_result_is_conserved_and_the_same_for_a_seed() {
    let args = [
        "simulate",
        "examples/eu-residency.toml",
        "--requests",
        "3000",
        "--seed",
        "5",
        "--json",
    ];
    let a = gpuplan(&args);
    assert_eq!(a.code, 0, "{}", a.stderr);
    let v: serde_json::Value = serde_json::from_str(&a.stdout).expect("JSON");
    for field in [
        "requests_completed",
        "in_flight",
        "preemptions",
        "goodput",
        "throughput_requests_per_s",
        "output_tokens_per_s",
        "simulated_s",
        "replica_hours",
        "cost_usd",
        "rejected",
        "timed_out",
        "retried",
        "replica_losses",
        "mean_replicas",
        "peak_replicas",
    ] {
        assert!(v.get(field).is_some(), "missing {field}: {v}");
    }
    for latency in ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "queue_ms"] {
        for q in ["p50", "p90", "p99", "p999"] {
            assert!(v[latency][q].as_f64().is_some(), "{latency}.{q}: {v}");
        }
    }
    let n = |f: &str| v[f].as_u64().expect(f);
    assert_eq!(n("arrivals"), 3000);
    assert_eq!(
        n("arrivals"),
        n("requests_completed") + n("in_flight") + n("rejected") + n("timed_out")
    );
    assert!(v["cost_usd"].as_f64().unwrap() > 0.0);
    let b = gpuplan(&args);
    assert_eq!(a.stdout, b.stdout, "same seed, same result");
}

#[test]
fn human_output_compares_the_plan_with_the_simulation() {
    let out = gpuplan(&[
        "simulate",
        "examples/code-completion.toml",
        "--requests",
        "2000",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for needle in [
        "Analytical (plan) vs simulated",
        "TTFT p99",
        "TPOT p99",
        "end-to-end p99",
        "utilisation",
        "Goodput",
        "completed",
    ] {
        assert!(out.stdout.contains(needle), "{needle}: {}", out.stdout);
    }
}

#[test]
fn a_trace_drives_the_simulation() {
    let trace = file(
        "ok.csv",
        "timestamp_s,input_tokens,output_tokens\n0,1000,100\n0.2,3000,50\n0.5,200,300\n",
    );
    let out = gpuplan(&[
        "simulate",
        "examples/eu-residency.toml",
        "--trace",
        trace.to_str().unwrap(),
        "--warmup",
        "0",
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(v["arrivals"], 3);
    assert_eq!(v["requests_completed"], 3);
}

#[test]
fn bad_input_exits_2_naming_what_is_wrong() {
    let malformed = file("bad.csv", "0,100,10\n0.5,100\n");
    let unsorted = file("unsorted.csv", "1.0,100,10\n0.5,100,10\n");
    let empty = file("empty.csv", "timestamp_s,input_tokens,output_tokens\n");
    let bad_curve = file("curve.csv", "time_s,requests_per_s\n0,5\n0,6\n");
    for (args, needles) in [
        (vec!["--plan", "100000"], vec!["--plan 100000", "from 1 to"]),
        (
            vec!["--trace", malformed.to_str().unwrap()],
            vec!["bad.csv", "line 2", "3"],
        ),
        (
            vec!["--trace", unsorted.to_str().unwrap()],
            vec!["unsorted.csv", "line 2", "timestamp_s", "sorted"],
        ),
        (
            vec!["--trace", empty.to_str().unwrap()],
            vec!["empty.csv", "no requests"],
        ),
        (
            vec!["--requests", "0"],
            vec!["--requests", "1 to 100000000"],
        ),
        (vec!["--warmup", "1.5"], vec!["--warmup"]),
        (
            vec!["--rate-curve", bad_curve.to_str().unwrap()],
            vec!["curve.csv", "line 3", "time_s", "later than"],
        ),
        (vec!["--min-replicas", "2"], vec!["--autoscale"]),
        (vec!["--think-time", "1"], vec!["--users"]),
        (vec!["--users", "0"], vec!["--users", "1 to 10000000"]),
        (
            vec!["--failures-per-hour", "-1"],
            vec!["--failures-per-hour"],
        ),
    ] {
        let mut all = vec!["simulate", "examples/eu-residency.toml"];
        all.extend(args.iter().copied());
        let out = gpuplan(&all);
        assert_eq!(out.code, 2, "{all:?}: {}", out.stderr);
        for n in needles {
            assert!(out.stderr.contains(n), "{all:?}: {n}: {}", out.stderr);
        }
    }
}

#[test]
fn an_infeasible_workload_exits_1_with_the_reasons() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/eu-residency.toml"
    ))
    .expect("example")
    .replace("ttft_ms_p99 = 1500", "ttft_ms_p99 = 1");
    let workload = file("infeasible.toml", &text);
    let out = gpuplan(&["simulate", workload.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("No feasible plan"), "{}", out.stdout);
    assert!(
        out.stdout.contains("TTFT") || out.stdout.contains("ttft"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_day_with_autoscaling_and_spot_losses_costs_less_than_the_peak_fleet() {
    let series = std::env::temp_dir().join(format!("gpuplan-ts-{}.csv", std::process::id()));
    let out = gpuplan(&[
        "simulate",
        "examples/chat-70b.toml",
        "--rate-curve",
        "diurnal",
        "--duration",
        "43200",
        "--autoscale",
        "--failures-per-hour",
        "0.5",
        "--replacement-delay",
        "300",
        "--timeseries",
        series.to_str().unwrap(),
        "--sample-every",
        "900",
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let n = |f: &str| v[f].as_u64().expect(f);
    assert_eq!(
        n("arrivals"),
        n("requests_completed") + n("in_flight") + n("rejected") + n("timed_out")
    );
    // Half a day from midnight: the fleet smaller than the plan's on average.
    assert!(v["simulated_s"].as_f64().unwrap() >= 43_200.0);
    let mean = v["mean_replicas"].as_f64().unwrap();
    assert!(mean < v["replicas"].as_f64().unwrap(), "{v}");
    assert!(n("replica_losses") > 0 && n("retried") > 0, "{v}");
    // 48 rows of 15 minutes; the header names the columns.
    let csv = std::fs::read_to_string(&series).expect("time series");
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("time_s,arrival_rate,replicas_up"));
    assert!(lines.count() >= 48);
}

#[test]
fn a_deployment_given_by_flags_is_simulated() {
    let out = gpuplan(&[
        "simulate",
        "examples/chat-70b.toml",
        "--gpu",
        "H100",
        "--tp",
        "4",
        "--precision",
        "fp8",
        "--replicas",
        "3",
        "--usd-per-hour",
        "40",
        "--requests",
        "3000",
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(v["replicas"], 3);
    assert_eq!(v["arrivals"], 3000);
    // $40/h for the whole deployment over the simulated time.
    let hours = v["simulated_s"].as_f64().unwrap() / 3600.0;
    assert!((v["cost_usd"].as_f64().unwrap() - 40.0 * hours).abs() < 1e-6);
    // A replica that cannot hold the model: exit 1 with the reason.
    let small = gpuplan(&[
        "simulate",
        "examples/chat-70b.toml",
        "--gpu",
        "T4",
        "--requests",
        "10",
    ]);
    assert_eq!(small.code, 1, "{}{}", small.stdout, small.stderr);
    assert!(small.stdout.contains("DOES NOT FIT"), "{}", small.stdout);
    // Deployment flags need --gpu.
    let orphan = gpuplan(&["simulate", "examples/chat-70b.toml", "--tp", "2"]);
    assert_eq!(orphan.code, 2);
    assert!(orphan.stderr.contains("--gpu"), "{}", orphan.stderr);
}
