//! Replaying a plan in the discrete-event simulator: the traffic, the fleet's
//! behaviour (autoscaling, losses, timeouts) and plan N's replicas, as
//! `gpuplan simulate W --plan N` and `POST /v1/simulate` set them up.

use crate::{AppError, AppResult, WorkloadInput};
use gpuplan_catalog::Catalog;
use gpuplan_core::limits::{Count, Span};
use gpuplan_core::{plan_replica, Calibration, InferenceWorkload, Plan, PlanReport};
use gpuplan_sim::{
    scale_up_delay_s, simulate_with_progress, Autoscale, ClosedLoop, DeploymentCost, Dynamics,
    EngineConfig, Failures, Histograms, Progress, PromptSteps, RateCurve, Router, SimConfig,
    SimResult, Stop, SyntheticTraffic, Trace, Traffic, VerifyOptions, DAY_S,
    HPA_SCALE_DOWN_STABILIZATION_S, HPA_SYNC_PERIOD_S,
};

/// Requests simulated when neither a count, a duration nor a trace is given.
pub const DEFAULT_SIM_REQUESTS: u64 = 100_000;
/// Requests a simulation may run.
pub const SIM_REQUESTS: Count = Count::new(1, 100_000_000);
/// Simulated seconds.
pub const SIM_DURATION_S: Span = Span::above(0.0, 1e7);
/// Share of the arrivals left out of the statistics.
pub const SIM_WARMUP: Span = Span::from(0.0, 0.9);
/// Closed-loop users.
pub const SIM_USERS: Count = Count::new(1, 10_000_000);
/// Replicas of a simulated fleet.
pub const SIM_REPLICAS: Count = Count::new(1, 100_000);
/// Requests outstanding per replica an autoscaler aims at.
pub const SIM_TARGET: Span = Span::above(0.0, 1e6);
/// Delays (scale-up, cooldown, replacement, think time), s.
pub const SIM_DELAY_S: Span = Span::from(0.0, 86_400.0);
/// Replicas lost per replica-hour.
pub const SIM_LOSS_RATE: Span = Span::from(0.0, 60.0);
/// A request's give-up time, s.
pub const SIM_TIMEOUT_S: Span = Span::above(0.0, 86_400.0);
/// Seconds between two time-series rows.
pub const SIM_SAMPLE_S: Span = Span::above(0.0, 86_400.0);

/// How the arrival rate moves over time.
#[derive(Debug, Clone)]
pub enum RateCurveSetting {
    /// A daily curve from the workload's peak and mean rates.
    Diurnal,
    /// A rate table (the CLI reads it from a CSV file).
    Table(RateCurve),
}

/// The traffic and the fleet's behaviour of a simulation (the CLI's flags,
/// the API's query). `Default` is `simulate W` with no flags.
#[derive(Debug, Clone)]
pub struct SimulateSettings {
    /// Requests to simulate (default 100,000; a daily curve runs a day).
    pub requests: Option<u64>,
    /// Simulated seconds instead of a request count.
    pub duration: Option<f64>,
    /// Seed of the synthetic traffic.
    pub seed: u64,
    /// Share of the arrivals left out of the statistics.
    pub warmup: f64,
    /// How arrivals are spread over the replicas.
    pub router: Router,
    /// A rate curve instead of the constant peak.
    pub rate_curve: Option<RateCurveSetting>,
    /// A recorded trace instead of synthetic traffic (CLI only: a file).
    pub trace: Option<Trace>,
    /// Closed-loop users instead of open arrivals.
    pub users: Option<u32>,
    /// Mean think time of a closed-loop user, s.
    pub think_time: f64,
    /// Scale replicas with the load.
    pub autoscale: bool,
    /// Fewest replicas (default: the workload's `min_replicas`).
    pub min_replicas: Option<u32>,
    /// Most replicas (default: the plan's fleet).
    pub max_replicas: Option<u32>,
    /// Requests outstanding per replica the autoscaler aims at.
    pub target_outstanding: Option<f64>,
    /// Seconds from a scale-up decision to the replica serving.
    pub scale_up_delay: Option<f64>,
    /// Seconds after a scaling step before a scale-down.
    pub cooldown: Option<f64>,
    /// Replicas lost per replica-hour (a spot plan defaults to its preemption rate).
    pub failures_per_hour: Option<f64>,
    /// Seconds until a lost replica's replacement serves.
    pub replacement_delay: Option<f64>,
    /// A request that finds no replica up gives up after this long, s.
    pub request_timeout: Option<f64>,
    /// Seconds between time-series rows (`None`: no time series).
    pub sample_every: Option<f64>,
}

impl Default for SimulateSettings {
    fn default() -> Self {
        SimulateSettings {
            requests: None,
            duration: None,
            seed: 1,
            warmup: 0.1,
            router: Router::LeastOutstanding,
            rate_curve: None,
            trace: None,
            users: None,
            think_time: 0.0,
            autoscale: false,
            min_replicas: None,
            max_replicas: None,
            target_outstanding: None,
            scale_up_delay: None,
            cooldown: None,
            failures_per_hour: None,
            replacement_delay: None,
            request_timeout: None,
            sample_every: None,
        }
    }
}

