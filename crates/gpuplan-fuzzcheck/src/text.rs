//! Text inputs of the core and the simulator: workload files (TOML, JSON),
//! calibration tables, token-length histograms and traffic traces.

use crate::bytes::Bytes;
use crate::fixtures::{self, text};
use crate::plan::{check_workload, plan_and_check};
use crate::{assert_finite, assert_non_negative};
use gpuplan_core::limits::SEQUENCE_TOKENS;
use gpuplan_core::{
    ensure_finite, parse_fleet, parse_workload, plan_fleet, Bucket, Calibration, CoreError,
    MigGeometry, RawWorkload, WorkloadFormat,
};
use gpuplan_sim::{
    simulate, DeploymentCost, EngineConfig, PromptSteps, Router, SimConfig, SimError, TokenLengths,
    Trace, Traffic, VLLM_BLOCK_TOKENS,
};
use std::sync::OnceLock;

/// A core error names its file (or field) and a line or a field.
pub(crate) fn assert_core_located(e: &CoreError, file: &str) {
    match e {
        CoreError::Malformed {
            file: f, message, ..
        } => {
            assert_eq!(f, file, "{e}");
            assert!(
                message.contains("line ") || message.contains('`'),
                "names neither a line nor a field: {e}"
            );
        }
        CoreError::Invalid { field, .. } => assert!(!field.is_empty(), "{e}"),
        CoreError::Catalog(c) => assert!(c.field.is_some() || c.line.is_some(), "{e}"),
        other => panic!("unexpected error kind: {other:?}"),
    }
}

/// A workload file through the CLI's path: parse, validate against the small
/// catalog, plan. Errors name the file and a line or the field; a valid
/// workload keeps its invariants and every plan found keeps the plan's.
fn workload(data: &[u8], format: WorkloadFormat) {
    let Some(text) = text(data) else { return };
    let file = match format {
        WorkloadFormat::Toml => "w.toml",
        WorkloadFormat::Json => "w.json",
    };
    let raw = match parse_workload(file, text, format) {
        Err(e) => return assert_core_located(&e, file),
        Ok(raw) => raw,
    };
    match raw.clone().validate(fixtures::catalog(), None) {
        Err(e) => assert_core_located(&e, file),
        Ok(w) => {
            check_workload(&raw, &w);
            plan_and_check(&w);
        }
    }
}

/// A TOML workload file.
pub fn workload_toml(data: &[u8]) {
    workload(data, WorkloadFormat::Toml);
}

/// A JSON workload file.
pub fn workload_json(data: &[u8]) {
    workload(data, WorkloadFormat::Json);
}

/// A fleet file (`gpuplan mig`): errors name the file and a line or a
/// field; a valid fleet packs onto H100 MIG slices in valid layouts, with
/// finite numbers, every instance within its capacity, never below the bound.
pub fn fleet_toml(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let file = "f.toml";
    let catalog = fixtures::catalog();
    let raw = match parse_fleet(file, text, WorkloadFormat::Toml) {
        Err(e) => return assert_core_located(&e, file),
        Ok(raw) => raw,
    };
    let fleet = match raw.validate(file, catalog) {
        Err(e) => return assert_core_located(&e, file),
        Ok(f) => f,
    };
    let report = plan_fleet(catalog, fixtures::calibration(), &fleet, Some("H100"))
        .expect("the H100 has MIG profiles");
    if let Err(field) = ensure_finite(&report) {
        panic!("non-finite {field} in the fleet report");
    }
    let g = MigGeometry::of(catalog, "H100").expect("the H100 has MIG profiles");
    for gpu in &report.gpus {
        let named: Vec<(String, u32)> = gpu
            .layout
            .iter()
            .map(|s| (s.profile.clone(), s.start))
            .collect();
        assert!(g.check(&named).is_ok(), "invalid layout {named:?}");
    }
    for s in &report.services {
        let f = &s.fit;
        assert!(
            f.load_requests_per_s <= f.capacity_requests_per_s * (1.0 + 1e-9),
            "{}",
            s.name
        );
    }
    assert!(report.total_gpus >= report.lower_bound_gpus);
}

