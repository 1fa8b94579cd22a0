//! The planner against a brute-force oracle and metamorphic properties, on
//! small hand-made catalogs.

use gpuplan_catalog::{Catalog, CatalogBuilder, TableKind};
use gpuplan_core::{
    block_tokens, default_kv_precision, inference_memory, plan, prefill_under_load_s, steady_state,
    wait_quantile_s, Calibration, Deployment, EngineLimits, InferenceMemoryInput,
    InferenceWorkload, Layout, PlanOptions, RawWorkload, BATCH_CAPS,
};
use proptest::prelude::*;

const HEADER: &str = "provider,instance_type,accelerator,accelerator_count,vcpus,memory_gib,region,zone,price_per_hour,spot_price_per_hour,interconnect,source_snapshot\n";

fn small_catalog(rows: &[String]) -> Catalog {
    let mut b = CatalogBuilder::embedded().unwrap();
    b.clear_offerings();
    let mut csv = HEADER.to_string();
    for r in rows {
        csv.push_str(r);
        csv.push('\n');
    }
    b.extend(TableKind::Offerings, "test_offerings.csv", &csv)
        .unwrap();
    b.build().unwrap()
}

fn base_rows() -> Vec<String> {
    vec![
        "aws,p5.48xlarge,H100,8,192,2048,us-east-1,,98.32,40.0,nvlink+efa-3200,test 2026-01-01".into(),
        "aws,g6e.xlarge,L40S,1,4,32,us-east-1,,1.86,0.9,pcie,test 2026-01-01".into(),
        "aws,g6e.12xlarge,L40S,4,48,384,eu-west-1,,10.49,4.0,pcie,test 2026-01-01".into(),
        "gcp,a3-highgpu-1g,H100,1,26,234,europe-west4,,11.06,3.1,nvlink,test 2026-01-01".into(),
        "gcp,a2-ultragpu-1g,A100-80GB,1,12,170,us-central1,,5.07,1.6,nvlink,test 2026-01-01".into(),
        "gcp,g2-standard-4,L4,1,4,16,europe-west4,,0.71,0.28,pcie,test 2026-01-01".into(),
        "lambda,gpu_1x_h100_sxm5,H100,1,26,225,us-east-1,,3.29,,nvlink,test 2026-01-01".into(),
        "azure,Standard_NC24ads_A100_v4,A100-80GB,1,24,220,westeurope,,3.67,0.9,pcie,test 2026-01-01".into(),
    ]
}

fn workload(catalog: &Catalog, toml_text: &str) -> InferenceWorkload {
    let raw: RawWorkload = toml::from_str(toml_text).unwrap();
    raw.validate(catalog, None).unwrap()
}

fn chat(ttft: f64, tpot: f64, rps: f64, extra: &str) -> String {
    format!(
        r#"
kind = "inference"
[model]
id = "llama-3.1-8b"
precisions = ["bf16", "fp8"]
[traffic]
requests_per_s = {rps}
input_tokens = {{ mean = 1000, p99 = 3000 }}
output_tokens = {{ mean = 200, p99 = 600 }}
[slo]
ttft_ms_p99 = {ttft}
tpot_ms_p99 = {tpot}
[constraints]
{extra}
"#
    )
}

