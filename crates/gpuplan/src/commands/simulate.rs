//! `gpuplan simulate`: replays plan N of a workload in the discrete-event
//! simulator and sets its analytical p99s beside the simulated ones.

use super::fit::{check, flag_spelling, replica_layout, resolve_replica};
use super::{check_finite, print_json, table};
use crate::cli::{ReplicaArgs, RouterArg, SimulateCmd};
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_app::{
    build_traffic, dynamics, prepare_plan_simulation, PlanSimulation, PlanSimulationSetup,
    RateCurveSetting, SimulateSettings, WorkloadInput,
};
use gpuplan_catalog::Catalog;
use gpuplan_core::{
    inference_memory, EngineLimits, InferenceWorkload, Plan, PlanReport, ReplicaSpec, Slo, Spelling,
};
use gpuplan_sim::{
    simulate_with_progress, ArrivalProcess, DeploymentCost, EngineConfig, Histograms, Percentiles,
    Progress, PromptSteps, RateCurve, Router, SimConfig, SimResult, Stop, TimePoint, Trace,
    Traffic,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub fn run(catalog: &Catalog, cmd: SimulateCmd) -> CliResult {
    let cal = load::calibration(cmd.calibration.as_deref())?;
    load::expect_kind(&cmd.workload, "simulate", &["inference"])?;
    load::reject_nonllm(&cmd.workload, "simulate")?;
    let settings = settings(&cmd)?;
    if cmd.gpu.is_some() {
        let (w, raw) = load::workload_with_raw(catalog, &cmd.workload)?;
        let histograms = Histograms {
            input: raw.traffic.input_tokens.histogram.as_deref(),
            output: raw.traffic.output_tokens.histogram.as_deref(),
        };
        return run_deployment(catalog, &cal, &w, histograms, &cmd, &settings);
    }
    let input = WorkloadInput::from_file(&cmd.workload)?;
    let sim = match prepare_plan_simulation(catalog, &cal, &input, cmd.plan, &settings)? {
        PlanSimulationSetup::Ready(sim) => sim,
        PlanSimulationSetup::Infeasible(b) => {
            print_infeasible(&b.0, &b.1);
            return Err(CliError::Infeasible);
        }
    };
    let PlanSimulation {
        workload: w,
        plan: p,
        config,
        traffic,
        deployment,
    } = *sim;
    let title = format!(
        "Plan {} of {}: {} {} {}, {} replica(s) of {} × {} (TP{}/PP{}), {} weights, {} KV cache",
        p.rank,
        w.name,
        p.provider,
        p.region,
        p.instance_type,
        p.replicas,
        p.gpus_per_replica,
        p.gpu,
        p.tp,
        p.pp,
        p.precision,
        p.kv_precision
    );
    let subject = Subject {
        title,
        plan: Some(&p),
    };
    simulate_and_print(&cmd, &w, subject, deployment, &config, &traffic)
}

/// The façade's settings from the flags, with the trace and rate-curve files read.
fn settings(cmd: &SimulateCmd) -> CliResult<SimulateSettings> {
    let trace = match &cmd.trace {
        None => None,
        Some(path) => {
            let name = path.display().to_string();
            Some(Trace::parse(&name, &load::read(path)?)?)
        }
    };
    let rate_curve = match cmd.rate_curve.as_deref() {
        None => None,
        Some("diurnal") => Some(RateCurveSetting::Diurnal),
        Some(file) => {
            let path = std::path::Path::new(file);
            Some(RateCurveSetting::Table(RateCurve::parse(
                file,
                &load::read(path)?,
            )?))
        }
    };
    Ok(SimulateSettings {
        requests: cmd.requests,
        duration: cmd.duration,
        seed: cmd.seed,
        warmup: cmd.warmup,
        router: router(cmd.router),
        rate_curve,
        trace,
        users: cmd.users,
        think_time: cmd.think_time,
        autoscale: cmd.autoscale,
        min_replicas: cmd.min_replicas,
        max_replicas: cmd.max_replicas,
        target_outstanding: cmd.target_outstanding,
        scale_up_delay: cmd.scale_up_delay,
        cooldown: cmd.cooldown,
        failures_per_hour: cmd.failures_per_hour,
        replacement_delay: cmd.replacement_delay,
        request_timeout: cmd.request_timeout,
        sample_every: cmd.timeseries.is_some().then_some(cmd.sample_every),
    })
}

/// What is simulated: a plan (its analytical p99s are shown beside the
/// simulated ones) or a deployment given by flags.
struct Subject<'a> {
    title: String,
    plan: Option<&'a Plan>,
}

