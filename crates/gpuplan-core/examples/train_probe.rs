use gpuplan_catalog::*;
use gpuplan_core::*;
fn main() {
    let catalog = Catalog::embedded().unwrap();
    let cal = Calibration::bundled();
    let fit = std::env::args().any(|a| a == "--fit");
    let dev = parse_benchmarks("dev", BUNDLED_BENCHMARKS_DEV).unwrap();
    let dev2 = parse_benchmarks("dev2", BUNDLED_BENCHMARKS_DEV_2).unwrap();
    let mut tf = training::TrainingFactors::bundled();
    if fit {
        tf = fit_training_calibration(&catalog, &dev, &cal, &tf);
        print!("{}", tf.table.to_csv());
    }
    if std::env::args().any(|a| a == "--detail") {
        let m = catalog.model("llama-3.1-8b").unwrap();
        let gpu = catalog.gpu("H100-96GB-HBM2e-500W").unwrap();
        for fused in [false, true] {
            let job = training::TrainingJob {
                model: &m,
                method: FineTuneMethod::Full,
                optimizer: Optimizer::Adam,
                precision: gpuplan_catalog::Precision::Bf16,
                seq_len: 8192,
                fused_kernels: fused,
                async_tp: false,
                grad_reduce_bytes: 4.0,
                attention_kernel: training::AttentionKernel::Sdpa,
            };
            let layout = training::TrainingLayout {
                tp: 1,
                pp: 1,
                dp: 8,
                zero: 3,
                micro_batch: 2,
                micro_batches: 1,
                schedule: PipelineSchedule::OneFOneB,
                recompute: Recompute::Selective,
            };
            let fabric = training::Fabric::new(gpu, 8, true, 3200.0, false, &cal);
            let st = training::step_time(&job, &layout, gpu, &fabric, &cal, &tf).unwrap();
            println!("{st:#?}");
        }
        return;
    }
    for (name, rows) in [("dev", &dev), ("dev2", &dev2)] {
        let rows: Vec<BenchmarkRow> = rows
            .iter()
            .filter(|r| r.kind == BenchmarkKind::Training)
            .cloned()
            .collect();
        let rep = validate_with(&catalog, &rows, &cal, &tf);
        for r in &rep.rows {
            println!(
                "{name} {:28} {:16} {:14} {:>10.1} {:>10} {:>8} {}",
                r.id,
                r.model,
                r.gpu,
                r.measured,
                r.predicted.map(|p| format!("{p:.1}")).unwrap_or("-".into()),
                r.error_pct
                    .map(|e| format!("{e:+.1}"))
                    .unwrap_or("skip".into()),
                r.bound.clone().or(r.skipped.clone()).unwrap_or_default()
            );
        }
        println!("{name} {:?}", rep.summary.by_kind.get("training"));
    }
}
#[allow(dead_code)]
fn detail() {}
