//! `gpuplan simulate`: replays plan N of a workload in the discrete-event
//! simulator and sets its analytical p99s beside the simulated ones.

use super::{check_finite, print_json, table};
use crate::cli::{RouterArg, SimulateCmd, DEFAULT_VERIFY_PLANS, DEFAULT_VERIFY_REQUESTS};
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::Catalog;
use gpuplan_core::{plan_replica, InferenceWorkload, Plan, PlanReport, Slo};
use gpuplan_sim::{
    scale_up_delay_s, simulate_with_progress, ArrivalProcess, Autoscale, ClosedLoop,
    DeploymentCost, Dynamics, EngineConfig, Failures, Histograms, Percentiles, Progress, RateCurve,
    Router, SimConfig, SimResult, Stop, SyntheticTraffic, TimePoint, Trace, Traffic, VerifyOptions,
    DAY_S, HPA_SCALE_DOWN_STABILIZATION_S, HPA_SYNC_PERIOD_S, VLLM_BLOCK_TOKENS,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Requests simulated when neither `--requests`, `--duration` nor `--trace` is given.
const DEFAULT_REQUESTS: u64 = 100_000;

pub fn run(catalog: &Catalog, cmd: SimulateCmd) -> CliResult {
    let cal = load::calibration(cmd.calibration.as_deref())?;
    let (w, raw) = load::workload_with_raw(catalog, &cmd.workload)?;
    // Plan N as `gpuplan plan` shows it: after the default verification.
    let verify = VerifyOptions {
        top: DEFAULT_VERIFY_PLANS,
        requests: DEFAULT_VERIFY_REQUESTS,
        seed: 1,
    };
    let (_, report) = super::plan::verified_plan(catalog, &cal, &cmd.workload, cmd.plan, verify)?;
    if report.plans.is_empty() {
        print_infeasible(&w, &report);
        return Err(CliError::Infeasible);
    }
    let Some(p) = report.plans.iter().find(|p| p.rank == cmd.plan) else {
        return Err(CliError::bad(format!(
            "--plan {}: expected a plan number from 1 to {} (the feasible plans of {})",
            cmd.plan,
            report.plans.len(),
            cmd.workload.display()
        )));
    };
    let replica = plan_replica(catalog, &w, &cal, p)?;
    let histograms = Histograms {
        input: raw.traffic.input_tokens.histogram.as_deref(),
        output: raw.traffic.output_tokens.histogram.as_deref(),
    };
    let traffic = build_traffic(&cmd, &w, histograms)?;
    let config = build_config(&cmd, &w, p, replica.memory.kv_cache_tokens, &replica.memory)?;
    let cost = DeploymentCost::new(replica.deployment);
    let result =
        with_progress_bar(|report| simulate_with_progress(&cost, &config, &traffic, report))?;
    if let Some(path) = &cmd.timeseries {
        write_timeseries(path, &result.timeseries)?;
    }
    if cmd.json {
        return print_json(&result);
    }
    check_finite(&result)?;
    print_human(&w, p, &config, &traffic, &result);
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

/// The traffic: a trace, or the workload's synthetic traffic at its peak
/// rate or along `--rate-curve`.
fn build_traffic(
    cmd: &SimulateCmd,
    w: &InferenceWorkload,
    histograms: Histograms<'_>,
) -> CliResult<Traffic> {
    if let Some(path) = &cmd.trace {
        let name = path.display().to_string();
        return Ok(Traffic::Trace(Trace::parse(&name, &load::read(path)?)?));
    }
    let rate_curve = match cmd.rate_curve.as_deref() {
        None => None,
        Some("diurnal") => Some(RateCurve::diurnal(
            w.peak_requests_per_s,
            w.mean_requests_per_s,
        )?),
        Some(file) => {
            let path = std::path::Path::new(file);
            Some(RateCurve::parse(file, &load::read(path)?)?)
        }
    };
    let stop = match (cmd.duration, cmd.requests) {
        (Some(s), _) => Stop::Duration(s),
        (None, Some(n)) => Stop::Requests(n),
        // A daily curve runs a day by default.
        (None, None) if cmd.rate_curve.as_deref() == Some("diurnal") => Stop::Duration(DAY_S),
        (None, None) => Stop::Requests(DEFAULT_REQUESTS),
    };
    let mut synthetic =
        SyntheticTraffic::from_workload(w, histograms.input, histograms.output, stop)?;
    synthetic.rate_curve = rate_curve;
    synthetic.clients = cmd.users.map(|users| ClosedLoop {
        users,
        think_time_s: cmd.think_time,
    });
    Ok(Traffic::Synthetic(synthetic))
}

/// The simulated fleet: the plan's replicas and engine settings, and the
/// dynamics the flags ask for.
fn build_config(
    cmd: &SimulateCmd,
    w: &InferenceWorkload,
    p: &Plan,
    kv_cache_tokens: u64,
    memory: &gpuplan_core::InferenceMemory,
) -> CliResult<SimConfig> {
    let narrow = |field: &str, v: u64| {
        u32::try_from(v).map_err(|_| {
            CliError::Internal(format!("plan {field} {v} does not fit the simulator's u32"))
        })
    };
    let scale_up_delay_s = cmd
        .scale_up_delay
        .unwrap_or_else(|| scale_up_delay_s(memory.per_gpu.weights_gib));
    let autoscale = cmd.autoscale.then(|| {
        let d = &p.derivation;
        Autoscale {
            min_replicas: cmd.min_replicas.unwrap_or(w.constraints.min_replicas),
            max_replicas: cmd.max_replicas.unwrap_or(p.replicas),
            // Little's law: requests in a replica at its capacity within the SLO.
            target_outstanding: cmd
                .target_outstanding
                .unwrap_or((d.capacity_requests_per_s_per_replica * d.service_s).max(1.0)),
            interval_s: HPA_SYNC_PERIOD_S,
            scale_up_delay_s,
            cooldown_s: cmd.cooldown.unwrap_or(HPA_SCALE_DOWN_STABILIZATION_S),
        }
    });
    // A replica spanning several instances is lost when any of them is.
    let instances_per_replica = (p.gpus_per_replica as f64 / p.gpus_per_instance as f64).ceil();
    let loss_rate = cmd.failures_per_hour.or_else(|| {
        p.spot
            .then_some(w.pricing.spot_preemptions_per_hour * instances_per_replica.max(1.0))
    });
    let failures = loss_rate.map(|rate| Failures {
        per_replica_per_hour: rate,
        replacement_delay_s: cmd
            .replacement_delay
            .unwrap_or(w.pricing.spot_replacement_hours * 3600.0),
    });
    Ok(SimConfig {
        replicas: p.replicas,
        engine: EngineConfig {
            max_num_seqs: narrow("max_num_seqs", p.max_num_seqs)?,
            max_batched_tokens: narrow("max_batched_tokens", p.max_batched_tokens)?,
            kv_cache_tokens,
            block_tokens: VLLM_BLOCK_TOKENS,
        },
        router: match cmd.router {
            RouterArg::LeastOutstanding => Router::LeastOutstanding,
            RouterArg::RoundRobin => Router::RoundRobin,
            RouterArg::LeastKv => Router::LeastKv,
        },
        warmup_fraction: cmd.warmup,
        slo: w.slo,
        usd_per_hour: Some(p.usd_per_hour),
        seed: cmd.seed,
        dynamics: Dynamics {
            autoscale,
            failures,
            request_timeout_s: cmd.request_timeout,
            sample_every_s: cmd.timeseries.is_some().then_some(cmd.sample_every),
        },
    })
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
    let mut t = table(&["reason", "count", "example"]);
    let mut rows: Vec<_> = r.rejected.values().collect();
    rows.sort_by_key(|rej| std::cmp::Reverse(rej.count));
    for rej in rows {
        t.add_row(vec![
            rej.description.to_string(),
            rej.count.to_string(),
            rej.example.clone(),
        ]);
    }
    println!("{t}");
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
    p: &Plan,
    config: &SimConfig,
    traffic: &Traffic,
    r: &SimResult,
) {
    println!(
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
    print_outcome(w, p, config, r);
}

/// Goodput, throughput, where every request ended, losses, autoscaling and cost.
fn print_outcome(w: &InferenceWorkload, p: &Plan, config: &SimConfig, r: &SimResult) {
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
    let cost = r
        .cost_usd
        .map(|c| {
            let per_replica = p.usd_per_hour / f64::from(p.replicas);
            let fixed = per_replica * f64::from(p.replicas) * r.simulated_s / 3600.0;
            format!(
                ", ${c:.2} at ${per_replica:.2}/replica-hour (the plan's fixed fleet: ${fixed:.2})"
            )
        })
        .unwrap_or_default();
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
