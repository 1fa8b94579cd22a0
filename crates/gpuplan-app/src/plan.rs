//! Inference plans: the verified ranking `gpuplan plan` prints, the
//! derivation of one plan (`--explain N`), and latency-vs-load curves.

use crate::error::{AppError, AppResult};
use crate::sources::WorkloadInput;
use gpuplan_catalog::Catalog;
use gpuplan_core::{
    plan, plan_replica, Calibration, InferenceWorkload, Plan, PlanOptions, PlanReport, TailInputs,
    TailModel, Verification,
};
use gpuplan_sim::{verify_plans, Histograms, VerifyOptions, VERIFY_SEARCH_FACTOR};
use serde::Serialize;
use std::fmt::Write as _;

/// Appends one line to a String (writing to a String cannot fail).
macro_rules! line {
    ($out:expr) => {
        $out.push('\n')
    };
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Plans an inference workload and verifies the top plans by simulation
/// (`verify.top = 0` skips it); the report's plans are in verified order
/// and cut to `top`.
pub fn verified_plan(
    catalog: &Catalog,
    cal: &Calibration,
    input: &WorkloadInput,
    top: usize,
    verify: VerifyOptions,
) -> AppResult<(InferenceWorkload, PlanReport)> {
    let (w, raw) = input.inference(catalog)?;
    // Simulate a few more than shown, so plans that miss can be replaced.
    let mut report = plan(
        catalog,
        &w,
        cal,
        PlanOptions {
            top: top.max(verify.top * VERIFY_SEARCH_FACTOR),
        },
    );
    if verify.top > 0 && !report.plans.is_empty() {
        if let Err(why) = gpuplan_sim::check_simulable(&w) {
            report.verification = Some(Verification {
                simulated: 0,
                missed: 0,
                requests: verify.requests,
                skipped: Some(why.to_string()),
            });
            report.plans.truncate(top);
            return Ok((w, report));
        }
        let histograms = Histograms {
            input: raw.traffic.input_tokens.histogram.as_deref(),
            output: raw.traffic.output_tokens.histogram.as_deref(),
        };
        let missed = verify_plans(catalog, &w, cal, histograms, &mut report.plans, verify)?;
        let simulated = report
            .plans
            .iter()
            .filter(|p| p.simulated.is_some())
            .count();
        report.verification = Some(Verification {
            simulated,
            missed,
            requests: verify.requests,
            skipped: None,
        });
        sync_frontier_ranks(&mut report);
    }
    report.plans.truncate(top);
    Ok((w, report))
}

/// Frontier plans take the rank their twin has among the verified plans.
fn sync_frontier_ranks(report: &mut PlanReport) {
    let plans = &report.plans;
    for f in report.pareto.iter_mut() {
        let twin = plans.iter().find(|p| {
            p.provider == f.provider
                && p.region == f.region
                && p.instance_type == f.instance_type
                && p.launch_command == f.launch_command
                && p.spot == f.spot
        });
        f.rank = twin.map_or(0, |p| p.rank);
        f.simulated = twin.and_then(|p| p.simulated.clone());
    }
}

/// Plan `rank` of a report, or bad input naming `flag` and the valid range.
pub fn plan_by_rank<'a>(report: &'a PlanReport, rank: usize, flag: &str) -> AppResult<&'a Plan> {
    report.plans.iter().find(|p| p.rank == rank).ok_or_else(|| {
        AppError::bad_field(
            flag,
            format!(
                "{flag} {rank}: expected a plan number from 1 to {}",
                report.plans.len()
            ),
        )
    })
}

/// The workload in two lines: traffic and targets.
pub fn describe_workload(w: &InferenceWorkload) -> String {
    let slo = &w.slo;
    let mut targets = Vec::new();
    if let Some(t) = slo.ttft_ms_p99 {
        targets.push(format!("TTFT p99 ≤ {t} ms"));
    }
    if let Some(t) = slo.tpot_ms_p99 {
        targets.push(format!("TPOT p99 ≤ {t} ms"));
    }
    if let Some(t) = slo.e2e_ms_p99 {
        targets.push(format!("end-to-end p99 ≤ {t} ms"));
    }
    let targets = if targets.is_empty() {
        "no latency SLO: cheapest tokens per dollar".to_string()
    } else {
        targets.join(", ")
    };
    format!(
        "{} — {}: peak {} req/s (mean {}), input {:.0}/{:.0} tokens, output {:.0}/{:.0} (mean/p99)\nTargets: {targets}",
        w.name,
        w.model.id,
        short_rate(w.peak_requests_per_s),
        short_rate(w.mean_requests_per_s),
        w.input_tokens.mean,
        w.input_tokens.p99,
        w.output_tokens.mean,
        w.output_tokens.p99
    )
}

