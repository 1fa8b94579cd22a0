//! Training plans: offerings × nodes × precision, each with the fastest
//! layout that fits (TP × PP × DP × ZeRO × micro-batch × recomputation,
//! [`best_layout`]), then time to train with checkpoints, failures and spot
//! preemptions, data movement, and cost; ranked by cost or time, filtered by
//! deadline and budget. Every rejected candidate is counted with a reason.

use super::candidates::{passing_offerings, Candidate};
use super::rejections::{RejectReason, Rejection, Rejections};
use crate::calibration::Calibration;
use crate::training::{
    best_layout, data_move, resilience, spot_break_even_rate, Fabric, Framework, Hardware,
    LayoutChoice, ResilienceInput, SearchSpace, TrainingFactors, TrainingJob, TrainingWorkload,
};
use crate::training_memory::{lora_params_per_layer, FineTuneMethod, Optimizer};
use gpuplan_catalog::{Catalog, Precision};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// One ranked training plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainingPlan {
    /// 1 = best.
    pub rank: usize,
    /// Provider.
    pub provider: String,
    /// Instance type.
    pub instance_type: String,
    /// Region.
    pub region: String,
    /// GPU.
    pub gpu: String,
    /// GPUs per instance.
    pub gpus_per_node: u32,
    /// Instances.
    pub nodes: u64,
    /// GPUs in total.
    pub gpus: u64,
    /// Spot instances.
    pub spot: bool,
    /// Training precision.
    pub precision: Precision,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Data-parallel replicas.
    pub dp: u32,
    /// ZeRO stage.
    pub zero_stage: u8,
    /// Sequences per micro-batch per GPU.
    pub micro_batch: u64,
    /// Micro-batches per step per DP rank.
    pub micro_batches: u64,
    /// Recomputation.
    pub recompute: crate::training_memory::Recompute,
    /// One optimizer step, seconds.
    pub step_time_s: f64,
    /// Tokens per second, all GPUs.
    pub tokens_per_s: f64,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs utilisation.
    pub mfu: f64,
    /// Model TFLOP/s per GPU.
    pub tflops_per_gpu: f64,
    /// Where the step goes.
    pub step_breakdown: crate::training::StepTime,
    /// Peak memory of the most loaded GPU, GiB.
    pub peak_memory_gib: f64,
    /// Usable GPU memory, GiB.
    pub gpu_memory_gib: f64,
    /// Compute time without interruptions, hours.
    pub ideal_hours: f64,
    /// Expected wall time incl. checkpoints, failures, preemptions and the data copy, hours.
    pub time_to_train_hours: f64,
    /// Checkpoint interval, minutes of work.
    pub checkpoint_interval_min: f64,
    /// Seconds to write one checkpoint.
    pub checkpoint_write_s: f64,
    /// Interruptions per hour of the job (failures + preemptions).
    pub interruptions_per_hour: f64,
    /// USD per hour for all instances (after discounts).
    pub usd_per_hour: f64,
    /// When the price was read (the offering's snapshot date), if stated.
    pub price_date: Option<String>,
    /// Instance-hours cost.
    pub compute_usd: f64,
    /// Moving the data set here, USD (None = the data's provider publishes no rate).
    pub egress_usd: Option<f64>,
    /// How the data gets here.
    pub data_route: String,
    /// Compute + egress, USD.
    pub total_cost_usd: f64,
    /// For spot plans: the preemption rate per instance-hour at which on-demand becomes cheaper.
    pub spot_break_even_preemptions_per_hour: Option<f64>,
    /// Scale-up and scale-out fabric.
    pub fabric: String,
    /// Warnings: uncalibrated GPU family, slow network, assumed figures.
    pub flags: Vec<String>,
    /// A command that launches this layout.
    pub launch_command: String,
    /// The same launch split into launcher and program, for exports.
    pub launch: super::training_launch::Launch,
}