/// The cheapest feasible fleet by brute force: every offering × precision ×
/// single-instance layout × batch cap × replica count, checked directly
/// against the SLOs at the per-replica load.
fn brute_force_cheapest(catalog: &Catalog, w: &InferenceWorkload) -> Option<f64> {
    let cal = Calibration::bundled();
    let mut best: Option<f64> = None;
    let ca2 = w.arrival_cv2;
    let cs2 = ((w.output_tokens.p99 - w.output_tokens.mean) / (2.326 * w.output_tokens.mean))
        .powi(2)
        .clamp(0.0, 4.0);
    for o in catalog.offerings() {
        let Some(gpu_name) = &o.gpu else { continue };
        let gpu = catalog.gpu(gpu_name).unwrap();
        let Some(price) = o.price_per_hour else {
            continue;
        };
        let per_instance = o.accelerator_count as u32;
        for &p in &w.precisions {
            if p == gpuplan_catalog::Precision::Fp8
                && gpu.fp8_tflops.is_none()
                && gpu.architecture != "Ampere"
            {
                continue;
            }
            for tp in [1u32, 2, 4, 8] {
                for pp in [1u32, 2, 4, 8] {
                    let layout = Layout { tp, pp };
                    if layout.gpus() > per_instance || layout.check(&w.model).is_err() {
                        continue;
                    }
                    let kv = default_kv_precision(p);
                    let context = (w.input_tokens.p99 + w.output_tokens.p99).ceil() as u64;
                    let mem = inference_memory(&InferenceMemoryInput {
                        model: &w.model,
                        gpu,
                        layout,
                        precision: p,
                        kv_precision: kv,
                        context_len: context,
                        limits: EngineLimits {
                            memory_utilization: w.memory_utilization,
                            max_batched_tokens: w.max_batched_tokens,
                            max_num_seqs: 1024,
                        },
                    })
                    .unwrap();
                    if !mem.fits {
                        continue;
                    }
                    let dep = Deployment::new(&w.model, gpu, layout, p, kv, &cal).unwrap();
                    let seqs = mem.kv_cache_tokens
                        / block_tokens((w.input_tokens.mean + w.output_tokens.mean).ceil() as u64);
                    let mut caps: Vec<u64> =
                        BATCH_CAPS.iter().copied().filter(|b| *b <= seqs).collect();
                    if (1..1024).contains(&seqs) {
                        caps.push(seqs);
                    }
                    for b in caps {
                        let ss = steady_state(
                            &dep,
                            w.input_tokens.mean,
                            w.output_tokens.mean,
                            b as f64,
                            w.max_batched_tokens as f64,
                        );
                        if w.slo.tpot_ms_p99.is_some_and(|l| ss.tpot_ms > l) {
                            continue;
                        }
                        let service = ss.e2e_ms / 1e3;
                        let max_rps = b as f64 / service;
                        let prefill = prefill_under_load_s(
                            &dep,
                            w.input_tokens.p99,
                            w.input_tokens.mean,
                            w.output_tokens.mean,
                            b as f64,
                            w.max_batched_tokens as f64,
                        );
                        for replicas in w.constraints.min_replicas..=200 {
                            let lambda = w.peak_requests_per_s / f64::from(replicas);
                            if lambda > max_rps * w.constraints.max_utilization * (1.0 + 1e-6) {
                                continue;
                            }
                            let ttft = (wait_quantile_s(lambda, service, b as f64, ca2, cs2, 0.99)
                                + prefill)
                                * 1e3;
                            if w.slo.ttft_ms_p99.is_some_and(|l| ttft > l * (1.0 + 1e-6)) {
                                continue;
                            }
                            let per = (per_instance / layout.gpus()).max(1);
                            let cost = f64::from(replicas.div_ceil(per)) * price;
                            best = Some(best.map_or(cost, |x: f64| x.min(cost)));
                            break;
                        }
                    }
                }
            }
        }
    }
    best
}

#[test]
fn planner_optimum_matches_brute_force() {
    let catalog = small_catalog(&base_rows());
    let mut compared = 0;
    for (ttft, tpot, rps) in [
        (2000.0, 60.0, 20.0),
        (500.0, 30.0, 5.0),
        (3000.0, 100.0, 60.0),
        (300.0, 20.0, 2.0),
    ] {
        let w = workload(&catalog, &chat(ttft, tpot, rps, ""));
        let report = plan(
            &catalog,
            &w,
            &Calibration::bundled(),
            PlanOptions { top: 5 },
        );
        let oracle = brute_force_cheapest(&catalog, &w);
        match (report.plans.first(), oracle) {
            (Some(p), Some(o)) => {
                assert!(
                    (p.usd_per_hour - o).abs() <= 1e-6 * o,
                    "SLO {ttft}/{tpot} at {rps} rps: planner ${} vs brute force ${o}",
                    p.usd_per_hour
                );
                compared += 1;
            }
            (None, None) => {}
            (p, o) => panic!(
                "SLO {ttft}/{tpot}: planner {:?} vs oracle {o:?}",
                p.map(|p| p.usd_per_hour)
            ),
        }
    }
    assert!(compared >= 3, "only {compared} feasible cases compared");
}