/// A calibration table (`--calibration`): errors name the line or factor;
/// an accepted table writes back (`validate --fit --write`) as a table that
/// reads back the same, and the performance model stays finite with it.
pub fn calibration(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let c = match Calibration::parse(text) {
        Err(e) => return assert_core_located(&e, "calibration.csv"),
        Ok(c) => c,
    };
    let written = c.to_csv();
    let again = Calibration::parse(&written)
        .unwrap_or_else(|e| panic!("to_csv does not read back: {e}\n{written}"));
    assert_eq!(c.factors.len(), again.factors.len());
    for (a, b) in c.factors.iter().zip(&again.factors) {
        assert_eq!((&a.name, &a.meaning), (&b.name, &b.meaning));
        assert_eq!((a.min, a.max), (b.min, b.max));
        assert!((a.value - b.value).abs() <= 5e-5, "{a:?} vs {b:?}");
    }
    let cat = fixtures::catalog();
    let model = cat.model("llama-3.1-8b").expect("a bundled model");
    let gpu = cat.gpu("H100").expect("a bundled GPU");
    for precision in [
        gpuplan_catalog::Precision::Bf16,
        gpuplan_catalog::Precision::Fp8,
    ] {
        let dep = gpuplan_core::Deployment::new(
            &model,
            gpu,
            gpuplan_core::Layout { tp: 2, pp: 2 },
            precision,
            precision,
            &c,
        )
        .expect("a bundled replica");
        for (prefill, decodes) in [(2048.0, 0.0), (0.0, 64.0), (512.0, 32.0)] {
            let it = dep.iteration(&gpuplan_core::IterationWork {
                decode_seqs: decodes,
                decode_context_sum: decodes * 2048.0,
                prefill_tokens: prefill,
                prefill_attention_pairs: prefill * prefill / 2.0,
                logit_tokens: decodes + f64::from(u8::from(prefill > 0.0)),
            });
            assert_finite("iteration", &it);
            assert!(it.total_s > 0.0, "{it:?}");
        }
    }
}

/// Raw bucket pairs from bytes: the first byte picks raw float bits (NaN,
/// infinities, subnormals) or small whole numbers (the valid region).
fn buckets(b: &mut Bytes<'_>) -> Vec<Bucket> {
    let raw = b.bool();
    let n = 1 + usize::from(b.u8() % 12);
    (0..n)
        .map(|_| {
            if raw {
                Bucket(b.f64_bits(), b.f64_bits())
            } else {
                let scale = *b.pick(&[1.0, 0.1, 10.0, 1000.0]);
                Bucket(f64::from(b.u16()) * scale, f64::from(b.u8()))
            }
        })
        .collect()
}

/// The workload a histogram is put into.
fn base_workload() -> &'static RawWorkload {
    static RAW: OnceLock<RawWorkload> = OnceLock::new();
    RAW.get_or_init(|| {
        parse_workload(
            "base.toml",
            "kind = \"inference\"\n[model]\nid = \"llama-3.1-8b\"\n[traffic]\nrequests_per_s = 5\n\
             input_tokens = { mean = 500, p99 = 2000 }\noutput_tokens = { mean = 100, p99 = 400 }\n",
            WorkloadFormat::Toml,
        )
        .expect("the base workload parses")
    })
}

