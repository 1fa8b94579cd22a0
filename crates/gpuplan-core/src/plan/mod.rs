//! `plan`: the SLO-aware, cost-optimal deployment search over the catalog.
//!
//! Candidates are offering × precision × TP/PP layout × batch limit. The
//! search runs in four named steps, one module each:
//! 1. [`candidates`]: offerings that pass the constraints, and their layouts;
//! 2. [`capacity`]: per (GPU, precision, layout), the memory model and the
//!    batch cap with the most requests/s within the SLO;
//! 3. [`cost`]: replicas and instances for the peak, $/hour, latency at peak;
//! 4. [`frontier`]: ranking, folding regions, the Pareto frontier.
//!
//! Every rejected candidate is counted under a typed reason with its nearest
//! miss as the example ([`rejections`]).

mod candidates;
mod capacity;
mod cost;
mod frontier;
mod launch;
mod rejections;
mod report;
pub mod training;
pub mod training_launch;

pub use candidates::region_in_geo;
pub(crate) use candidates::ReplicaKey;
pub(crate) use capacity::replica_spec;
pub use capacity::BATCH_CAPS;
pub use cost::MAX_REPLICAS;
pub use rejections::{RejectReason, Rejection};
pub use report::{
    Derivation, Plan, PlanOptions, PlanReport, PriceFlag, SimulatedTails, Verification,
};

use crate::calibration::Calibration;
use crate::check::check_replica;
use crate::workload::{InferenceWorkload, PriceTrust};
pub(crate) use candidates::offering_allowed;
pub(crate) use candidates::{passing_offerings, Candidate};
pub(crate) use capacity::context_p99;
pub(crate) use capacity::{evaluate_replica, CapacityContext};
use capacity::{ReplicaOutcome, ReplicaRejection};
use cost::{price_plan, Purchase};
use gpuplan_catalog::{Catalog, GpuSpec};
pub(crate) use launch::{max_model_len, replica_launch};
use rayon::prelude::*;
pub(crate) use rejections::Rejections;
use std::collections::{HashMap, HashSet};

/// Runs the search.
pub fn plan(
    catalog: &Catalog,
    w: &InferenceWorkload,
    cal: &Calibration,
    options: PlanOptions,
) -> PlanReport {
    let mut rejected = Rejections::default();
    let passing = passing_offerings(catalog, &w.constraints, &mut rejected);
    let cx = CapacityContext {
        workload: w,
        cal,
        ca2: w.arrival_cv2,
        cs2: service_cv2(w),
        prebuilt_engine: false,
    };
    let outcomes = evaluate_replicas(catalog, &cx, &passing);
    let (plans, candidates_evaluated) =
        price_candidates(catalog, &cx, &passing, &outcomes, &mut rejected);
    let distinct = frontier::rank_distinct(plans);
    let mut pareto = frontier::pareto(&distinct);
    let feasible = distinct.len();
    let mut top: Vec<Plan> = distinct.into_iter().take(options.top.max(1)).collect();
    frontier::assign_ranks(&mut top, &mut pareto);
    let hint = (feasible == 0).then(|| rejections::hint(w, &rejected));
    PlanReport {
        workload: w.name.clone(),
        model: w.model.id.clone(),
        plans: top,
        pareto,
        rejected: rejected.into_map(),
        feasible,
        candidates_evaluated,
        hint,
        verification: None,
    }
}

/// Squared coefficient of variation of a request's service time, from the
/// output length's spread: p99 ≈ mean + 2.326 σ for a normal tail.
/// One replica configuration: GPU, precision, split and serving engine.
#[derive(Debug, Clone, Copy)]
pub struct ReplicaConfig<'a> {
    /// The GPU of every member.
    pub gpu: &'a GpuSpec,
    /// Weight precision.
    pub precision: gpuplan_catalog::Precision,
    /// TP × PP.
    pub layout: crate::layout::Layout,
    /// The serving engine.
    pub engine: crate::engine::Engine,
}

