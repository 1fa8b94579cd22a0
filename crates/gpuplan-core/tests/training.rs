//! Training: the step-time model against published throughput (Megatron-LM,
//! torchtitan, Llama 3) and MLPerf Training time-to-train, the fitted
//! factors, and the invariants of memory, fabric and resilience.

use gpuplan_catalog::{
    parse_benchmarks, BenchmarkKind, BenchmarkRow, Catalog, Precision, BUNDLED_BENCHMARKS_DEV,
    BUNDLED_BENCHMARKS_DEV_2,
};
use gpuplan_core::training::{
    resilience, step_time, AttentionKernel, Fabric, ResilienceInput, TrainingFactors, TrainingJob,
    TrainingLayout,
};
use gpuplan_core::{
    training_memory, validate_with, Calibration, FineTuneMethod, Layout, Optimizer,
    PipelineSchedule, Recompute, TrainingMemoryInput,
};
use proptest::prelude::*;

fn training_rows(text: &str) -> Vec<BenchmarkRow> {
    parse_benchmarks("bench.csv", text)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == BenchmarkKind::Training)
        .collect()
}

#[test]
fn throughput_rows_meet_the_accuracy_targets() {
    let catalog = Catalog::embedded().unwrap();
    let rows = training_rows(BUNDLED_BENCHMARKS_DEV);
    let report = validate_with(
        &catalog,
        &rows,
        &Calibration::bundled(),
        &TrainingFactors::bundled(),
    );
    let s = &report.summary.by_kind["training"];
    assert!(s.n_predicted as f64 >= 0.9 * rows.len() as f64, "{s:?}");
    assert!(s.median_abs_pct_error.unwrap() <= 10.0, "{s:?}");
}

#[test]
fn megatron_paper_configurations_reproduce_their_throughput_within_12_percent() {
    // Narayanan et al. 2021 (the Megatron-LM weak-scaling table, A100 rows).
    let catalog = Catalog::embedded().unwrap();
    let rows: Vec<BenchmarkRow> = training_rows(BUNDLED_BENCHMARKS_DEV)
        .into_iter()
        .filter(|r| r.id.starts_with("megatron-a100"))
        .collect();
    assert!(rows.len() >= 4);
    let report = validate_with(
        &catalog,
        &rows,
        &Calibration::bundled(),
        &TrainingFactors::bundled(),
    );
    for r in &report.rows {
        let e = r.error_pct.unwrap_or(f64::INFINITY);
        assert!(e.abs() <= 12.0, "{}: {e:+.1}%", r.id);
    }
}

#[test]
fn the_bundled_training_calibration_is_what_the_fit_produces() {
    let catalog = Catalog::embedded().unwrap();
    let rows = parse_benchmarks("benchmarks_dev.csv", BUNDLED_BENCHMARKS_DEV).unwrap();
    let bundled = TrainingFactors::bundled();
    let fitted =
        gpuplan_core::fit_training_calibration(&catalog, &rows, &Calibration::bundled(), &bundled);
    for (f, b) in fitted.table.factors.iter().zip(&bundled.table.factors) {
        assert_eq!(f.name, b.name);
        assert!(
            (f.value - b.value).abs() <= 6e-5,
            "{}: the fit gives {} but data/training_calibration.csv has {} (rerun `gpuplan validate --fit --kind training --write-training-calibration data/training_calibration.csv`)",
            f.name,
            f.value,
            b.value
        );
    }
}

#[test]
fn mlperf_llm_time_to_train_rows_are_predicted_and_skips_say_why() {
    let catalog = Catalog::embedded().unwrap();
    let rows = training_rows(BUNDLED_BENCHMARKS_DEV_2);
    let report = validate_with(
        &catalog,
        &rows,
        &Calibration::bundled(),
        &TrainingFactors::bundled(),
    );
    let llm: Vec<_> = report
        .rows
        .iter()
        .filter(|r| {
            !["bert", "sd-", "flux"]
                .iter()
                .any(|m| r.model.starts_with(m))
        })
        .collect();
    let predicted: Vec<f64> = llm
        .iter()
        .filter_map(|r| r.error_pct.map(f64::abs))
        .collect();
    assert!(
        predicted.len() as f64 >= 0.9 * llm.len() as f64,
        "{} of {}",
        predicted.len(),
        llm.len()
    );
    let mut sorted = predicted.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    // Held out (the factors are fitted on benchmarks_dev.csv only): the target is 20%.
    assert!(median <= 20.0, "median {median}");
    for r in report.rows.iter().filter(|r| r.predicted.is_none()) {
        assert!(!r.skipped.as_deref().unwrap_or("").is_empty(), "{}", r.id);
    }
}

