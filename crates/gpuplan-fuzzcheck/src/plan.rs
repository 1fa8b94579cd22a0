//! Workloads through the search: the invariants of a validated workload, of
//! every plan, and the structured target that builds workloads from bytes
//! (so that most inputs are valid and reach `plan`, `fit` and `estimate`).

use crate::bytes::Bytes;
use crate::catalog::replica_runs;
use crate::fixtures;
use crate::text::assert_core_located;
use crate::{assert_finite, assert_non_negative};
use gpuplan_core::{
    estimate, parse_workload, plan, plan_replica, InferenceWorkload, Plan, PlanOptions,
    RawWorkload, WorkloadFormat,
};
use gpuplan_sim::TokenLengths;

/// What a validated workload satisfies.
pub(crate) fn check_workload(raw: &RawWorkload, w: &InferenceWorkload) {
    for (name, t) in [("input", w.input_tokens), ("output", w.output_tokens)] {
        assert!(
            t.mean.is_finite() && t.mean > 0.0 && t.p99 >= t.mean && t.p99.is_finite(),
            "{name} tokens {t:?}"
        );
    }
    assert!(w.peak_requests_per_s > 0.0 && w.peak_requests_per_s.is_finite());
    assert!(w.mean_requests_per_s > 0.0 && w.mean_requests_per_s <= w.peak_requests_per_s);
    assert!(w.arrival_cv2.is_finite() && w.arrival_cv2 > 0.0);
    assert!(!w.precisions.is_empty());
    let c = &w.constraints;
    assert!(c.min_replicas >= 1 && c.max_gpus_per_replica >= 1);
    assert!(c.max_utilization > 0.0 && c.max_utilization < 1.0);
    assert!(w.memory_utilization > 0.0 && w.memory_utilization <= 1.0);
    assert!(w.pricing.discounts.values().all(|d| (0.0..1.0).contains(d)));
    assert_non_negative("spot preemptions", w.pricing.spot_preemptions_per_hour);
    // One validation layer: the simulator takes every workload `plan` takes.
    for (stats, h) in [
        (
            w.input_tokens,
            raw.traffic.input_tokens.histogram.as_deref(),
        ),
        (
            w.output_tokens,
            raw.traffic.output_tokens.histogram.as_deref(),
        ),
    ] {
        TokenLengths::from_workload(stats, h)
            .unwrap_or_else(|e| panic!("plan accepts the workload, the simulator does not: {e}"));
    }
}

/// Plans `w` on the small catalog; every plan (top and frontier) keeps the
/// plan invariants, the report is finite, and the best plan's replica is
/// one that `fit` and `estimate` accept and that gives finite numbers.
pub(crate) fn plan_and_check(w: &InferenceWorkload) {
    let catalog = fixtures::catalog();
    let cal = fixtures::calibration();
    let report = plan(catalog, w, cal, PlanOptions { top: 3 });
    assert_finite("plan report", &report);
    assert!(report.plans.len() <= report.feasible);
    for p in report.plans.iter().chain(&report.pareto) {
        check_plan(w, p);
    }
    for pair in report.plans.windows(2) {
        assert!(
            pair[0].usd_per_hour <= pair[1].usd_per_hour * (1.0 + 1e-9),
            "plans are ranked cheapest first"
        );
    }
    if report.plans.is_empty() {
        assert!(report.hint.is_some(), "an infeasible plan explains itself");
        assert!(report
            .rejected
            .values()
            .all(|r| r.count > 0 && !r.example.is_empty()));
    }
    if let Some(best) = report.plans.first() {
        let replica = plan_replica(catalog, w, cal, best)
            .unwrap_or_else(|e| panic!("the best plan's replica does not rebuild: {e}"));
        assert!(replica.memory.fits, "the best plan's replica does not fit");
        let gpu = catalog.gpu(&best.gpu).expect("the plan's GPU");
        replica_runs(catalog, &w.model, gpu, best.precision);
        let e = estimate(
            &replica.deployment,
            &replica.memory,
            w.input_tokens.mean.ceil() as u64,
            w.output_tokens.mean.ceil() as u64,
            Some(1),
            best.max_num_seqs,
            best.max_batched_tokens,
        );
        if let Ok(e) = e {
            assert_finite("estimate of the best plan", &e);
        }
    }
}

/// What every plan satisfies (as `gpuplan-core/tests/plan.rs` checks on
/// random workloads): finite non-negative numbers, instances that cover the
/// replicas, the price arithmetic, the utilisation cap, the SLOs and the
/// constraints.
fn check_plan(w: &InferenceWorkload, p: &Plan) {
    for (name, v) in [
        ("usd_per_hour", p.usd_per_hour),
        ("ttft_ms_p99", p.ttft_ms_p99),
        ("tpot_ms_p99", p.tpot_ms_p99),
        ("e2e_ms_p99", p.e2e_ms_p99),
        ("utilization", p.utilization),
        ("headroom", p.headroom),
        (
            "usd_per_million_output_tokens",
            p.usd_per_million_output_tokens,
        ),
    ] {
        assert_non_negative(name, v);
    }
    assert!(p.replicas >= w.constraints.min_replicas && p.instances >= 1);
    assert_eq!(p.gpus_per_replica, p.tp * p.pp);
    assert!(p.gpus_per_replica <= w.constraints.max_gpus_per_replica);
    let billed = u64::from(p.instances) * u64::from(p.gpus_per_instance);
    let used = u64::from(p.replicas) * u64::from(p.gpus_per_replica);
    assert_eq!(billed, used + u64::from(p.idle_gpus), "{p:?}");
    let d = &p.derivation;
    let expect = f64::from(p.instances) * d.list_usd_per_instance_hour * (1.0 - d.discount);
    assert!(
        (p.usd_per_hour - expect).abs() <= 1e-9 * expect.max(1.0),
        "$/h {} vs instances × price {expect}",
        p.usd_per_hour
    );
    assert!(p.utilization <= w.constraints.max_utilization + 1e-9);
    let within = |limit: Option<f64>, v: f64| limit.is_none_or(|l| v <= l * (1.0 + 1e-9));
    assert!(within(w.slo.ttft_ms_p99, p.ttft_ms_p99), "{p:?}");
    assert!(within(w.slo.tpot_ms_p99, p.tpot_ms_p99), "{p:?}");
    assert!(within(w.slo.e2e_ms_p99, p.e2e_ms_p99), "{p:?}");
    assert!(within(w.constraints.max_usd_per_hour, p.usd_per_hour));
    assert!(w.constraints.spot || !p.spot);
    let c = &w.constraints;
    assert!(c.gpus.is_empty() || c.gpus.contains(&p.gpu), "{}", p.gpu);
    assert!(!c.exclude_gpus.contains(&p.gpu));
    assert!(c.providers.is_empty() || c.providers.contains(&p.provider));
    assert!(w.precisions.contains(&p.precision));
}