/// Token-length histograms (`input_tokens = { histogram = [...] }`): a
/// histogram the workload accepts has mean and p99 inside its buckets with
/// p99 >= mean, and the simulator (`simulate`, `plan --verify`) accepts it
/// too; a rejected one is named by field.
pub fn token_histogram(data: &[u8]) {
    let mut b = Bytes::new(data);
    let which = b.u8();
    let h = buckets(&mut b);
    let mut raw = base_workload().clone();
    if which & 1 == 0 {
        raw.traffic.output_tokens.histogram = Some(h.clone());
        raw.traffic.output_tokens.mean = None;
        raw.traffic.output_tokens.p99 = None;
    } else {
        raw.traffic.input_tokens.histogram = Some(h.clone());
        raw.traffic.input_tokens.mean = None;
        raw.traffic.input_tokens.p99 = None;
    }
    let w = match raw.clone().validate(fixtures::catalog(), None) {
        Err(e) => return assert_core_located(&e, "base.toml"),
        Ok(w) => w,
    };
    let stats = if which & 1 == 0 {
        w.output_tokens
    } else {
        w.input_tokens
    };
    let weighted: Vec<f64> = h.iter().filter(|x| x.1 > 0.0).map(|x| x.0).collect();
    let lo = weighted.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = weighted.iter().copied().fold(0.0, f64::max);
    assert!(stats.mean > 0.0 && stats.p99 >= stats.mean, "{stats:?}");
    assert!(
        stats.mean >= lo && stats.mean <= hi,
        "mean outside the buckets: {stats:?} {h:?}"
    );
    // The p99 is the 99th-percentile bucket, or the mean when that lies above it.
    assert!(
        stats.p99 == stats.mean || h.iter().any(|x| x.1 > 0.0 && x.0 == stats.p99),
        "p99 is neither a bucket nor the mean: {stats:?}"
    );
    check_workload(&raw, &w);
    let lengths = TokenLengths::histogram(&h)
        .unwrap_or_else(|e| panic!("the workload accepts {h:?} but the simulator does not: {e}"));
    let TokenLengths::Histogram { tokens, cumulative } = lengths else {
        panic!("a histogram")
    };
    assert!(tokens.windows(2).all(|w| w[0] <= w[1]));
    assert!(cumulative.windows(2).all(|w| w[0] <= w[1]));
}

/// The replica the traces are simulated on: llama-3.1-8b, FP8, one H100.
fn trace_replica() -> &'static (DeploymentCost, u64) {
    static REPLICA: OnceLock<(DeploymentCost, u64)> = OnceLock::new();
    REPLICA.get_or_init(|| {
        let c = fixtures::catalog();
        let model = c.model("llama-3.1-8b").expect("a bundled model");
        let gpu = c.gpu("H100").expect("a bundled GPU");
        let p = gpuplan_catalog::Precision::Fp8;
        let layout = gpuplan_core::Layout::SINGLE;
        let dep = gpuplan_core::Deployment::new(&model, gpu, layout, p, p, fixtures::calibration())
            .expect("a bundled replica");
        let memory = gpuplan_core::inference_memory(&gpuplan_core::InferenceMemoryInput {
            model: &model,
            gpu,
            layout,
            precision: p,
            kv_precision: p,
            context_len: 8192,
            limits: gpuplan_core::EngineLimits::default(),
        })
        .expect("a bundled replica's memory");
        (DeploymentCost::new(dep), memory.kv_cache_tokens)
    })
}