impl SimulateSettings {
    /// Range checks, naming the setting (the CLI's flags check the same ranges).
    pub fn check(&self) -> AppResult<()> {
        use crate::replica::{check_count, check_span};
        let opt_count =
            |name: &str, v: Option<u64>, r: Count| v.map_or(Ok(()), |v| check_count(name, v, r));
        let opt_span =
            |name: &str, v: Option<f64>, r: Span| v.map_or(Ok(()), |v| check_span(name, v, r));
        opt_count("requests", self.requests, SIM_REQUESTS)?;
        opt_span("duration", self.duration, SIM_DURATION_S)?;
        check_span("warmup", self.warmup, SIM_WARMUP)?;
        opt_count("users", self.users.map(u64::from), SIM_USERS)?;
        check_span("think_time", self.think_time, SIM_DELAY_S)?;
        opt_count(
            "min_replicas",
            self.min_replicas.map(u64::from),
            SIM_REPLICAS,
        )?;
        opt_count(
            "max_replicas",
            self.max_replicas.map(u64::from),
            SIM_REPLICAS,
        )?;
        opt_span("target_outstanding", self.target_outstanding, SIM_TARGET)?;
        opt_span("scale_up_delay", self.scale_up_delay, SIM_DELAY_S)?;
        opt_span("cooldown", self.cooldown, SIM_DELAY_S)?;
        opt_span("failures_per_hour", self.failures_per_hour, SIM_LOSS_RATE)?;
        opt_span("replacement_delay", self.replacement_delay, SIM_DELAY_S)?;
        opt_span("request_timeout", self.request_timeout, SIM_TIMEOUT_S)?;
        opt_span("sample_every", self.sample_every, SIM_SAMPLE_S)
    }
}

/// The traffic: a trace, or the workload's synthetic traffic at its peak
/// rate or along the rate curve.
pub fn build_traffic(
    settings: &SimulateSettings,
    w: &InferenceWorkload,
    histograms: Histograms<'_>,
) -> AppResult<Traffic> {
    gpuplan_sim::check_simulable(w)?;
    if let Some(trace) = &settings.trace {
        return Ok(Traffic::Trace(trace.clone()));
    }
    let rate_curve = match &settings.rate_curve {
        None => None,
        Some(RateCurveSetting::Diurnal) => Some(RateCurve::diurnal(
            w.peak_requests_per_s,
            w.mean_requests_per_s,
        )?),
        Some(RateCurveSetting::Table(curve)) => Some(curve.clone()),
    };
    let stop = match (settings.duration, settings.requests) {
        (Some(s), _) => Stop::Duration(s),
        (None, Some(n)) => Stop::Requests(n),
        // A daily curve runs a day by default.
        (None, None) if matches!(settings.rate_curve, Some(RateCurveSetting::Diurnal)) => {
            Stop::Duration(DAY_S)
        }
        (None, None) => Stop::Requests(DEFAULT_SIM_REQUESTS),
    };
    let mut synthetic =
        SyntheticTraffic::from_workload(w, histograms.input, histograms.output, stop)?;
    synthetic.rate_curve = rate_curve;
    synthetic.clients = settings.users.map(|users| ClosedLoop {
        users,
        think_time_s: settings.think_time,
    });
    Ok(Traffic::Synthetic(synthetic))
}

/// Autoscaling, losses, timeouts and sampling as the settings ask.
/// `target`: the default requests outstanding per replica; `fleet`: the
/// default most replicas; a spot plan's losses default to the workload's
/// spot preemption rate.
pub fn dynamics(
    settings: &SimulateSettings,
    w: &InferenceWorkload,
    plan: Option<&Plan>,
    (target, fleet): (f64, u32),
    weights_gib_per_gpu: f64,
) -> Dynamics {
    let scale_up_delay_s = settings
        .scale_up_delay
        .unwrap_or_else(|| scale_up_delay_s(weights_gib_per_gpu));
    let autoscale = settings.autoscale.then(|| Autoscale {
        min_replicas: settings.min_replicas.unwrap_or(w.constraints.min_replicas),
        max_replicas: settings.max_replicas.unwrap_or(fleet),
        target_outstanding: settings.target_outstanding.unwrap_or(target),
        interval_s: HPA_SYNC_PERIOD_S,
        scale_up_delay_s,
        cooldown_s: settings.cooldown.unwrap_or(HPA_SCALE_DOWN_STABILIZATION_S),
    });
    // A replica spanning several instances is lost when any of them is.
    let spot_rate = plan.filter(|p| p.spot).map(|p| {
        let instances = (p.gpus_per_replica as f64 / p.gpus_per_instance as f64).ceil();
        w.pricing.spot_preemptions_per_hour * instances.max(1.0)
    });
    let failures = settings
        .failures_per_hour
        .or(spot_rate)
        .map(|rate| Failures {
            per_replica_per_hour: rate,
            replacement_delay_s: settings
                .replacement_delay
                .unwrap_or(w.pricing.spot_replacement_hours * 3600.0),
        });
    Dynamics {
        autoscale,
        failures,
        request_timeout_s: settings.request_timeout,
        sample_every_s: settings.sample_every,
    }
}