/// The result of a training search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainingReport {
    /// Workload name.
    pub workload: String,
    /// Model id.
    pub model: String,
    /// Tokens to process.
    pub tokens: f64,
    /// Ranked plans (best first).
    pub plans: Vec<TrainingPlan>,
    /// Rejections by reason.
    pub rejected: BTreeMap<RejectReason, Rejection>,
    /// What to relax when nothing is feasible.
    pub hint: Option<String>,
    /// Layout evaluations run.
    pub layouts_evaluated: usize,
}

/// Plans kept in the report.
pub const TRAINING_PLANS_SHOWN: usize = 10;

/// Bytes per parameter in a checkpoint: bf16 weights plus fp32 master and
/// the optimizer's states (Adam: m and v in fp32; 8-bit Adam: 1 byte each).
fn checkpoint_bytes_per_param(optimizer: Optimizer) -> f64 {
    match optimizer {
        Optimizer::Adam => 2.0 + 4.0 + 8.0,
        Optimizer::Adam8bit => 2.0 + 4.0 + 2.0,
    }
}

/// The shape of a candidate cluster: evaluated once for every region and price.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct ShapeKey {
    gpu: String,
    gpus_per_node: u32,
    nvlink: bool,
    network_mbits: u64,
    network_assumed: bool,
    nodes: u64,
    precision: Precision,
}

impl ShapeKey {
    fn new(cand: &Candidate<'_>, fabric: &Fabric, nodes: u64, precision: Precision) -> ShapeKey {
        ShapeKey {
            gpu: cand.gpu.name.clone(),
            gpus_per_node: cand.gpus_per_instance,
            nvlink: fabric.nvlink_class,
            network_mbits: (fabric.network_gbits * 1000.0) as u64,
            network_assumed: fabric.network_assumed,
            nodes,
            precision,
        }
    }
}

fn job<'a>(w: &'a TrainingWorkload, precision: Precision) -> TrainingJob<'a> {
    TrainingJob {
        model: &w.model,
        method: w.method,
        optimizer: w.optimizer,
        precision,
        seq_len: w.seq_len,
        fused_kernels: true,
        async_tp: true,
        grad_reduce_bytes: 4.0,
        attention_kernel: w.framework.attention_kernel(),
    }
}

/// Node counts to try: powers of two up to the limits; one node only without
/// a stated scale-out network.
fn node_counts(w: &TrainingWorkload, gpus_per_node: u32, fabric: &Fabric) -> Vec<u64> {
    if u64::from(gpus_per_node) > w.max_gpus {
        return Vec::new();
    }
    if fabric.network_assumed {
        return vec![1];
    }
    (0..20)
        .map(|i| 1u64 << i)
        .take_while(|n| *n <= w.max_nodes && n * u64::from(gpus_per_node) <= w.max_gpus)
        .collect()
}

/// Runs the training search.
pub fn plan_training(
    catalog: &Catalog,
    w: &TrainingWorkload,
    cal: &Calibration,
    factors: &TrainingFactors,
) -> TrainingReport {
    let mut rejected = Rejections::default();
    let passing = passing_offerings(catalog, &w.constraints, &mut rejected);
    let space = SearchSpace {
        recompute: w.recompute.clone(),
        ..SearchSpace::default()
    };
    let shapes = cluster_shapes(w, &passing, cal, &mut rejected);
    let (choices, layouts_evaluated) =
        fastest_layouts(w, &shapes, &space, cal, factors, &mut rejected);
    let plans = price_all(catalog, w, &passing, &choices, cal, &mut rejected);
    let plans = rank(plans, w.minimise_time);
    let hint = plans.is_empty().then(|| training_hint(w, &rejected));
    TrainingReport {
        workload: w.name.clone(),
        model: w.model.id.clone(),
        tokens: w.tokens,
        plans,
        rejected: rejected.into_map(),
        hint,
        layouts_evaluated,
    }
}