#[test]
fn mlperf_nonllm_time_to_train_rows_are_predicted_without_a_factor_fitted_on_them() {
    let catalog = Catalog::embedded().unwrap();
    let rows = training_rows(BUNDLED_BENCHMARKS_DEV_2);
    let report = validate_with(
        &catalog,
        &rows,
        &Calibration::bundled(),
        &TrainingFactors::bundled(),
    );
    let mut medians = Vec::new();
    for model in ["bert-large-uncased", "sd-2-base", "flux.1-schnell"] {
        let mine: Vec<_> = report.rows.iter().filter(|r| r.model == model).collect();
        let mut errors: Vec<f64> = mine
            .iter()
            .filter_map(|r| r.error_pct.map(f64::abs))
            .collect();
        // Skips are only batches outside the published convergence points.
        for r in mine.iter().filter(|r| r.predicted.is_none()) {
            let why = r.skipped.as_deref().unwrap_or("");
            assert!(
                why.contains("outside the published convergence points"),
                "{}: {why}",
                r.id
            );
        }
        assert!(
            errors.len() * 10 >= mine.len() * 9,
            "{model}: {} of {}",
            errors.len(),
            mine.len()
        );
        errors.sort_by(f64::total_cmp);
        medians.push((model, errors[errors.len() / 2]));
    }
    // BERT and SD have 22+ rows each; FLUX has 3 (GB200 only).
    assert!(medians[0].1 <= 25.0 && medians[1].1 <= 25.0, "{medians:?}");
    // All MLPerf Training rows together: ≥ 60% predicted, median ≤ 20% (issue 11).
    let all: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.metric == "time_to_train_min")
        .collect();
    let mut errors: Vec<f64> = all
        .iter()
        .filter_map(|r| r.error_pct.map(f64::abs))
        .collect();
    assert!(
        errors.len() * 10 >= all.len() * 6,
        "{} of {}",
        errors.len(),
        all.len()
    );
    errors.sort_by(f64::total_cmp);
    assert!(
        errors[errors.len() / 2] <= 20.0,
        "median {}",
        errors[errors.len() / 2]
    );
}

fn job(model: &gpuplan_catalog::ModelArch) -> TrainingJob<'_> {
    TrainingJob {
        model,
        method: FineTuneMethod::Full,
        optimizer: Optimizer::Adam,
        precision: Precision::Bf16,
        seq_len: 4096,
        fused_kernels: true,
        async_tp: false,
        grad_reduce_bytes: 4.0,
        attention_kernel: AttentionKernel::Sdpa,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_faster_fabric_never_makes_a_step_slower(
        slow in 25.0f64..3200.0,
        factor in 1.0f64..8.0,
        nodes_pow in 1u32..5,
        tp_pow in 0u32..4,
        zero in prop::sample::select(vec![0u8, 1, 3]),
    ) {
        let catalog = Catalog::embedded().unwrap();
        let cal = Calibration::bundled();
        let f = TrainingFactors::bundled();
        let model = catalog.model("llama-3.1-8b").unwrap();
        let gpu = catalog.gpu("H100-SXM-80GB").unwrap();
        let tp = 1u32 << tp_pow;
        let gpus = 8u32 << nodes_pow;
        let layout = TrainingLayout {
            tp, pp: 1, dp: gpus / tp, zero, micro_batch: 1, micro_batches: 2,
            schedule: PipelineSchedule::OneFOneB, recompute: Recompute::Selective,
        };
        let at = |gbits: f64| {
            let fabric = Fabric::new(gpu, 8, true, gbits, false, &cal);
            step_time(&job(&model), &layout, gpu, &fabric, &cal, &f).unwrap().step_s
        };
        prop_assert!(at(slow * factor) <= at(slow) * (1.0 + 1e-12));
    }

    #[test]
    fn more_data_parallelism_never_raises_memory_under_zero_3(
        dp_pow in 0u32..8,
        micro_batch in 1u64..4,
        model_id in prop::sample::select(vec!["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b"]),
    ) {
        let catalog = Catalog::embedded().unwrap();
        let model = catalog.model(model_id).unwrap();
        let gpu = catalog.gpu("H100-SXM-80GB").unwrap();
        let at = |dp: u32| training_memory(&TrainingMemoryInput {
            model: &model, gpu, layout: Layout { tp: 1, pp: 1 }, dp, zero: 3,
            micro_batch, seq_len: 4096, micro_batches: 1,
            schedule: PipelineSchedule::OneFOneB, recompute: Recompute::Full,
            precision: Precision::Bf16, method: FineTuneMethod::Full,
            optimizer: Optimizer::Adam, fused_loss: true, async_tp: false,
        }).unwrap().reserved_peak_gib;
        let dp = 1u32 << dp_pow;
        prop_assert!(at(dp * 2) <= at(dp) + 1e-9);
    }

    #[test]
    fn expected_spot_cost_is_at_least_spot_price_times_ideal_time(
        hours in 0.1f64..5000.0,
        gpus_pow in 0u32..12,
        rate in 0.0f64..2.0,
        checkpoint_s in 1.0f64..3600.0,
        restart_s in 0.0f64..7200.0,
        price in 0.1f64..500.0,
    ) {
        let gpus = f64::from(1u32 << gpus_pow);
        let r = resilience(&ResilienceInput {
            solve_s: hours * 3600.0,
            gpus,
            instances: (gpus / 8.0).max(1.0),
            preemptions_per_instance_hour: rate,
            checkpoint_s,
            restart_s,
            interval_s: None,
        });
        // Infinite when interruptions come faster than checkpoints can be written: never finishes.
        prop_assert!(!r.wall_hours.is_nan());
        prop_assert!(price * r.wall_hours >= price * hours * (1.0 - 1e-12));
        prop_assert!(r.overhead_factor >= 1.0 - 1e-12);
    }
}