/// `simulate --gpu …`: the given deployment serving the workload's model.
/// The simulation of a `--gpu` deployment: `cmd`'s replicas, router, seed
/// and dynamics, the workload's SLO. Without a plan, the autoscaler aims at
/// 80 % of the batch cap per replica.
fn deployment_sim_config(
    cmd: &SimulateCmd,
    w: &InferenceWorkload,
    settings: &SimulateSettings,
    engine: EngineConfig,
    weights_gib: f64,
) -> SimConfig {
    let target = 0.8 * cmd.max_num_seqs as f64;
    SimConfig {
        replicas: cmd.replicas,
        engine,
        router: router(cmd.router),
        warmup_fraction: cmd.warmup,
        slo: w.slo,
        usd_per_hour: cmd.usd_per_hour,
        seed: cmd.seed,
        dynamics: dynamics(settings, w, None, (target, cmd.replicas), weights_gib),
    }
}

fn run_deployment(
    catalog: &Catalog,
    cal: &gpuplan_core::Calibration,
    w: &InferenceWorkload,
    histograms: Histograms<'_>,
    cmd: &SimulateCmd,
    settings: &SimulateSettings,
) -> CliResult {
    let args = ReplicaArgs {
        gpu: cmd.gpu.clone().unwrap_or_default(),
        count: cmd.count,
        tp: cmd.tp,
        pp: cmd.pp,
        precision: cmd.precision.clone(),
        kv_precision: cmd.kv_precision.clone(),
        variant: w.variant,
        engine: w.engines[0],
    };
    let (gpu, precision, kv_precision) = resolve_replica(catalog, &args)?;
    let layout = replica_layout(args.count, args.tp, args.pp)?;
    // The replica must hold the p99 prompt with the p99 answer.
    let context_len = (w.input_tokens.p99 + w.output_tokens.p99).ceil() as u64;
    let spec = ReplicaSpec {
        model: &w.model,
        gpu,
        precision,
        kv_precision,
        layout,
        limits: EngineLimits {
            memory_utilization: cmd.memory_utilization,
            max_batched_tokens: cmd.max_batched_tokens,
            max_num_seqs: cmd.max_num_seqs,
        },
        context_len,
        engine: w.engines[0],
        spelling: Spelling {
            context: "the workload's p99 input + p99 output tokens",
            ..flag_spelling(&args)
        },
    };
    let checked = check(catalog, &spec, w.variant)?;
    let memory = inference_memory(&checked.memory_input())?;
    if !memory.fits {
        println!(
            "DOES NOT FIT: {} (the replica must hold the p99 prompt and answer, {context_len} tokens)",
            memory.reason.unwrap_or_default()
        );
        return Err(CliError::Infeasible);
    }
    let deployment = checked.deployment(cal)?;
    let traffic = build_traffic(settings, w, histograms)?;
    let engine = engine_config(cmd, w, memory.kv_cache_tokens)?;
    let config = deployment_sim_config(cmd, w, settings, engine, memory.per_gpu.weights_gib);
    let title = format!(
        "Deployment for {}: {} replica(s) of {} × {} (TP{}/PP{}), {} weights, {} KV cache",
        w.name,
        cmd.replicas,
        layout.tp * layout.pp,
        gpu.name,
        layout.tp,
        layout.pp,
        precision,
        kv_precision
    );
    let subject = Subject { title, plan: None };
    simulate_and_print(cmd, w, subject, deployment, &config, &traffic)
}