/// One replica's capacity within a workload's SLO.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ReplicaCapacity {
    /// Highest arrival rate whose p99s meet every SLO (and the utilisation
    /// cap), requests/s.
    pub capacity_rps: f64,
    /// The batch cap that gives it.
    pub batch_cap: u64,
    /// Throughput bound at that cap (requests/s at 100% utilisation).
    pub max_rps: f64,
    /// p99 TPOT at the capacity, ms.
    pub tpot_p99_ms: f64,
}

/// The capacity within `w`'s SLO of one replica of `w.model` on `layout`
/// GPUs of `gpu` at `precision`: the quantity `plan` sizes replicas with,
/// through the same validation layer and tail model. `prebuilt_engine`: the
/// engine is built offline (TensorRT-LLM), so loading never holds 16-bit
/// weights. `engine` serves it. The error says why the configuration cannot
/// serve the workload.
pub fn replica_capacity(
    catalog: &Catalog,
    w: &InferenceWorkload,
    replica: &ReplicaConfig<'_>,
    cal: &Calibration,
    prebuilt_engine: bool,
) -> Result<ReplicaCapacity, String> {
    let ReplicaConfig {
        gpu,
        precision,
        layout,
        engine,
    } = *replica;
    let cx = CapacityContext {
        workload: w,
        cal,
        ca2: w.arrival_cv2,
        cs2: service_cv2(w),
        prebuilt_engine,
    };
    let key = ReplicaKey {
        gpu: gpu.name.clone(),
        precision,
        layout,
        engine,
    };
    let spec = capacity::replica_spec(w, gpu, &key);
    let checked = check_replica(&spec, catalog, w.variant).map_err(|violations| {
        violations
            .first()
            .map(ToString::to_string)
            .unwrap_or_else(|| "the configuration is not valid".into())
    })?;
    let choice = evaluate_replica(&cx, &key, &checked)
        .0
        .map_err(|r| r.example)?;
    Ok(ReplicaCapacity {
        capacity_rps: choice.cap.capacity_rps,
        batch_cap: choice.cap.batch,
        max_rps: choice.cap.max_rps,
        tpot_p99_ms: choice.cap.tpot_at_capacity_ms,
    })
}

/// Squared coefficient of variation of a request's output length: of the
/// lognormal fitted to its mean and p99, the distribution the tail model
/// and the simulator draw lengths from. A slot's service time varies with
/// it over its decode share ([`crate::tails`]).
pub(crate) fn service_cv2(w: &InferenceWorkload) -> f64 {
    crate::tails::lognormal_cv2(w.output_tokens.mean, w.output_tokens.p99)
}

