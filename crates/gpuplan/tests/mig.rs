//! `gpuplan mig`: the layouts verb, the fleet verb's JSON contract (issue
//! 13), and its exit codes: 2 for bad input naming the file and field, 1 with
//! reasons when no MIG plan serves the fleet.

use std::path::PathBuf;
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the binary from the repository root.
fn gpuplan(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// Writes a fleet file into a fresh temporary directory.
fn fleet_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpuplan-mig-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn mig_layouts_lists_the_full_layouts_and_counts_them() {
    let run = gpuplan(&["mig", "layouts", "--gpu", "A100-80GB", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = json(&run);
    assert_eq!(v["gpu"], "A100-SXM-80GB");
    let listed = v["layouts"].as_array().unwrap();
    assert_eq!(listed.len() as u64, v["full_layouts"].as_u64().unwrap());
    assert!(listed.iter().all(|l| l["full"] == true));
    assert!(v["layouts_total"].as_u64() > v["full_layouts"].as_u64());
    // The table ends with the counts.
    let table = gpuplan(&["mig", "layouts", "--gpu", "A100-80GB"]);
    let last = table.stdout.lines().last().unwrap().to_string();
    let expected = format!(
        "A100-SXM-80GB: 7 compute × 8 memory slices; {} valid layouts, {} full ({} distinct profile combinations), base profiles",
        v["layouts_total"], v["full_layouts"], v["full_profile_combinations"]
    );
    assert_eq!(last, expected);
}

#[test]
fn mig_layouts_check_gives_the_reason_and_exit_2() {
    let ok = gpuplan(&[
        "mig",
        "layouts",
        "--gpu",
        "H100",
        "--check",
        "3g.40gb@4,4g.40gb@0",
    ]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let bad = gpuplan(&[
        "mig",
        "layouts",
        "--gpu",
        "H100",
        "--check",
        "3g.40gb@2,4g.40gb@0,1g.10gb@3",
    ]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr
            .contains("3g.40gb may not start at memory slice 2 (valid starts: 0, 4)"),
        "{}",
        bad.stderr
    );
    assert!(
        bad.stderr
            .contains("4g.40gb@0 and 1g.10gb@3 overlap on memory slice 3"),
        "{}",
        bad.stderr
    );
    let no_mig = gpuplan(&["mig", "layouts", "--gpu", "L4"]);
    assert_eq!(no_mig.code, 2);
    assert!(
        no_mig.stderr.contains("a MIG-capable GPU"),
        "{}",
        no_mig.stderr
    );
}

#[test]
fn mig_fleet_json_follows_the_contract() {
    let run = gpuplan(&[
        "mig",
        "examples/fleets/fleet-12.toml",
        "--gpu",
        "H100",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = json(&run);
    let gpus = v["gpus"].as_array().unwrap();
    assert_eq!(gpus.len() as u64, v["total_gpus"].as_u64().unwrap());
    for g in gpus {
        assert_eq!(g["gpu"], "H100-SXM-80GB");
        for slice in g["layout"].as_array().unwrap() {
            assert!(slice["profile"].is_string() && slice["start"].is_u64());
            assert!(slice["services"].as_array().unwrap().len() <= 1);
        }
    }
    assert!(v["usd_per_hour"].as_f64().unwrap() > 0.0);
    let baseline = &v["baseline_whole_gpu"];
    assert!(baseline["total_gpus"].as_u64() > v["total_gpus"].as_u64());
    assert!(baseline["usd_per_hour"].as_f64() > v["usd_per_hour"].as_f64());
    assert!(v["lower_bound_gpus"].as_u64() <= v["total_gpus"].as_u64());
    // Every service met its SLOs in simulation, in its slices.
    for s in v["services"].as_array().unwrap() {
        assert_eq!(s["simulated"]["meets_slo"], true, "{}", s["name"]);
    }
    let names: Vec<&str> = v["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "mig",
            "whole_gpu",
            "time_sharing",
            "fractional",
            "heterogeneous"
        ]
    );
}

const SERVICE: &str = r#"
[[services]]
name = "chat"
model = { id = "MODEL" }
traffic = { requests_per_s = 1, input_tokens = { mean = 500, p99 = 2000 }, output_tokens = { mean = 100, p99 = 400 } }
"#;

#[test]
fn mig_fleet_bad_input_is_exit_2_naming_file_service_and_field() {
    let path = fleet_file(
        "bad",
        &format!(
            "kind = \"fleet\"\n{}",
            SERVICE.replace("MODEL", "llama-9000")
        ),
    );
    let run = gpuplan(&["mig", path.to_str().unwrap(), "--gpu", "H100"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("bad.toml: services[0] \"chat\": invalid `model.id` = llama-9000"),
        "{}",
        run.stderr
    );
    let unknown_gpu = gpuplan(&["mig", "examples/fleets/fleet-12.toml", "--gpu", "L4"]);
    assert_eq!(unknown_gpu.code, 2, "{}", unknown_gpu.stderr);
}

#[test]
fn mig_fleet_that_fits_no_slice_is_exit_1_with_the_reason() {
    let path = fleet_file(
        "huge",
        &format!(
            "kind = \"fleet\"\n{}",
            SERVICE.replace("MODEL", "llama-3.1-405b")
        ),
    );
    let run = gpuplan(&["mig", path.to_str().unwrap(), "--gpu", "H100"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("service \"chat\" fits no MIG profile of H100-SXM-80GB"),
        "{}",
        run.stderr
    );
}