/// Traffic traces (`simulate --trace`): errors name the file, line and
/// column; a parsed trace is sorted with lengths in range, and a short one
/// simulates with every arrival accounted for and finite percentiles.
pub fn trace(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let t = match Trace::parse("trace.csv", text) {
        Err(SimError::TraceRow {
            file, line, field, ..
        }) => {
            assert_eq!(file, "trace.csv");
            assert!(line >= 1 && !field.is_empty());
            return;
        }
        Err(SimError::EmptyTrace { file }) => return assert_eq!(file, "trace.csv"),
        Err(other) => panic!("unexpected error: {other}"),
        Ok(t) => t,
    };
    let rows = t.rows();
    assert!(!rows.is_empty());
    for r in rows {
        assert_non_negative("timestamp_s", r.timestamp_s);
        assert!(SEQUENCE_TOKENS.contains(u64::from(r.input_tokens)));
        assert!(SEQUENCE_TOKENS.contains(u64::from(r.output_tokens)));
    }
    assert!(rows
        .windows(2)
        .all(|w| w[0].timestamp_s <= w[1].timestamp_s));
    let tokens: u64 = rows
        .iter()
        .map(|r| u64::from(r.input_tokens) + u64::from(r.output_tokens))
        .sum();
    if rows.len() > 64 || tokens > 100_000 {
        return;
    }
    let (cost, kv_cache_tokens) = trace_replica();
    let config = SimConfig {
        replicas: 1 + (rows.len() % 2) as u32,
        engine: EngineConfig {
            max_num_seqs: 16,
            max_batched_tokens: 2048,
            kv_cache_tokens: *kv_cache_tokens,
            block_tokens: VLLM_BLOCK_TOKENS,
            prompts: PromptSteps::BesideDecodes,
        },
        router: Router::LeastOutstanding,
        warmup_fraction: 0.1,
        slo: gpuplan_core::Slo::default(),
        usd_per_hour: Some(1.0),
        seed: 1,
        dynamics: gpuplan_sim::Dynamics::default(),
    };
    let result = simulate(cost, &config, &Traffic::Trace(t.clone()))
        .unwrap_or_else(|e| panic!("a parsed trace does not simulate: {e}"));
    assert_eq!(result.arrivals, rows.len() as u64);
    assert_eq!(
        result.arrivals,
        result.requests_completed + result.in_flight + result.rejected
    );
    assert_finite("simulation", &result);
}

/// The bundled calibration parses (a sanity check of the fixtures).
/// A training workload file (`kind = "training"`, TOML) through the CLI's
/// path: parse, validate against the small catalog, search. Errors name the
/// file and a line or the field; every plan found uses all its GPUs
/// (TP × PP × DP), fits in memory, takes at least its ideal time, costs what
/// its parts cost, and keeps the workload's deadline, budget and GPU limit.
pub fn training_toml(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let file = "t.toml";
    let raw: gpuplan_core::training::RawTrainingWorkload =
        match gpuplan_core::parse_document(file, text, WorkloadFormat::Toml) {
            Err(e) => return assert_core_located(&e, file),
            Ok(raw) => raw,
        };
    let w = match raw.validate(fixtures::catalog(), None) {
        Err(e) => return assert_core_located(&e, file),
        Ok(w) => w,
    };
    let factors = training_factors();
    let report =
        gpuplan_core::plan_training(fixtures::catalog(), &w, fixtures::calibration(), factors);
    assert_finite("training report", &report);
    for p in &report.plans {
        let layout_gpus = u64::from(p.tp) * u64::from(p.pp) * u64::from(p.dp);
        assert_eq!(p.gpus, layout_gpus, "TP·PP·DP = GPUs");
        assert_eq!(p.gpus, p.nodes * u64::from(p.gpus_per_node));
        assert!(p.gpus <= w.max_gpus && p.nodes <= w.max_nodes);
        assert!(p.peak_memory_gib <= p.gpu_memory_gib + 1e-9);
        assert!(p.time_to_train_hours >= p.ideal_hours * (1.0 - 1e-12));
        let parts = p.compute_usd + p.egress_usd.unwrap_or(0.0);
        assert!((p.total_cost_usd - parts).abs() <= 1e-6 * parts.max(1.0));
        assert_non_negative("total cost", p.total_cost_usd);
        if let Some(d) = w.deadline_hours {
            assert!(p.time_to_train_hours <= d);
        }
        if let Some(b) = w.max_usd {
            assert!(p.total_cost_usd <= b);
        }
        assert!(p.mfu > 0.0 && p.mfu < 1.5, "mfu {}", p.mfu);
    }
    if report.plans.is_empty() {
        assert!(
            report.hint.is_some(),
            "an infeasible search says what to relax"
        );
    }
}

fn training_factors() -> &'static gpuplan_core::training::TrainingFactors {
    static FACTORS: OnceLock<gpuplan_core::training::TrainingFactors> = OnceLock::new();
    FACTORS.get_or_init(gpuplan_core::training::TrainingFactors::bundled)
}

#[cfg(test)]
mod tests {
    #[test]
    fn bundled_calibration_passes() {
        super::calibration(gpuplan_core::BUNDLED_CALIBRATION.as_bytes());
    }
}