#[test]
fn infeasible_workload_explains_itself() {
    let catalog = small_catalog(&base_rows());
    let w = workload(&catalog, &chat(2000.0, 1.0, 20.0, ""));
    let report = plan(
        &catalog,
        &w,
        &Calibration::bundled(),
        PlanOptions::default(),
    );
    assert!(report.plans.is_empty());
    assert!(
        report.hint.as_deref().unwrap().contains("tpot_ms_p99"),
        "{:?}",
        report.hint
    );
    assert!(report
        .rejected
        .values()
        .all(|r| r.count > 0 && !r.example.is_empty()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Adding a cheaper copy of an offering never makes the best plan more expensive,
    /// and the copy is never ranked below its original.
    #[test]
    fn cheaper_copy_never_raises_best_cost(pick in 0usize..8, discount in 0.05f64..0.9, rps in 1.0f64..40.0) {
        let rows = base_rows();
        let catalog = small_catalog(&rows);
        let w = workload(&catalog, &chat(2000.0, 80.0, rps, ""));
        let before = plan(&catalog, &w, &Calibration::bundled(), PlanOptions { top: 50 });
        let fields: Vec<&str> = rows[pick].split(',').collect();
        let price: f64 = fields[8].parse().unwrap();
        let mut copy: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
        copy[1] = format!("{}-cheap", copy[1]);
        copy[8] = format!("{}", price * (1.0 - discount));
        let mut more = rows.clone();
        more.push(copy.join(","));
        let catalog2 = small_catalog(&more);
        let w2 = workload(&catalog2, &chat(2000.0, 80.0, rps, ""));
        let after = plan(&catalog2, &w2, &Calibration::bundled(), PlanOptions { top: 50 });
        if let Some(b) = before.plans.first() {
            let a = after.plans.first().unwrap();
            prop_assert!(a.usd_per_hour <= b.usd_per_hour + 1e-9);
        }
        let rank = |name: &str| after.plans.iter().position(|p| p.instance_type == name);
        if let (Some(orig), Some(cheap)) = (rank(fields[1]), rank(&copy[1])) {
            prop_assert!(cheap <= orig);
        }
    }

    /// Tightening an SLO never makes the best plan cheaper.
    #[test]
    fn tighter_slo_never_cheaper(ttft in 200.0f64..4000.0, tpot in 15.0f64..120.0, factor in 0.3f64..1.0, rps in 1.0f64..40.0) {
        let catalog = small_catalog(&base_rows());
        let loose = plan(&catalog, &workload(&catalog, &chat(ttft, tpot, rps, "")), &Calibration::bundled(), PlanOptions::default());
        let tight = plan(&catalog, &workload(&catalog, &chat(ttft * factor, tpot * factor, rps, "")), &Calibration::bundled(), PlanOptions::default());
        if let Some(t) = tight.plans.first() {
            let l = loose.plans.first().expect("a looser SLO keeps every plan feasible");
            prop_assert!(t.usd_per_hour >= l.usd_per_hour - 1e-9);
        }
    }

    /// Region and residency constraints are never violated; spot = false never
    /// yields a spot plan; min_replicas is honoured.
    #[test]
    fn constraints_are_honoured(min_replicas in 1u32..6, spot in any::<bool>(), eu in any::<bool>(), rps in 1.0f64..30.0) {
        let catalog = small_catalog(&base_rows());
        let mut extra = format!("min_replicas = {min_replicas}\nspot = {spot}\n");
        if eu {
            extra.push_str("geo = [\"EU\"]\n");
        } else {
            extra.push_str("regions = [\"us-*\"]\n");
        }
        let w = workload(&catalog, &chat(3000.0, 100.0, rps, &extra));
        let report = plan(&catalog, &w, &Calibration::bundled(), PlanOptions { top: 100 });
        for p in report.plans.iter().chain(report.pareto.iter()) {
            prop_assert!(p.replicas >= min_replicas);
            prop_assert!(spot || !p.spot);
            for region in std::iter::once(&p.region).chain(p.also_in_regions.iter()) {
                if eu {
                    let r = catalog.region(&p.provider, region).unwrap();
                    prop_assert!(r.eu, "{region} is not in the EU");
                } else {
                    prop_assert!(region.starts_with("us-"), "{region}");
                }
            }
        }
    }
}