/// Evaluates every distinct (GPU, precision, layout) once, in parallel. Each
/// goes through the one validation layer every verb uses
/// ([`crate::check::check_replica`]: accelerator, precision and the
/// checkpoint vLLM serves on that GPU, layout, context, engine limits).
fn evaluate_replicas(
    catalog: &Catalog,
    cx: &CapacityContext<'_>,
    passing: &[Candidate<'_>],
) -> HashMap<ReplicaKey, ReplicaOutcome> {
    let w = cx.workload;
    let mut seen = HashSet::new();
    let mut keys: Vec<(ReplicaKey, &GpuSpec)> = Vec::new();
    for cand in passing {
        for &precision in &w.precisions {
            for (layout, _) in cand.layouts(w.constraints.max_gpus_per_replica) {
                for &engine in &w.engines {
                    let key = ReplicaKey {
                        gpu: cand.gpu.name.clone(),
                        precision,
                        layout,
                        engine,
                    };
                    if seen.insert(key.clone()) {
                        keys.push((key, cand.gpu));
                    }
                }
            }
        }
    }
    keys.into_par_iter()
        .map(|(key, gpu)| {
            let spec = capacity::replica_spec(cx.workload, gpu, &key);
            let outcome = match check_replica(&spec, catalog, w.variant) {
                Err(violations) => (
                    Err(ReplicaRejection::from_violations(gpu, &key, &violations)),
                    0,
                ),
                Ok(checked) => evaluate_replica(cx, &key, &checked),
            };
            (key, outcome)
        })
        .collect()
}

/// The prices a workload may pay for an offering: on-demand, and spot when allowed.
fn price_options(w: &InferenceWorkload, cand: &Candidate<'_>) -> Vec<(bool, f64)> {
    let o = cand.offering;
    let mut out = Vec::new();
    if let Some(od) = o.price_per_hour {
        out.push((false, od));
    }
    if w.constraints.spot {
        if let Some(sp) = o.spot_price_per_hour {
            out.push((true, sp));
        }
    }
    out
}

/// What the catalog flags about the price a plan would pay (spot or on-demand).
fn price_flags(catalog: &Catalog, cand: &Candidate<'_>, spot: bool) -> Vec<PriceFlag> {
    catalog
        .offering_anomalies(cand.offering)
        .into_iter()
        .filter(|a| {
            if spot {
                a.affects.spot()
            } else {
                a.affects.on_demand()
            }
        })
        .map(|a| PriceFlag {
            kind: a.kind,
            reason: a.reason.clone(),
        })
        .collect()
}

/// Prices every offering × precision × layout whose replica is feasible;
/// returns the plans within budget and the candidates evaluated.
fn price_candidates(
    catalog: &Catalog,
    cx: &CapacityContext<'_>,
    passing: &[Candidate<'_>],
    outcomes: &HashMap<ReplicaKey, ReplicaOutcome>,
    rejected: &mut Rejections,
) -> (Vec<Plan>, usize) {
    let w = cx.workload;
    let mut evaluated = 0usize;
    let mut plans = Vec::new();
    for cand in passing {
        for &precision in &w.precisions {
            for ((layout, nodes), &engine) in cand
                .layouts(w.constraints.max_gpus_per_replica)
                .into_iter()
                .flat_map(|l| w.engines.iter().map(move |e| (l, e)))
            {
                let key = ReplicaKey {
                    gpu: cand.gpu.name.clone(),
                    precision,
                    layout,
                    engine,
                };
                let (outcome, caps_tried) = &outcomes[&key];
                evaluated += (*caps_tried).max(1);
                let choice = match outcome {
                    Err(r) => {
                        rejected.add(r.reason, 1, r.miss, || r.example.clone());
                        continue;
                    }
                    Ok(choice) => choice,
                };
                for (spot, list_price) in price_options(w, cand) {
                    let flags = price_flags(catalog, cand, spot);
                    if w.pricing.trust == PriceTrust::Strict && !flags.is_empty() {
                        let o = cand.offering;
                        rejected.add(RejectReason::UntrustedPrice, 1, None, || {
                            format!(
                                "{} {} ({}): {}",
                                o.provider, o.instance_type, o.region, flags[0].reason
                            )
                        });
                        continue;
                    }
                    let buy = Purchase {
                        candidate: cand,
                        layout,
                        nodes,
                        choice,
                        spot,
                        list_price,
                    };
                    if let Some(mut p) = price_within_budget(catalog, cx, &buy, rejected) {
                        p.price_flags = flags;
                        plans.push(p);
                    }
                }
            }
        }
    }
    (plans, evaluated)
}

/// Prices one purchase and checks the budget; rejections are recorded.
fn price_within_budget(
    catalog: &Catalog,
    cx: &CapacityContext<'_>,
    buy: &Purchase<'_>,
    rejected: &mut Rejections,
) -> Option<Plan> {
    let o = buy.candidate.offering;
    let mut plan = match price_plan(cx, buy) {
        Ok(p) => p,
        Err((reason, why)) => {
            rejected.add(reason, 1, None, || {
                format!("{} {} ({}): {why}", o.provider, o.instance_type, o.region)
            });
            return None;
        }
    };
    if let Some(r) = catalog.region(&o.provider, &o.region) {
        plan.location = match (r.location.is_empty(), r.country.is_empty()) {
            (_, true) => r.location.clone(),
            (true, false) => r.country.clone(),
            (false, false) => format!("{}, {}", r.location, r.country),
        };
    }
    if let Some(max) = cx.workload.constraints.max_usd_per_hour {
        if plan.usd_per_hour > max {
            rejected.add(RejectReason::OverBudget, 1, Some(plan.usd_per_hour), || {
                format!(
                    "{} {} × {} ({}): ${:.2}/h > ${max:.2}/h",
                    o.provider, plan.instances, o.instance_type, o.region, plan.usd_per_hour
                )
            });
            return None;
        }
    }
    Some(plan)
}