/// The engine of `simulate --gpu …`: the command's batch cap and token
/// budget, the KV cache the memory model leaves, the workload's engine's
/// block size and prompt policy.
fn engine_config(
    cmd: &SimulateCmd,
    w: &InferenceWorkload,
    kv_cache_tokens: u64,
) -> Result<EngineConfig, CliError> {
    let narrow = |field: &str, v: u64| {
        u32::try_from(v)
            .map_err(|_| CliError::bad(format!("{field} {v}: expected at most 2^32 − 1")))
    };
    Ok(EngineConfig {
        max_num_seqs: narrow("--max-num-seqs", cmd.max_num_seqs)?,
        max_batched_tokens: narrow("--max-batched-tokens", cmd.max_batched_tokens)?,
        kv_cache_tokens,
        block_tokens: narrow("kv_block_tokens", w.engines[0].profile().kv_block_tokens)?,
        prompts: PromptSteps::of(w.engines[0]),
    })
}

/// Runs the simulation and prints (or writes) what it found.
fn simulate_and_print(
    cmd: &SimulateCmd,
    w: &InferenceWorkload,
    subject: Subject<'_>,
    deployment: gpuplan_core::Deployment,
    config: &SimConfig,
    traffic: &Traffic,
) -> CliResult {
    let cost = DeploymentCost::new(deployment);
    let result =
        with_progress_bar(|report| simulate_with_progress(&cost, config, traffic, report))?;
    if let Some(path) = &cmd.timeseries {
        write_timeseries(path, &result.timeseries)?;
    }
    if cmd.json {
        return print_json(&result);
    }
    check_finite(&result)?;
    print_human(w, &subject, config, traffic, &result);
    if let Some(path) = &cmd.timeseries {
        println!(
            "Time series: {} rows every {} s in {}.",
            result.timeseries.len(),
            cmd.sample_every,
            path.display()
        );
    }
    Ok(())
}

fn router(arg: RouterArg) -> Router {
    match arg {
        RouterArg::LeastOutstanding => Router::LeastOutstanding,
        RouterArg::RoundRobin => Router::RoundRobin,
        RouterArg::LeastKv => Router::LeastKv,
    }
}

/// Writes the time series as CSV, one row per sample.
fn write_timeseries(path: &std::path::Path, rows: &[TimePoint]) -> CliResult {
    let io =
        |e: &dyn std::fmt::Display| CliError::bad(format!("{}: cannot write: {e}", path.display()));
    let mut out = csv::Writer::from_path(path).map_err(|e| io(&e))?;
    for row in rows {
        out.serialize(row).map_err(|e| io(&e))?;
    }
    out.flush().map_err(|e| io(&e))
}

/// Runs `f` with a progress bar on stderr (drawn only when stderr is a
/// terminal, so pipes and `--json` stay clean).
fn with_progress_bar<T>(f: impl FnOnce(&mut dyn FnMut(Progress)) -> T) -> T {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("simulating {wide_bar} {pos}/{len} requests, {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    let result = f(&mut |p: Progress| {
        if let Some(total) = p.total_arrivals {
            bar.set_length(total);
        }
        bar.set_position(p.arrivals);
        bar.set_message(format!("{:.0} s simulated", p.simulated_s));
    });
    bar.finish_and_clear();
    result
}

/// Nothing to simulate: the planner's reasons, as `plan` gives them.
fn print_infeasible(w: &InferenceWorkload, r: &PlanReport) {
    println!(
        "No feasible plan for {} ({}): nothing to simulate.",
        w.name, w.model.id
    );
    println!("{}", super::plan::rejection_table(r));
    if let Some(h) = &r.hint {
        println!("Hint: {h}.");
    }
}

