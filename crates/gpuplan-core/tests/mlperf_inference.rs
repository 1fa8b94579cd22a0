//! MLPerf Inference LLM rows (`benchmarks_dev_2.csv`): Offline throughput and
//! Server / Interactive capacity at the p99 bounds, on the data sets' lengths.

use gpuplan_catalog::{parse_benchmarks, BenchmarkRow, Catalog, BUNDLED_BENCHMARKS_DEV_2};
use gpuplan_core::mlperf_inference::{
    bundled_input_lengths, fit_family_factors, fit_input_lengths, fitted_on_mlperf,
    is_mlperf_llm_row, predict_mlperf_llm,
};
use gpuplan_core::Calibration;

fn rows() -> Vec<BenchmarkRow> {
    parse_benchmarks("benchmarks_dev_2.csv", BUNDLED_BENCHMARKS_DEV_2).unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn the_bundled_input_lengths_are_what_the_fit_produces() {
    let catalog = Catalog::embedded().unwrap();
    let bundled = bundled_input_lengths();
    assert_eq!(bundled.factors.len(), 4);
    let fitted = fit_input_lengths(&catalog, &rows(), &Calibration::bundled(), &bundled);
    for (f, b) in fitted.factors.iter().zip(&bundled.factors) {
        assert_eq!(f.name, b.name);
        assert_eq!(
            f.value, b.value,
            "{}: the fit gives {} but data/mlperf_input_lengths.csv has {} (see `gpuplan validate --set mlperf --fit`)",
            f.name, f.value, b.value
        );
        // A fit at a bound would mean the length stands in for a model error.
        assert!(f.value > f.min && f.value < f.max, "{} at a bound", f.name);
    }
}

#[test]
fn tensorrt_llm_offline_and_server_rows_are_within_the_targets() {
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let lengths = bundled_input_lengths();
    let rows = rows();
    let mut errors: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    let mut llm = 0;
    for row in rows.iter().filter(|r| is_mlperf_llm_row(r)) {
        llm += 1;
        if row.engine != "trtllm" {
            continue;
        }
        match predict_mlperf_llm(&catalog, row, &cal, &lengths) {
            Ok((p, _)) => {
                assert!(p.is_finite() && p > 0.0, "{}", row.id);
                errors
                    .entry(row.scenario.as_str())
                    .or_default()
                    .push(((p - row.value) / row.value * 100.0).abs());
            }
            Err(why) => assert!(!why.is_empty(), "{}", row.id),
        }
    }
    assert!(llm >= 150, "{llm} MLPerf LLM rows");
    // Offline: the input means are fitted on these rows (target 10%).
    let offline = errors.remove("offline").unwrap();
    assert!(
        offline.len() >= 30 && median(offline.clone()) <= 10.0,
        "{offline:?}"
    );
    // Server: not fitted on — the planner's capacity at the p99 bounds (target 15%).
    let server = errors.remove("server").unwrap();
    assert!(
        server.len() >= 25 && median(server.clone()) <= 15.0,
        "{server:?}"
    );
    let interactive = errors.remove("interactive").unwrap();
    assert!(median(interactive.clone()) <= 25.0, "{interactive:?}");
}

#[test]
fn other_engines_beam_search_and_unknown_lengths_say_why() {
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let lengths = bundled_input_lengths();
    let rows = rows();
    let why = |id_part: &str, engine: &str| {
        let row = rows
            .iter()
            .find(|r| is_mlperf_llm_row(r) && r.id.contains(id_part) && r.engine == engine)
            .unwrap();
        predict_mlperf_llm(&catalog, row, &cal, &lengths).unwrap_err()
    };
    assert!(why("llama2-70b", "synapse").contains("engine `synapse` on Intel GPUs is not modelled"));
    assert!(why("deepseek-r1", "trtllm").contains("not published"));
}

#[test]
fn gpt_j_beam_search_rows_are_predicted_and_cost_more_than_greedy_decoding() {
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let lengths = bundled_input_lengths();
    let rows = rows();
    let gptj: Vec<&BenchmarkRow> = rows
        .iter()
        .filter(|r| is_mlperf_llm_row(r) && r.dataset == "gptj")
        .collect();
    assert!(gptj.len() >= 25, "{} GPT-J rows", gptj.len());
    let mut offline = Vec::new();
    for row in &gptj {
        assert_eq!(row.beam, Some(4), "{}", row.id);
        let (p, _) = predict_mlperf_llm(&catalog, row, &cal, &lengths)
            .unwrap_or_else(|e| panic!("{}: {e}", row.id));
        if row.scenario == "offline" {
            offline.push(((p - row.value) / row.value * 100.0).abs());
        }
        // Four beams decode four sequences per sample: greedy decoding of the
        // same samples must predict more samples per second.
        let mut greedy = (*row).clone();
        greedy.beam = Some(1);
        let (g, _) = predict_mlperf_llm(&catalog, &greedy, &cal, &lengths).unwrap();
        assert!(g > p * 1.2, "{}: greedy {g:.0} vs 4 beams {p:.0}", row.id);
    }
    // The data set's input mean is fitted on the Offline rows (target 10%).
    assert!(median(offline.clone()) <= 10.0, "{offline:?}");
}

#[test]
fn at_least_85_percent_of_the_mlperf_llm_rows_are_predicted() {
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let lengths = bundled_input_lengths();
    let rows = rows();
    let llm: Vec<&BenchmarkRow> = rows.iter().filter(|r| is_mlperf_llm_row(r)).collect();
    let mut skipped = Vec::new();
    for row in &llm {
        if let Err(why) = predict_mlperf_llm(&catalog, row, &cal, &lengths) {
            assert!(!why.is_empty(), "{} skipped without a reason", row.id);
            skipped.push((row.id.as_str(), why));
        }
    }
    let predicted = llm.len() - skipped.len();
    assert!(
        predicted as f64 >= 0.85 * llm.len() as f64,
        "{predicted} of {} predicted; skipped: {skipped:#?}",
        llm.len()
    );
}

#[test]
fn cdna3_factors_are_what_the_rocm_vllm_offline_fit_produces() {
    let catalog = Catalog::embedded().unwrap();
    let bundled = Calibration::bundled();
    let fitted = fit_family_factors(&catalog, &rows(), &bundled, &bundled_input_lengths());
    let mut n = 0;
    for (f, b) in fitted.factors.iter().zip(&bundled.factors) {
        assert_eq!(f.name, b.name);
        if fitted_on_mlperf(&f.name) {
            n += 1;
            // calibration.csv stores 4 decimals. The dev fit and this one
            // share factors, and the table is their joint fixed point: the
            // dev fit keeps a given table that ties its best optimum.
            assert!(
                (f.value - b.value).abs() <= 6e-5,
                "{}: the fit gives {} but data/calibration.csv has {} (rerun `gpuplan validate --set mlperf --kind inference --fit --write-calibration data/calibration.csv`)",
                f.name, f.value, b.value
            );
            assert!(f.value > f.min && f.value < f.max, "{} at a bound", f.name);
        } else {
            assert_eq!(
                f.value, b.value,
                "{} is not the family fit's to move",
                f.name
            );
        }
    }
    assert_eq!(n, 3, "CDNA3 compute and bandwidth, and the power exponent");
}

#[test]
fn amd_rocm_vllm_server_rows_are_predicted_held_out_within_the_target() {
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let lengths = bundled_input_lengths();
    let mut server = Vec::new();
    for row in rows()
        .iter()
        .filter(|r| is_mlperf_llm_row(r) && r.engine == "rocm-vllm" && r.scenario != "offline")
    {
        let (p, _) = predict_mlperf_llm(&catalog, row, &cal, &lengths)
            .unwrap_or_else(|e| panic!("{}: {e}", row.id));
        server.push(((p - row.value) / row.value * 100.0).abs());
    }
    // Server and Interactive rows of MI300X/MI325X: the CDNA3 factors are
    // fitted on the Offline rows only (target: median within 15%).
    assert!(server.len() >= 25, "{} rows", server.len());
    assert!(median(server.clone()) <= 15.0, "{server:?}");
}