/// A request rate as a person writes it: three decimals (three significant
/// digits below 1), no trailing zeros (20, 0.5, 1206.912, 0.000123).
fn short_rate(requests_per_s: f64) -> String {
    // Below 1 req/s keep three significant digits (0.0004, not 0).
    let decimals = if requests_per_s > 0.0 && requests_per_s < 1.0 {
        (2.0 - requests_per_s.log10().floor()).clamp(3.0, 12.0) as usize
    } else {
        3
    };
    let text = format!("{requests_per_s:.decimals$}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// The derivation of one plan, as `gpuplan plan W --explain N` prints it.
pub fn explain_text(w: &InferenceWorkload, p: &Plan) -> String {
    let mut out = String::new();
    explain_replica(&mut out, w, p);
    explain_performance(&mut out, w, p);
    explain_queueing(&mut out, p);
    explain_cost(&mut out, w, p);
    explain_engine(&mut out, p);
    out
}

/// The plan, the workload, the replica and its memory.
fn explain_replica(out: &mut String, w: &InferenceWorkload, p: &Plan) {
    let d = &p.derivation;
    line!(
        *out,
        "Plan {}: {} {} ({}), {} × {}{}",
        p.rank,
        p.provider,
        p.region,
        p.location,
        p.instances,
        p.instance_type,
        if p.spot { " spot" } else { "" }
    );
    line!(*out, "{}", describe_workload(w));
    line!(*out);
    line!(
        *out,
        "Replica: {} × {} (TP{} × PP{}), {} weights, {} KV cache, batch cap {} sequences.",
        p.gpus_per_replica,
        p.gpu,
        p.tp,
        p.pp,
        p.precision,
        p.kv_precision,
        p.max_num_seqs
    );
    line!(
        *out,
        "Memory per GPU (engine budget = {:.0}% of the GPU):",
        p.memory_utilization * 100.0
    );
    let m = &d.memory;
    line!(*out, "  weights {:.2} GiB + activation workspace {:.2} GiB + runtime {:.2} GiB + KV cache {:.2} GiB = {:.2} GiB", m.weights_gib, m.activations_gib, m.overhead_gib, m.kv_cache_gib, m.total_gib);
    line!(*out, "  KV cache holds {} tokens per replica = {} requests of mean length; the engine admits at most {}.", d.kv_cache_tokens, d.kv_sequences, p.max_num_seqs);
    line!(*out);
}

/// A full batch's iteration, a request's service time and the capacity.
fn explain_performance(out: &mut String, w: &InferenceWorkload, p: &Plan) {
    let d = &p.derivation;
    line!(
        *out,
        "Performance (per replica, at a full batch of {}):",
        p.max_num_seqs
    );
    line!(
        *out,
        "  iteration {:.2} ms, decode bound by {}, prefill bound by {}",
        d.iteration_ms_full_batch,
        d.decode_bound.label(),
        d.prefill_bound.label()
    );
    line!(
        *out,
        "  request service time {:.2} s → at most {:.2} req/s per replica",
        d.service_s,
        d.max_requests_per_s_per_replica
    );
    line!(
        *out,
        "  capacity within the SLO and {:.0}% utilisation cap: {:.2} req/s per replica",
        w.constraints.max_utilization * 100.0,
        d.capacity_requests_per_s_per_replica
    );
    line!(*out);
}

/// The waits at peak and the tails they make.
fn explain_queueing(out: &mut String, p: &Plan) {
    let d = &p.derivation;
    line!(
        *out,
        "Queueing at peak ({:.2} req/s per replica, c_a² = {:.2}; the router pools the slots of {} replica(s)):",
        d.peak_requests_per_s_per_replica,
        d.ca2,
        p.replicas
    );
    line!(*out,
        "  batch slots: G/G/c with c = {} × {}, output c_v² = {:.2}: P(wait) = {:.3} (Erlang C; Hayward's c/z servers for burstiness), p99 wait {:.0} ms (drained at a full batch's pace)",
        p.replicas, p.max_num_seqs, d.cs2, d.p_wait_at_peak, d.queue_wait_ms_p99
    );
    line!(*out,
        "  prefill compute: {:.0}% busy; prompts wait {:.0} ms on average, {:.0} ms at p99 (G/G/1, Allen–Cunneen; the router spreads each burst over the replicas in turn)",
        d.prefill_utilization * 100.0,
        d.prefill_wait_ms_mean,
        d.prefill_wait_ms_p99
    );
    line!(
        *out,
        "  own prefill beside the decodes: {:.0} ms (mean prompt), {:.0} ms (p99 prompt); prompts batched with it add {:.0} ms",
        d.prefill_ms_mean,
        d.prefill_ms_p99,
        d.co_batched_prefill_ms
    );
    line!(
        *out,
        "  TTFT p99 = slot wait + mean prefill wait + mean prefill + batched prompts + combined spread = {:.0} ms",
        p.ttft_ms_p99
    );
    line!(*out,
        "  TPOT: {:.1} ms mean; p99 {:.1} ms over requests (prompts arriving during a request's life slow its tokens); p99 gap between tokens {:.1} ms",
        d.tpot_ms_mean, p.tpot_ms_p99, p.itl_ms_p99
    );
    line!(
        *out,
        "  end-to-end p99 = TTFT p99 + (p99 output − 1) × mean TPOT = {:.0} ms; utilisation {:.0}%",
        p.e2e_ms_p99,
        p.utilization * 100.0
    );
    if let Some(s) = &p.simulated {
        line!(*out,
            "  simulated at peak ({} requests, seed {}): TTFT p99 {:.0} ms, TPOT p99 {:.1} ms, inter-token p99 {:.0} ms, end-to-end p99 {:.0} ms, goodput {:.1}% — {}",
            s.requests,
            s.seed,
            s.ttft_ms_p99,
            s.tpot_ms_p99,
            s.itl_ms_p99,
            s.e2e_ms_p99,
            s.goodput * 100.0,
            if s.meets_slo { "meets every SLO" } else { "MISSES an SLO" }
        );
    }
    line!(*out);
}

/// Replicas, instances and what they cost.
fn explain_cost(out: &mut String, w: &InferenceWorkload, p: &Plan) {
    let d = &p.derivation;
    line!(*out, "Cost:");
    line!(*out,
        "  replicas = max(min_replicas {}, fewest that meet the SLO together at peak {} behind the router: {}), filled up to whole instances = {} (each alone: ceil(peak / capacity) = {})",
        w.constraints.min_replicas, w.peak_requests_per_s, d.replicas_for_peak, p.replicas, d.replicas_for_peak_alone
    );
    line!(*out,
        "  instances = {} ({} GPU(s) each, {} GPU(s) per replica); every whole replica the instances hold is run",
        p.instances, p.gpus_per_instance, p.gpus_per_replica
    );
    if p.idle_gpus > 0 {
        line!(
            out,
            "  {} billed GPU(s) idle: a {}-GPU replica does not divide a {}-GPU instance",
            p.idle_gpus,
            p.gpus_per_replica,
            p.gpus_per_instance
        );
    }
    line!(
        *out,
        "  ${:.4}/instance-hour list × {} × (1 − discount {:.0}%) = ${:.2}/hour",
        d.list_usd_per_instance_hour,
        p.instances,
        d.discount * 100.0,
        p.usd_per_hour
    );
    if let (Some(rate), Some(loss)) = (d.spot_preemptions_per_hour, d.spot_capacity_loss) {
        line!(*out, "  spot: {rate} expected preemptions per instance-hour; {:.2}% of capacity lost to replacements is covered by extra replicas", loss * 100.0);
    }
    line!(
        *out,
        "  $/1M output tokens: {:.3} at peak, {:.3} at mean load ({} req/s)",
        p.usd_per_million_output_tokens,
        p.usd_per_million_output_tokens_at_mean,
        w.mean_requests_per_s
    );
    for flag in &p.price_flags {
        line!(*out, "  price flagged ({}): {}", flag.kind, flag.reason);
    }
    line!(
        *out,
        "  price: {} ({})",
        p.price_source,
        p.price_date
            .as_deref()
            .map(|d| format!("read {d}"))
            .unwrap_or_else(|| "the source gives no date".into())
    );
    line!(*out);
}

/// The engine, its checkpoint and its launch command.
fn explain_engine(out: &mut String, p: &Plan) {
    line!(*out, "Serving-engine settings (one replica):");
    line!(
        *out,
        "  engine {}, checkpoint {}, weight kernel {} ({} ≥ {})",
        p.engine.label(),
        p.checkpoint,
        p.weight_kernel,
        p.engine.label(),
        p.min_engine_version
    );
    line!(*out, "  {}", p.launch_command);
    for file in &p.launch_files {
        line!(*out, "  with {}:", file.path);
        for l in file.contents.lines() {
            line!(*out, "    {l}");
        }
    }
    for note in &p.launch_notes {
        line!(*out, "  note: {note}");
    }
}

/// Points of a latency-vs-load curve, from light load to capacity.
pub const CURVE_POINTS: usize = 24;

/// One point of a plan's latency-vs-load curve.
#[derive(Debug, Clone, Serialize)]
pub struct LoadPoint {
    /// Arrival rate over all the plan's replicas, requests/s.
    pub requests_per_s: f64,
    /// Share of the replicas' throughput that rate uses.
    pub utilization: f64,
    /// p99 time to first token, ms.
    pub ttft_ms_p99: f64,
    /// p99 time per output token, ms.
    pub tpot_ms_p99: f64,
    /// p99 end-to-end latency, ms.
    pub e2e_ms_p99: f64,
}

/// The SLO the curves are drawn against (p99, ms).
#[derive(Debug, Clone, Serialize)]
pub struct CurveSlo {
    /// TTFT target.
    pub ttft_ms_p99: Option<f64>,
    /// TPOT target.
    pub tpot_ms_p99: Option<f64>,
    /// End-to-end target.
    pub e2e_ms_p99: Option<f64>,
}

/// A plan's predicted p99 latencies as the arrival rate rises.
#[derive(Debug, Clone, Serialize)]
pub struct LoadCurve {
    /// The plan's rank.
    pub rank: usize,
    /// Provider, instance, GPU and split, for a legend.
    pub label: String,
    /// Replicas the rate is spread over.
    pub replicas: u32,
    /// Requests/s the plan serves within the SLO (per-replica capacity × replicas).
    pub capacity_requests_per_s: f64,
    /// Requests/s at which the replicas are saturated.
    pub max_requests_per_s: f64,
    /// The targets.
    pub slo: CurveSlo,
    /// From 5% of the saturation rate to just below it.
    pub points: Vec<LoadPoint>,
}

/// The `/v1/plan/curves` document.
#[derive(Debug, Clone, Serialize)]
pub struct LoadCurves {
    /// One curve per plan, in rank order.
    pub curves: Vec<LoadCurve>,
}

/// Latency-vs-load curves of the first `top` plans: each plan's replica
/// rebuilt as the planner built it, and the analytical tail model (the one
/// that sized the plan) evaluated at rising arrival rates.
pub fn load_curves(
    catalog: &Catalog,
    cal: &Calibration,
    w: &InferenceWorkload,
    report: &PlanReport,
    top: usize,
) -> AppResult<LoadCurves> {
    let mut curves = Vec::new();
    for p in report.plans.iter().take(top) {
        curves.push(load_curve(catalog, cal, w, p)?);
    }
    Ok(LoadCurves { curves })
}

/// One plan's curve.
fn load_curve(
    catalog: &Catalog,
    cal: &Calibration,
    w: &InferenceWorkload,
    p: &Plan,
) -> AppResult<LoadCurve> {
    let replica = plan_replica(catalog, w, cal, p)?;
    let d = &p.derivation;
    let model = TailModel::new(
        &replica.deployment,
        TailInputs {
            input_mean: w.input_tokens.mean,
            input_p99: w.input_tokens.p99,
            output_mean: w.output_tokens.mean,
            output_p99: w.output_tokens.p99,
            batch: p.max_num_seqs as f64,
            max_batched_tokens: p.max_batched_tokens as f64,
            service_s: d.service_s,
            ca2: d.ca2,
            slot_pool_replicas: f64::from(p.replicas),
            cs2: d.cs2,
        },
    );
    let replicas = f64::from(p.replicas);
    let saturation = d.max_requests_per_s_per_replica;
    let points = (1..=CURVE_POINTS)
        .map(|i| {
            // Evenly from 5% to 98% of the saturation rate (the queue diverges at 100%).
            let share = 0.05 + 0.93 * (i - 1) as f64 / (CURVE_POINTS - 1) as f64;
            let lambda = saturation * share;
            let t = model.at(lambda);
            LoadPoint {
                requests_per_s: lambda * replicas,
                utilization: share,
                ttft_ms_p99: t.ttft_p99_s * 1e3,
                tpot_ms_p99: t.tpot_p99_ms,
                e2e_ms_p99: t.e2e_p99_s * 1e3,
            }
        })
        .filter(|pt| {
            pt.ttft_ms_p99.is_finite() && pt.tpot_ms_p99.is_finite() && pt.e2e_ms_p99.is_finite()
        })
        .collect();
    Ok(LoadCurve {
        rank: p.rank,
        label: format!(
            "{} {} × {}, {} × {} TP{}",
            p.provider, p.instance_type, p.instances, p.gpu, p.gpus_per_replica, p.tp
        ),
        replicas: p.replicas,
        capacity_requests_per_s: d.capacity_requests_per_s_per_replica * replicas,
        max_requests_per_s: saturation * replicas,
        slo: CurveSlo {
            ttft_ms_p99: w.slo.ttft_ms_p99,
            tpot_ms_p99: w.slo.tpot_ms_p99,
            e2e_ms_p99: w.slo.e2e_ms_p99,
        },
        points,
    })
}

/// `plan --top` / `--explain` / `--plan`: a plan number.
pub const PLAN_RANKS: gpuplan_core::limits::Count = gpuplan_core::limits::Count::new(1, 100_000);
/// `plan --verify`: plans simulated, 0 (none) to 100.
pub const VERIFY_PLANS: gpuplan_core::limits::Count = gpuplan_core::limits::Count::new(0, 100);
/// `plan --verify-requests`: 1,000 (enough for a p99) to 10^7 requests.
pub const VERIFY_REQUESTS: gpuplan_core::limits::Count =
    gpuplan_core::limits::Count::new(1_000, 10_000_000);

fn default_top() -> usize {
    crate::DEFAULT_TOP
}
fn default_verify() -> usize {
    crate::DEFAULT_VERIFY_PLANS
}
fn default_verify_requests() -> u64 {
    crate::DEFAULT_VERIFY_REQUESTS
}

/// How many plans `plan` shows and simulates (the CLI's `--top`,
/// `--verify`, `--verify-requests`; the API's query parameters).
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanSettings {
    /// Plans shown.
    #[serde(default = "default_top")]
    pub top: usize,
    /// Plans simulated at peak (0 = none).
    #[serde(default = "default_verify")]
    pub verify: usize,
    /// Requests per simulation.
    #[serde(default = "default_verify_requests")]
    pub verify_requests: u64,
}

impl Default for PlanSettings {
    fn default() -> Self {
        PlanSettings {
            top: crate::DEFAULT_TOP,
            verify: crate::DEFAULT_VERIFY_PLANS,
            verify_requests: crate::DEFAULT_VERIFY_REQUESTS,
        }
    }
}

impl PlanSettings {
    /// Range checks, naming the setting.
    pub fn check(&self) -> AppResult<()> {
        crate::replica::check_count("top", self.top as u64, PLAN_RANKS)?;
        crate::replica::check_count("verify", self.verify as u64, VERIFY_PLANS)?;
        crate::replica::check_count("verify_requests", self.verify_requests, VERIFY_REQUESTS)
    }

    /// The simulation settings (seed 1, as the CLI).
    pub fn verify_options(&self) -> VerifyOptions {
        VerifyOptions {
            top: self.verify,
            requests: self.verify_requests,
            seed: 1,
        }
    }
}

/// A planned workload of either kind, with the JSON document `plan --json` prints.
#[derive(Debug, Clone)]
pub enum PlanDocument {
    /// An inference workload and its verified ranking.
    Inference(Box<(InferenceWorkload, gpuplan_core::PlanReport)>),
    /// A training workload and its plans.
    Training(
        Box<(
            gpuplan_core::training::TrainingWorkload,
            gpuplan_core::TrainingReport,
        )>,
    ),
    /// An image-generation, speech-to-text or embedding service and its plans.
    Service(
        Box<(
            gpuplan_core::nonllm::NonLlmWorkload,
            gpuplan_core::nonllm::NonLlmPlanReport,
        )>,
    ),
}

impl PlanDocument {
    /// Whether no plan is feasible.
    pub fn is_empty(&self) -> bool {
        match self {
            PlanDocument::Inference(b) => b.1.plans.is_empty(),
            PlanDocument::Training(b) => b.1.plans.is_empty(),
            PlanDocument::Service(b) => b.1.plans.is_empty(),
        }
    }

    /// The hint for an infeasible workload.
    pub fn hint(&self) -> Option<&str> {
        match self {
            PlanDocument::Inference(b) => b.1.hint.as_deref(),
            PlanDocument::Training(b) => b.1.hint.as_deref(),
            PlanDocument::Service(_) => None,
        }
    }

    /// The report as `gpuplan plan --json` prints it.
    pub fn to_json(&self) -> AppResult<String> {
        match self {
            PlanDocument::Inference(b) => crate::to_json(&b.1),
            PlanDocument::Training(b) => crate::to_json(&b.1),
            PlanDocument::Service(b) => crate::to_json(&b.1),
        }
    }
}

/// Plans a workload of either kind (`kind = "inference"` or `"training"`);
/// a fleet is bad input naming the operation that takes it.
pub fn plan_document(
    catalog: &Catalog,
    cal: &Calibration,
    training: &gpuplan_core::training::TrainingFactors,
    input: &WorkloadInput,
    settings: PlanSettings,
) -> AppResult<PlanDocument> {
    settings.check()?;
    if let Some(service) = service_document(catalog, cal, input, settings.top)? {
        return Ok(service);
    }
    match input.kind().as_deref() {
        Some("training") => {
            let w = input.training(catalog)?;
            let report = gpuplan_core::plan_training(catalog, &w, cal, training);
            Ok(PlanDocument::Training(Box::new((w, report))))
        }
        Some("fleet") => Err(AppError::bad_field(
            "kind",
            format!(
                "{}: kind = \"fleet\": plans take inference or training workloads; a fleet is packed by `gpuplan mig FLEET` (the CLI only, for now)",
                input.name
            ),
        )),
        _ => {
            let (w, report) =
                verified_plan(catalog, cal, input, settings.top, settings.verify_options())?;
            Ok(PlanDocument::Inference(Box::new((w, report))))
        }
    }
}

/// The plans of an image-generation, speech-to-text or embedding service
/// (a workload whose `model.id` is a non-LLM model), or `None` for an LLM.
fn service_document(
    catalog: &Catalog,
    cal: &Calibration,
    input: &WorkloadInput,
    top: usize,
) -> AppResult<Option<PlanDocument>> {
    if gpuplan_core::nonllm::nonllm_model_of(&input.text, input.format).is_none() {
        return Ok(None);
    }
    let w = gpuplan_core::nonllm::parse_nonllm_workload(
        &input.name,
        &input.text,
        input.format,
        catalog,
    )
    .map_err(|e| {
        // Syntax errors already name the document; the rest get its name.
        let msg = e.to_string();
        let msg = if msg.starts_with(&input.name) {
            msg
        } else {
            format!("{}: {msg}", input.name)
        };
        AppError::bad(msg)
    })?;
    let report = gpuplan_core::nonllm::plan_nonllm(catalog, &w, cal, top);
    Ok(Some(PlanDocument::Service(Box::new((w, report)))))
}

/// Bad input for an operation that covers LLM plans only, naming the service's model.
pub fn llm_only(report: &gpuplan_core::nonllm::NonLlmPlanReport, what: &str) -> AppError {
    AppError::bad_field(
        "model.id",
        format!(
            "model `{}` is a {} model: {what} cover LLM engines only; plan it with POST /v1/plan (gpuplan plan)",
            report.model,
            report.family.as_str()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::short_rate;

    #[test]
    fn rates_print_short_and_never_as_zero() {
        assert_eq!(short_rate(20.0), "20");
        assert_eq!(short_rate(0.5), "0.5");
        assert_eq!(short_rate(2413.823910680342), "2413.824");
        assert_eq!(short_rate(0.000_123_456), "0.000123");
        assert_eq!(short_rate(0.25), "0.25");
    }
}