fn describe_traffic(w: &InferenceWorkload, traffic: &Traffic) -> String {
    match traffic {
        Traffic::Trace(t) => format!("trace {} ({} requests)", t.name(), t.rows().len()),
        Traffic::Synthetic(s) => {
            let amount = match s.stop {
                Stop::Requests(n) => format!("{n} requests"),
                Stop::Duration(d) => format!("{d} s of arrivals"),
            };
            let arrival = match s.arrival {
                ArrivalProcess::Poisson => "Poisson".to_string(),
                ArrivalProcess::Gamma { cv } => format!("Gamma cv {cv}"),
            };
            if let Some(c) = s.clients {
                return format!(
                    "{amount} from {} closed-loop users thinking {} s on average, input {:.0}/{:.0} and output {:.0}/{:.0} tokens (mean/p99)",
                    c.users,
                    c.think_time_s,
                    w.input_tokens.mean,
                    w.input_tokens.p99,
                    w.output_tokens.mean,
                    w.output_tokens.p99
                );
            }
            let rate = match &s.rate_curve {
                Some(c) => format!("a rate curve peaking at {:.2} req/s", c.peak()),
                None => format!("the peak {} req/s", w.peak_requests_per_s),
            };
            format!(
                "{amount} at {rate}, {arrival} arrivals, input {:.0}/{:.0} and output {:.0}/{:.0} tokens (mean/p99)",
                w.input_tokens.mean,
                w.input_tokens.p99,
                w.output_tokens.mean,
                w.output_tokens.p99
            )
        }
    }
}

fn slo_cell(limit: Option<f64>) -> String {
    limit
        .map(|l| format!("{l} ms"))
        .unwrap_or_else(|| "–".into())
}

fn describe_slo(slo: &Slo) -> String {
    let mut parts = Vec::new();
    for (name, limit) in [
        ("TTFT", slo.ttft_ms_p99),
        ("TPOT", slo.tpot_ms_p99),
        ("end-to-end", slo.e2e_ms_p99),
    ] {
        if let Some(l) = limit {
            parts.push(format!("{name} ≤ {l} ms"));
        }
    }
    if parts.is_empty() {
        "no SLO: every completed request counts".into()
    } else {
        parts.join(", ")
    }
}

fn print_human(
    w: &InferenceWorkload,
    subject: &Subject<'_>,
    config: &SimConfig,
    traffic: &Traffic,
    r: &SimResult,
) {
    println!("{}", subject.title);
    println!(
        "Engine per replica: max_num_seqs {}, max_batched_tokens {}, KV cache {} tokens ({}-token blocks).",
        config.engine.max_num_seqs,
        config.engine.max_batched_tokens,
        config.engine.kv_cache_tokens,
        config.engine.block_tokens
    );
    println!(
        "Traffic: {}; seed {}, warm-up {:.0}% left out, router {}.",
        describe_traffic(w, traffic),
        config.seed,
        config.warmup_fraction * 100.0,
        match config.router {
            Router::LeastOutstanding => "least-outstanding",
            Router::RoundRobin => "round-robin",
            Router::LeastKv => "least-kv",
        }
    );
    if let Some(p) = subject.plan {
        print_comparison(w, p, r);
    }
    println!();
    println!("Simulated latencies, ms:");
    let mut t = table(&["", "mean", "p50", "p90", "p99", "p99.9", "samples"]);
    for (name, s) in [
        ("TTFT", &r.ttft_ms),
        ("TPOT (per request)", &r.tpot_ms),
        ("inter-token gap", &r.itl_ms),
        ("end-to-end", &r.e2e_ms),
        ("queueing", &r.queue_ms),
    ] {
        t.add_row(percentile_row(name, s));
    }
    println!("{t}");
    print_outcome(w, config, r);
}