/// Plan N, set up for the simulator.
#[derive(Debug)]
pub struct PlanSimulation {
    /// The workload.
    pub workload: InferenceWorkload,
    /// The plan simulated.
    pub plan: Plan,
    /// Its replicas, engine settings and dynamics.
    pub config: SimConfig,
    /// The arrivals.
    pub traffic: Traffic,
    /// The per-iteration cost of one replica.
    pub deployment: gpuplan_core::Deployment,
}

impl PlanSimulation {
    /// Runs the simulation, reporting progress.
    pub fn run(&self, progress: &mut dyn FnMut(Progress)) -> AppResult<SimResult> {
        let cost = DeploymentCost::new(self.deployment.clone());
        Ok(simulate_with_progress(
            &cost,
            &self.config,
            &self.traffic,
            progress,
        )?)
    }
}

/// What a plan simulation starts from: the plan, or why there is none.
#[derive(Debug)]
pub enum PlanSimulationSetup {
    /// Plan N and its simulation inputs.
    Ready(Box<PlanSimulation>),
    /// No feasible plan: the planner's report says why.
    Infeasible(Box<(InferenceWorkload, PlanReport)>),
}

/// Plan `rank` of the workload as `gpuplan plan` shows it (after the default
/// verification), its replica rebuilt as the planner built it, and the
/// traffic and fleet the settings ask for.
pub fn prepare_plan_simulation(
    catalog: &Catalog,
    cal: &Calibration,
    input: &WorkloadInput,
    rank: usize,
    settings: &SimulateSettings,
) -> AppResult<PlanSimulationSetup> {
    settings.check()?;
    crate::replica::check_count("plan", rank as u64, crate::PLAN_RANKS)?;
    if let Some(kind) = input.kind().filter(|k| k != "inference") {
        return Err(AppError::bad_field(
            "kind",
            format!(
                "{}: kind = \"{kind}\": simulations replay inference plans",
                input.name
            ),
        ));
    }
    let (w, raw) = input.inference(catalog)?;
    let verify = VerifyOptions {
        top: crate::DEFAULT_VERIFY_PLANS,
        requests: crate::DEFAULT_VERIFY_REQUESTS,
        seed: 1,
    };
    let (_, report) = crate::verified_plan(catalog, cal, input, rank, verify)?;
    if report.plans.is_empty() {
        return Ok(PlanSimulationSetup::Infeasible(Box::new((w, report))));
    }
    let Some(plan) = report.plans.iter().find(|p| p.rank == rank) else {
        return Err(AppError::bad_field(
            "plan",
            format!(
                "--plan {rank}: expected a plan number from 1 to {} (the feasible plans of {})",
                report.plans.len(),
                input.name
            ),
        ));
    };
    let replica = plan_replica(catalog, &w, cal, plan)?;
    let histograms = Histograms {
        input: raw.traffic.input_tokens.histogram.as_deref(),
        output: raw.traffic.output_tokens.histogram.as_deref(),
    };
    let traffic = build_traffic(settings, &w, histograms)?;
    let config = plan_config(settings, &w, plan, &replica.memory)?;
    Ok(PlanSimulationSetup::Ready(Box::new(PlanSimulation {
        plan: plan.clone(),
        workload: w,
        config,
        traffic,
        deployment: replica.deployment,
    })))
}

/// The simulated fleet: the plan's replicas and engine settings, and the
/// dynamics the settings ask for.
fn plan_config(
    settings: &SimulateSettings,
    w: &InferenceWorkload,
    p: &Plan,
    memory: &gpuplan_core::InferenceMemory,
) -> AppResult<SimConfig> {
    let narrow = |field: &str, v: u64| {
        u32::try_from(v).map_err(|_| {
            AppError::internal(format!("plan {field} {v} does not fit the simulator's u32"))
        })
    };
    let d = &p.derivation;
    // Little's law: requests in a replica at its capacity within the SLO.
    let target = (d.capacity_requests_per_s_per_replica * d.service_s).max(1.0);
    Ok(SimConfig {
        replicas: p.replicas,
        engine: EngineConfig {
            max_num_seqs: narrow("max_num_seqs", p.max_num_seqs)?,
            max_batched_tokens: narrow("max_batched_tokens", p.max_batched_tokens)?,
            kv_cache_tokens: memory.kv_cache_tokens,
            block_tokens: narrow("kv_block_tokens", p.engine.profile().kv_block_tokens)?,
            prompts: PromptSteps::of(p.engine),
        },
        router: settings.router,
        warmup_fraction: settings.warmup,
        slo: w.slo,
        usd_per_hour: Some(p.usd_per_hour),
        seed: settings.seed,
        dynamics: dynamics(
            settings,
            w,
            Some(p),
            (target, p.replicas),
            memory.per_gpu.weights_gib,
        ),
    })
}