/// The distinct cluster shapes (GPU × node size × fabric × nodes × precision)
/// the passing offerings make, each with one offering that has it.
fn cluster_shapes<'a>(
    w: &TrainingWorkload,
    passing: &[Candidate<'a>],
    cal: &Calibration,
    rejected: &mut Rejections,
) -> HashMap<ShapeKey, (Candidate<'a>, Fabric)> {
    let mut shapes: HashMap<ShapeKey, (Candidate<'_>, Fabric)> = HashMap::new();
    for cand in passing {
        let fabric = Fabric::of_offering(cand.offering, cand.gpu, cal);
        if u64::from(cand.gpus_per_instance) > w.max_gpus {
            rejected.add(RejectReason::TooManyGpus, 1, None, || {
                format!(
                    "{} {}: {} GPUs per instance > constraints.max_gpus = {}",
                    cand.offering.provider,
                    cand.offering.instance_type,
                    cand.gpus_per_instance,
                    w.max_gpus
                )
            });
            continue;
        }
        for &precision in &w.precisions {
            if precision == Precision::Fp8 && cand.gpu.fp8_tflops.is_none() {
                rejected.add(RejectReason::PrecisionUnsupported, 1, None, || {
                    format!("{}: no FP8 tensor cores for fp8 training", cand.gpu.name)
                });
                continue;
            }
            for nodes in node_counts(w, cand.gpus_per_instance, &fabric) {
                let key = ShapeKey::new(cand, &fabric, nodes, precision);
                shapes.entry(key).or_insert_with(|| (*cand, fabric.clone()));
            }
        }
    }
    shapes
}

/// The fastest layout that fits for every shape (in parallel), and how many
/// shapes were evaluated; shapes with none are counted as not fitting.
fn fastest_layouts(
    w: &TrainingWorkload,
    shapes: &HashMap<ShapeKey, (Candidate<'_>, Fabric)>,
    space: &SearchSpace,
    cal: &Calibration,
    factors: &TrainingFactors,
    rejected: &mut Rejections,
) -> (HashMap<ShapeKey, LayoutChoice>, usize) {
    let mut evaluated: Vec<(ShapeKey, Result<LayoutChoice, String>)> = shapes
        .par_iter()
        .map(|(key, (cand, fabric))| {
            let hw = Hardware {
                gpu: cand.gpu,
                fabric,
            };
            let gpus = key.nodes * u64::from(key.gpus_per_node);
            let choice = best_layout(
                &job(w, key.precision),
                hw,
                gpus,
                w.global_batch,
                space,
                cal,
                factors,
            )
            .map_err(|e| format!("{} × {} {}: {}", gpus, key.gpu, key.precision, e.reason));
            (key.clone(), choice)
        })
        .collect();
    // In shape order, not the hash map's (which differs run to run), so the
    // rejection example is the same every time.
    evaluated.sort_by(|a, b| a.0.cmp(&b.0));
    let layouts_evaluated = evaluated.len();
    let choices: HashMap<ShapeKey, LayoutChoice> = evaluated
        .into_iter()
        .filter_map(|(k, c)| match c {
            Ok(c) => Some((k, c)),
            Err(why) => {
                rejected.add(RejectReason::DoesNotFit, 1, None, || why);
                None
            }
        })
        .collect();
    (choices, layouts_evaluated)
}

/// Every offering × node count × precision × spot/on-demand with a layout, priced.
fn price_all(
    catalog: &Catalog,
    w: &TrainingWorkload,
    passing: &[Candidate<'_>],
    choices: &HashMap<ShapeKey, LayoutChoice>,
    cal: &Calibration,
    rejected: &mut Rejections,
) -> Vec<TrainingPlan> {
    let mut plans = Vec::new();
    for cand in passing {
        let fabric = Fabric::of_offering(cand.offering, cand.gpu, cal);
        for &precision in &w.precisions {
            for nodes in node_counts(w, cand.gpus_per_instance, &fabric) {
                let key = ShapeKey::new(cand, &fabric, nodes, precision);
                let Some(choice) = choices.get(&key) else {
                    continue;
                };
                for spot in price_options(w, cand) {
                    let cluster = Cluster {
                        cand,
                        fabric: &fabric,
                        nodes,
                        precision,
                        spot,
                    };
                    match price(catalog, w, &cluster, choice) {
                        Ok(p) => plans.push(p),
                        Err((reason, miss, why)) => rejected.add(reason, 1, Some(miss), || why),
                    }
                }
            }
        }
    }
    plans
}

/// On-demand, and spot where allowed and listed.
fn price_options(w: &TrainingWorkload, cand: &Candidate<'_>) -> Vec<bool> {
    let mut v = Vec::new();
    if cand.offering.price_per_hour.is_some() {
        v.push(false);
    }
    if w.constraints.spot && cand.offering.spot_price_per_hour.is_some() {
        v.push(true);
    }
    v
}

type Miss = (RejectReason, f64, String);

/// One candidate cluster: an offering, its fabric, a node count and precision.
struct Cluster<'a, 'c> {
    cand: &'c Candidate<'a>,
    fabric: &'c Fabric,
    nodes: u64,
    precision: Precision,
    spot: bool,
}

impl Cluster<'_, '_> {
    fn gpus(&self) -> u64 {
        self.nodes * u64::from(self.cand.gpus_per_instance)
    }

    /// `aws us-east-1 2 × p5.48xlarge fp8 spot`, for rejection examples.
    fn label(&self) -> String {
        let o = self.cand.offering;
        format!(
            "{} {} {} × {} {}{}",
            o.provider,
            o.region,
            self.nodes,
            o.instance_type,
            self.precision,
            if self.spot { " spot" } else { "" }
        )
    }
}

/// The instance price per hour (spot or on-demand after the discount), and
/// the on-demand price for the spot break-even.
fn unit_prices(w: &TrainingWorkload, c: &Cluster<'_, '_>) -> (f64, Option<f64>) {
    let o = c.cand.offering;
    let discount = w.pricing.discounts.get(&o.provider).copied().unwrap_or(0.0);
    let on_demand = o.price_per_hour.map(|p| p * (1.0 - discount));
    let unit = if c.spot {
        o.spot_price_per_hour.unwrap_or(f64::INFINITY)
    } else {
        on_demand.unwrap_or(f64::INFINITY)
    };
    (unit, on_demand)
}

/// Checkpoint size, GB: as given, else the trained parameters with the
/// optimizer's checkpoint bytes (adapters only for LoRA/QLoRA).
fn checkpoint_gb(w: &TrainingWorkload) -> f64 {
    w.checkpoint_gb.unwrap_or_else(|| {
        let trained = match w.method {
            FineTuneMethod::Full => w.model.params().total() as f64,
            FineTuneMethod::Lora { rank, all_linear }
            | FineTuneMethod::Qlora { rank, all_linear } => {
                lora_params_per_layer(&w.model, rank, all_linear) * w.model.num_layers as f64
            }
        };
        trained * checkpoint_bytes_per_param(w.optimizer) / 1e9
    })
}

/// What the interruption model needs for this cluster.
fn resilience_input(w: &TrainingWorkload, c: &Cluster<'_, '_>, ideal_s: f64) -> ResilienceInput {
    // Each node writes its shard in parallel: GB × 8 / (Gb/s × nodes).
    let checkpoint_s = checkpoint_gb(w) * 8.0 / (w.checkpoint_write_gbits * c.nodes as f64);
    ResilienceInput {
        solve_s: ideal_s,
        gpus: c.gpus() as f64,
        instances: c.nodes as f64,
        preemptions_per_instance_hour: if c.spot {
            w.pricing.spot_preemptions_per_hour
        } else {
            0.0
        },
        checkpoint_s,
        // Re-provision, then read the last checkpoint back.
        restart_s: w.pricing.spot_replacement_hours * 3600.0 + checkpoint_s,
        interval_s: w.checkpoint_interval_min.map(|m| m * 60.0),
    }
}

/// The workload's deadline and budget.
fn check_goals(
    w: &TrainingWorkload,
    c: &Cluster<'_, '_>,
    hours: f64,
    total: f64,
) -> Result<(), Miss> {
    if let Some(deadline) = w.deadline_hours.filter(|d| hours > *d) {
        let why = format!("{}: {hours:.1} h > {deadline} h", c.label());
        return Err((RejectReason::MissesDeadline, hours, why));
    }
    if let Some(budget) = w.max_usd.filter(|b| total > *b) {
        let why = format!("{}: ${total:.0} > ${budget}", c.label());
        return Err((RejectReason::OverTotalBudget, total, why));
    }
    Ok(())
}

/// Warnings a reader of the plan should see.
fn plan_flags(c: &Cluster<'_, '_>, choice: &LayoutChoice, egress_known: bool) -> Vec<String> {
    let mut flags = Vec::new();
    if !choice.step.calibrated {
        flags.push(format!(
            "uncalibrated: no training rows for {} {}",
            c.cand.gpu.architecture, c.precision
        ));
    }
    if c.nodes > 1 && !c.fabric.fast_fabric {
        flags.push(format!(
            "multi-node over {} Gb/s without an RDMA fabric",
            c.fabric.network_gbits
        ));
    }
    if !c.fabric.nvlink_class && choice.layout.tp > 1 {
        flags.push("tensor parallelism over PCIe".into());
    }
    if !egress_known {
        flags
            .push("egress price of the data's provider not in data/egress.csv: not counted".into());
    }
    flags.sort();
    flags
}

/// Time and cost of one cluster running `choice`, or why it is rejected.
fn price(
    catalog: &Catalog,
    w: &TrainingWorkload,
    c: &Cluster<'_, '_>,
    choice: &LayoutChoice,
) -> Result<TrainingPlan, Miss> {
    let o = c.cand.offering;
    let (unit_price, on_demand) = unit_prices(w, c);
    let usd_per_hour = unit_price * c.nodes as f64;
    let step = &choice.step;
    let ideal_s = w.tokens / step.tokens_per_s;
    let input = resilience_input(w, c, ideal_s);
    let r = resilience(&input);
    if !r.wall_hours.is_finite() {
        let why = format!(
            "{}: interrupted {:.1} times per hour, faster than {:.0} s checkpoints can be written: never finishes",
            c.label(),
            r.interruptions_per_hour,
            input.checkpoint_s
        );
        return Err((RejectReason::MissesDeadline, f64::MAX, why));
    }
    let data = w
        .data
        .as_ref()
        .map(|d| data_move(catalog, d, &o.provider, &o.region));
    let egress_usd = data.as_ref().map_or(Some(0.0), |d| d.usd);
    let hours = r.wall_hours + data.as_ref().map_or(0.0, |d| d.hours);
    let compute_usd = usd_per_hour * r.wall_hours;
    let total = compute_usd + egress_usd.unwrap_or(0.0);
    check_goals(w, c, hours, total)?;
    let break_even = if c.spot {
        on_demand.and_then(|od| spot_break_even_rate(&input, unit_price, od))
    } else {
        None
    };
    let l = &choice.layout;
    let launch =
        super::training_launch::launch(w, choice, c.nodes, c.cand.gpus_per_instance, c.precision);
    Ok(TrainingPlan {
        rank: 0,
        provider: o.provider.clone(),
        instance_type: o.instance_type.clone(),
        region: o.region.clone(),
        gpu: c.cand.gpu.name.clone(),
        gpus_per_node: c.cand.gpus_per_instance,
        nodes: c.nodes,
        gpus: c.gpus(),
        spot: c.spot,
        precision: c.precision,
        tp: l.tp,
        pp: l.pp,
        dp: l.dp,
        zero_stage: l.zero,
        micro_batch: l.micro_batch,
        micro_batches: l.micro_batches,
        recompute: l.recompute,
        step_time_s: step.step_s,
        tokens_per_s: step.tokens_per_s,
        tokens_per_s_per_gpu: step.tokens_per_s_per_gpu,
        mfu: step.mfu,
        tflops_per_gpu: step.tflops_per_gpu,
        step_breakdown: step.clone(),
        peak_memory_gib: choice.peak_memory_gib,
        gpu_memory_gib: choice.gpu_memory_gib,
        ideal_hours: ideal_s / 3600.0,
        time_to_train_hours: hours,
        checkpoint_interval_min: r.checkpoint_interval_min,
        checkpoint_write_s: r.checkpoint_write_s,
        interruptions_per_hour: r.interruptions_per_hour,
        usd_per_hour,
        price_date: o.snapshot_date().map(str::to_string),
        compute_usd,
        egress_usd,
        data_route: data.map_or_else(|| "local".to_string(), |d| d.route),
        total_cost_usd: total,
        spot_break_even_preemptions_per_hour: break_even,
        fabric: c.fabric.label(),
        flags: plan_flags(c, choice, egress_usd.is_some()),
        launch_command: launch.command.clone(),
        launch,
    })
}

/// Best first by cost (or time), one plan per instance type × nodes × spot × precision
/// (its cheapest region), the top [`TRAINING_PLANS_SHOWN`].
fn rank(mut plans: Vec<TrainingPlan>, by_time: bool) -> Vec<TrainingPlan> {
    let key = |p: &TrainingPlan| {
        if by_time {
            (p.time_to_train_hours, p.total_cost_usd)
        } else {
            (p.total_cost_usd, p.time_to_train_hours)
        }
    };
    plans.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then_with(|| a.provider.cmp(&b.provider))
            .then_with(|| a.instance_type.cmp(&b.instance_type))
            .then_with(|| a.region.cmp(&b.region))
    });
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<TrainingPlan> = plans
        .into_iter()
        .filter(|p| {
            seen.insert((
                p.provider.clone(),
                p.instance_type.clone(),
                p.nodes,
                p.spot,
                p.precision,
            ))
        })
        .take(TRAINING_PLANS_SHOWN)
        .collect();
    for (i, p) in out.iter_mut().enumerate() {
        p.rank = i + 1;
    }
    out
}

fn training_hint(w: &TrainingWorkload, rejected: &Rejections) -> String {
    if let Some(h) = rejected.nearest(RejectReason::MissesDeadline) {
        return format!(
            "raise goals.deadline_hours (the fastest candidate needs {h:.1} h) or allow more GPUs (constraints.max_gpus = {})",
            w.max_gpus
        );
    }
    if let Some(c) = rejected.nearest(RejectReason::OverTotalBudget) {
        return format!("raise goals.max_usd: the cheapest candidate costs ${c:.0}");
    }
    if rejected.contains(RejectReason::DoesNotFit) {
        return "the job does not fit: allow more GPUs (constraints.max_gpus, max_nodes), LoRA/QLoRA, 8-bit Adam, or a shorter seq_len".into();
    }
    "no offering passes the constraints: widen providers, regions, geo or GPUs".into()
}

/// What runs a workload's launch command: torchtune for adapters, else its framework.
pub fn plan_training_framework(w: &TrainingWorkload) -> &'static str {
    match (w.method, w.framework) {
        (FineTuneMethod::Lora { .. } | FineTuneMethod::Qlora { .. }, _) => "torchtune",
        (_, Framework::Torchtitan) => "torchtitan",
        (_, Framework::Megatron) => "Megatron-LM",
    }
}