/// The plan's analytical p99s beside the simulated ones.
fn print_comparison(w: &InferenceWorkload, p: &Plan, r: &SimResult) {
    println!();
    println!("Analytical (plan) vs simulated, at peak:");
    let mut t = table(&["", "SLO", "plan", "simulated"]);
    t.add_row(vec![
        "TTFT p99".to_string(),
        slo_cell(w.slo.ttft_ms_p99),
        format!("{:.0} ms", p.ttft_ms_p99),
        format!("{:.0} ms", r.ttft_ms.p99),
    ]);
    t.add_row(vec![
        "TPOT p99".to_string(),
        slo_cell(w.slo.tpot_ms_p99),
        format!("{:.1} ms", p.tpot_ms_p99),
        format!("{:.1} ms", r.tpot_ms.p99),
    ]);
    t.add_row(vec![
        "end-to-end p99".to_string(),
        slo_cell(w.slo.e2e_ms_p99),
        format!("{:.0} ms", p.e2e_ms_p99),
        format!("{:.0} ms", r.e2e_ms.p99),
    ]);
    t.add_row(vec![
        "utilisation".to_string(),
        "–".to_string(),
        format!("{:.0}%", p.utilization * 100.0),
        format!(
            "{:.0}% of batch slots (replicas busy {:.0}% of the time)",
            r.slot_utilization * 100.0,
            r.busy_fraction * 100.0
        ),
    ]);
    println!("{t}");
}

/// Goodput, throughput, where every request ended, losses, autoscaling and cost.
fn print_outcome(w: &InferenceWorkload, config: &SimConfig, r: &SimResult) {
    println!(
        "Goodput: {:.2}% of {} measured requests met every target ({}).",
        r.goodput * 100.0,
        r.measured_requests,
        describe_slo(&w.slo)
    );
    println!(
        "Throughput: {:.2} req/s, {:.0} output tokens/s; {} preemption(s).",
        r.throughput_requests_per_s, r.output_tokens_per_s, r.preemptions
    );
    println!(
        "Requests: {} arrived = {} completed + {} in flight + {} rejected (longer than the KV cache) + {} timed out (no replica up).",
        r.arrivals, r.requests_completed, r.in_flight, r.rejected, r.timed_out
    );
    if let Some(f) = config.dynamics.failures {
        println!(
            "Replica losses: {} ({} per replica-hour, replaced after {:.0} s); {} request restart(s) on other replicas.",
            r.replica_losses, f.per_replica_per_hour, f.replacement_delay_s, r.retried
        );
    }
    if let Some(a) = config.dynamics.autoscale {
        println!(
            "Autoscaling: {}–{} replicas at {:.1} outstanding per replica, {:.0} s to scale up, {:.0} s cooldown: mean {:.2}, peak {} replicas billed.",
            a.min_replicas,
            a.max_replicas,
            a.target_outstanding,
            a.scale_up_delay_s,
            a.cooldown_s,
            r.mean_replicas,
            r.peak_replicas
        );
    }
    let cost = match (r.cost_usd, config.usd_per_hour) {
        (Some(c), Some(price)) => {
            let per_replica = price / f64::from(config.replicas);
            let fixed = price * r.simulated_s / 3600.0;
            format!(
                ", ${c:.2} at ${per_replica:.2}/replica-hour (the fixed fleet of {}: ${fixed:.2})",
                config.replicas
            )
        }
        _ => String::new(),
    };
    println!(
        "Simulated {:.1} s: {:.2} replica-hours{cost}.",
        r.simulated_s, r.replica_hours
    );
}

fn percentile_row(name: &str, s: &Percentiles) -> Vec<String> {
    let f = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    vec![
        name.to_string(),
        f(s.mean),
        f(s.p50),
        f(s.p90),
        f(s.p99),
        f(s.p999),
        s.count.to_string(),
    ]
}