/// Builds a workload file from bytes: every field drawn from a range that
/// reaches both sides of its limit now and then, so most inputs validate
/// and run the whole search.
pub fn workload_text(b: &mut Bytes<'_>) -> String {
    let models = [
        "llama-3.1-8b",
        "llama-3.1-70b",
        "mixtral-8x7b",
        "qwen3-235b-a22b",
        "deepseek-v3",
        "gpt-h2048-l24-a16",
        "gpt-h4096-l32-a32-s8192",
    ];
    let model = b.pick(&models);
    let all = ["bf16", "fp8", "int4", "fp4", "fp16", "int8", "fp32"];
    let mask = b.u8();
    let precisions: Vec<String> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, p)| format!("\"{p}\""))
        .collect();
    let mut t = format!("kind = \"inference\"\n[model]\nid = \"{model}\"\n");
    if !precisions.is_empty() {
        t += &format!("precisions = [{}]\n", precisions.join(", "));
    }
    if b.bool() {
        t += &format!("kv_precision = \"{}\"\n", b.pick(&["fp8", "bf16", "fp16"]));
    }
    let rps = b.log_range(1e-3, 2e4);
    let mean_in = b.log_range(1.0, 20_000.0).round();
    let p99_in = mean_in * b.range(1.0, 8.0);
    let mean_out = b.log_range(1.0, 4_000.0).round();
    let p99_out = mean_out * b.range(1.0, 8.0);
    t += &format!(
        "[traffic]\nrequests_per_s = {rps}\ninput_tokens = {{ mean = {mean_in}, p99 = {p99_in} }}\n\
         output_tokens = {{ mean = {mean_out}, p99 = {p99_out} }}\n"
    );
    if b.bool() {
        t += &format!(
            "mean_requests_per_s = {}\n",
            rps * b.range(0.0, 1.0).max(1e-3)
        );
    }
    if b.bool() {
        t += &format!(
            "arrival = {{ kind = \"gamma\", cv = {} }}\n",
            b.log_range(0.1, 20.0)
        );
    }
    t += "[slo]\n";
    if b.bool() {
        t += &format!("ttft_ms_p99 = {}\n", b.log_range(10.0, 1e5));
    }
    if b.bool() {
        t += &format!("tpot_ms_p99 = {}\n", b.log_range(1.0, 1e3));
    }
    if b.bool() {
        t += &format!("e2e_ms_p99 = {}\n", b.log_range(100.0, 1e6));
    }
    t += "[constraints]\n";
    t += &format!(
        "min_replicas = {}\nmax_gpus_per_replica = {}\nmax_utilization = {}\nspot = {}\n",
        1 + b.u8() % 8,
        1 + b.u8() % 16,
        b.range(0.01, 0.99),
        b.bool()
    );
    if b.bool() {
        let gpus = ["H100", "L40S", "L4", "A100-80GB", "T4"];
        let g = b.pick(&gpus);
        let key = if b.bool() { "gpus" } else { "exclude_gpus" };
        t += &format!("{key} = [\"{g}\"]\n");
    }
    if b.bool() {
        t += &format!("providers = [\"{}\"]\n", b.pick(&["aws", "gcp", "lambda"]));
    }
    if b.bool() {
        t += &format!("max_usd_per_hour = {}\n", b.log_range(0.1, 1e5));
    }
    if b.bool() {
        t += &format!(
            "[pricing]\ndiscounts = {{ aws = {} }}\n",
            b.range(0.0, 0.95)
        );
    }
    t += &format!(
        "[engine]\nmemory_utilization = {}\nmax_batched_tokens = {}\n",
        b.range(0.3, 0.98),
        256 + u64::from(b.u16())
    );
    t
}

/// The structured target: a workload built from bytes through parse,
/// validation and the search (see [`plan_and_check`]).
pub fn plan_structured(data: &[u8]) {
    let mut b = Bytes::new(data);
    let text = workload_text(&mut b);
    let raw = parse_workload("fuzz.toml", &text, WorkloadFormat::Toml)
        .unwrap_or_else(|e| panic!("a generated workload does not parse: {e}\n{text}"));
    match raw.clone().validate(fixtures::catalog(), None) {
        Err(e) => assert_core_located(&e, "fuzz.toml"),
        Ok(w) => {
            check_workload(&raw, &w);
            plan_and_check(&w);
        }
    }
}
