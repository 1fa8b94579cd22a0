//! `gpuplan simulate`: replays plan N of a workload in the discrete-event
//! simulator and sets its analytical p99s beside the simulated ones.

use super::{check_finite, print_json, table};
use crate::cli::{RouterArg, SimulateCmd, DEFAULT_VERIFY_PLANS, DEFAULT_VERIFY_REQUESTS};
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::Catalog;
use gpuplan_core::{plan_replica, InferenceWorkload, Plan, PlanReport, Slo};
use gpuplan_sim::{
    simulate_with_progress, ArrivalProcess, DeploymentCost, EngineConfig, Percentiles, Progress,
    Router, SimConfig, SimResult, Stop, SyntheticTraffic, Trace, Traffic, VerifyOptions,
    VLLM_BLOCK_TOKENS,
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
    let traffic = match &cmd.trace {
        Some(path) => Traffic::Trace(Trace::parse(
            &path.display().to_string(),
            &load::read(path)?,
        )?),
        None => {
            let stop = match cmd.duration {
                Some(s) => Stop::Duration(s),
                None => Stop::Requests(cmd.requests.unwrap_or(DEFAULT_REQUESTS)),
            };
            let t = &raw.traffic;
            Traffic::Synthetic(SyntheticTraffic::from_workload(
                &w,
                t.input_tokens.histogram.as_deref(),
                t.output_tokens.histogram.as_deref(),
                stop,
            )?)
        }
    };
    let narrow = |field: &str, v: u64| {
        u32::try_from(v).map_err(|_| {
            CliError::Internal(format!("plan {field} {v} does not fit the simulator's u32"))
        })
    };
    let config = SimConfig {
        replicas: p.replicas,
        engine: EngineConfig {
            max_num_seqs: narrow("max_num_seqs", p.max_num_seqs)?,
            max_batched_tokens: narrow("max_batched_tokens", p.max_batched_tokens)?,
            kv_cache_tokens: replica.memory.kv_cache_tokens,
            block_tokens: VLLM_BLOCK_TOKENS,
        },
        router: match cmd.router {
            RouterArg::LeastOutstanding => Router::LeastOutstanding,
            RouterArg::RoundRobin => Router::RoundRobin,
        },
        warmup_fraction: cmd.warmup,
        slo: w.slo,
        usd_per_hour: Some(p.usd_per_hour),
        seed: cmd.seed,
    };
    let cost = DeploymentCost::new(replica.deployment);
    let result =
        with_progress_bar(|report| simulate_with_progress(&cost, &config, &traffic, report))?;
    if cmd.json {
        return print_json(&result);
    }
    check_finite(&result)?;
    print_human(&w, p, &config, &traffic, &result);
    Ok(())
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
            format!(
                "{amount} at the peak {} req/s, {arrival} arrivals, input {:.0}/{:.0} and output {:.0}/{:.0} tokens (mean/p99)",
                w.peak_requests_per_s,
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
        "Requests: {} arrived = {} completed + {} in flight + {} rejected (longer than the KV cache).",
        r.arrivals, r.requests_completed, r.in_flight, r.rejected
    );
    let cost = r
        .cost_usd
        .map(|c| format!(", ${c:.2} at ${:.2}/hour", p.usd_per_hour))
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
