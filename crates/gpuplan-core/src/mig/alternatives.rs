//! What a user would otherwise do with a fleet, priced like the MIG plan:
//! one or more whole GPUs per service, fractional cloud GPUs, time-slicing
//! (or MPS) without isolation, and a heterogeneous mix (each service on its
//! own cheapest GPU type, Mélange-style, from the model).

use super::fleet::Fleet;
use super::fleet_plan::TypePlan;
use super::pricing::{buy_gpus, fractional_offerings, whole_gpu_offerings};
use super::report::{Alternative, AlternativeLine, Baseline};
use super::sizing::{fit_on_device, DeviceFit};
use super::slice::fractional_gpu;
use crate::calibration::Calibration;
use crate::plan::{plan, PlanOptions};
use crate::workload::InferenceWorkload;
use gpuplan_catalog::{Catalog, GpuSpec};
use rayon::prelude::*;

/// Time shares are eighths of a GPU: the granularity of MIG's memory slices,
/// so the two sharing schemes are compared at the same grain.
pub const TIME_SHARE_STEPS: u32 = 8;

/// Result of sizing one service on some device.
type Fit = Result<DeviceFit, String>;

/// Each service on whole GPUs of `gpu` (one device per instance).
pub(crate) fn whole_gpu_fits(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    gpu: &GpuSpec,
) -> Vec<Fit> {
    fleet
        .services
        .par_iter()
        .map(|w| fit_on_device(catalog, cal, w, gpu))
        .collect()
}

/// Share of the bought GPUs' compute doing work at the peak: each instance
/// contributes its device's share of a GPU times its load over its capacity.
pub(crate) fn utilization<'a>(fits: impl Iterator<Item = (&'a DeviceFit, f64)>, gpus: f64) -> f64 {
    if gpus <= 0.0 {
        return 0.0;
    }
    let busy: f64 = fits
        .map(|(f, share)| {
            f64::from(f.instances)
                * share
                * (f.load_requests_per_s / f.capacity_requests_per_s).min(1.0)
        })
        .sum();
    busy / gpus
}

/// The MIG plan and the four alternatives.
pub(crate) fn alternatives(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    p: &TypePlan<'_>,
    whole: &[Fit],
    mig_utilization: f64,
    baseline: &Baseline,
) -> Vec<Alternative> {
    let mig = Alternative {
        name: "mig".into(),
        description: format!("MIG slices of {} packed onto shared GPUs", p.gpu.name),
        isolated: true,
        gpus: p.packing.gpus.len() as f64,
        usd_per_hour: p.purchase.as_ref().map(|b| b.usd_per_hour),
        utilization: mig_utilization,
        lines: p
            .purchase
            .iter()
            .map(|b| AlternativeLine {
                service: "all".into(),
                device: format!("{} ({} × {})", p.gpu.name, b.instances, b.instance_type),
                instances: b.instances,
                usd_per_hour: Some(b.usd_per_hour),
            })
            .collect(),
        notes: Vec::new(),
    };
    vec![
        mig,
        whole_gpu(fleet, p.gpu, whole, baseline),
        time_sharing(catalog, cal, fleet, p),
        fractional(catalog, cal, fleet, p.gpu, whole),
        heterogeneous(catalog, cal, fleet),
    ]
}

fn whole_gpu(fleet: &Fleet, gpu: &GpuSpec, whole: &[Fit], baseline: &Baseline) -> Alternative {
    let mut notes = Vec::new();
    let mut lines = Vec::new();
    for (w, f) in fleet.services.iter().zip(whole) {
        match f {
            Ok(f) => lines.push(AlternativeLine {
                service: w.name.clone(),
                device: gpu.name.clone(),
                instances: f.instances,
                usd_per_hour: None,
            }),
            Err(why) => notes.push(format!(
                "{} does not run on one {}: {why}",
                w.name, gpu.name
            )),
        }
    }
    let ok: Vec<(&DeviceFit, f64)> = whole
        .iter()
        .filter_map(|f| f.as_ref().ok())
        .map(|f| (f, 1.0))
        .collect();
    Alternative {
        name: "whole_gpu".into(),
        description: format!("one or more whole {} per service", gpu.name),
        isolated: true,
        gpus: f64::from(baseline.total_gpus),
        usd_per_hour: baseline.usd_per_hour,
        utilization: utilization(ok.into_iter(), f64::from(baseline.total_gpus)),
        lines,
        notes,
    }
}

/// Time-slicing or MPS: each service instance takes the smallest number of
/// eighths of a GPU whose share of compute, bandwidth and memory serves it;
/// shares are packed first fit decreasing, eight to a GPU.
fn time_sharing(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    p: &TypePlan<'_>,
) -> Alternative {
    let shares: Vec<Option<(u32, DeviceFit)>> = fleet
        .services
        .par_iter()
        .map(|w| {
            (1..=TIME_SHARE_STEPS).find_map(|k| {
                let device = fractional_gpu(p.gpu, f64::from(k) / f64::from(TIME_SHARE_STEPS));
                fit_on_device(catalog, cal, w, &device).ok().map(|f| (k, f))
            })
        })
        .collect();
    let mut notes = vec![
        "no isolation: services share L2, bandwidth and SMs; a neighbour's burst slows the others beyond the modelled share, memory limits are a convention (vLLM gpu_memory_utilization), one fault or OOM takes down the GPU's services".to_string(),
    ];
    let mut items = Vec::new();
    let mut lines = Vec::new();
    for (s, (w, share)) in fleet.services.iter().zip(&shares).enumerate() {
        match share {
            Some((k, f)) => {
                let spread = w.constraints.min_replicas.min(f.instances);
                items.extend((0..f.instances).map(|i| (*k, s, i < spread)));
                lines.push(AlternativeLine {
                    service: w.name.clone(),
                    device: format!("{} × {k}/{TIME_SHARE_STEPS} time share", p.gpu.name),
                    instances: f.instances,
                    usd_per_hour: None,
                });
            }
            None => notes.push(format!("{} needs a whole {}", w.name, p.gpu.name)),
        }
    }
    let gpus = pack_shares(&mut items);
    let offerings = whole_gpu_offerings(catalog, &fleet.services[0], p.gpu);
    let served = shares.iter().all(Option::is_some);
    let fits = shares
        .iter()
        .flatten()
        .map(|(k, f)| (f, f64::from(*k) / f64::from(TIME_SHARE_STEPS)));
    Alternative {
        name: "time_sharing".into(),
        description: format!(
            "time-slicing / MPS on whole {} without isolation",
            p.gpu.name
        ),
        isolated: false,
        gpus: f64::from(gpus),
        usd_per_hour: served
            .then(|| buy_gpus(&offerings, gpus).map(|b| b.usd_per_hour))
            .flatten(),
        utilization: utilization(fits, f64::from(gpus)),
        lines,
        notes,
    }
}

/// First fit decreasing of (eighths, service, spread) items into GPUs of
/// [`TIME_SHARE_STEPS`] eighths; a spread item avoids GPUs already hosting
/// its service. Returns the GPUs used.
fn pack_shares(items: &mut [(u32, usize, bool)]) -> u32 {
    items.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)));
    let mut bins: Vec<(u32, Vec<usize>)> = Vec::new();
    for &(k, s, spread) in items.iter() {
        let slot = bins.iter().position(|(used, hosts)| {
            used + k <= TIME_SHARE_STEPS && !(spread && hosts.contains(&s))
        });
        match slot {
            Some(i) => {
                bins[i].0 += k;
                bins[i].1.push(s);
            }
            None => bins.push((k, vec![s])),
        }
    }
    bins.len() as u32
}

/// Per service, the fractional offering (its index in `offerings`) that
/// serves it for the least, with its fit and its cost per hour (instances
/// times the price of one); `None` where no fraction serves it.
fn cheapest_fraction_per_service(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    offerings: &[(&gpuplan_catalog::Offering, &GpuSpec)],
) -> Vec<Option<(usize, DeviceFit, f64)>> {
    fleet
        .services
        .par_iter()
        .map(|w| {
            offerings
                .iter()
                .enumerate()
                .filter_map(|(i, (o, g))| {
                    let f = fit_on_device(catalog, cal, w, &fractional_gpu(g, o.accelerator_count))
                        .ok()?;
                    let cost = f64::from(f.instances) * o.price_per_hour?;
                    Some((i, f, cost))
                })
                .min_by(|a, b| a.2.total_cmp(&b.2))
        })
        .collect()
}

/// Each service on the cheapest fractional offering that serves it; the
/// others on whole GPUs of the MIG plan's type.
fn fractional(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    gpu: &GpuSpec,
    whole: &[Fit],
) -> Alternative {
    let offerings = fractional_offerings(catalog, &fleet.services[0]);
    let whole_offerings = whole_gpu_offerings(catalog, &fleet.services[0], gpu);
    let per_service = cheapest_fraction_per_service(catalog, cal, fleet, &offerings);
    let mut lines = Vec::new();
    let mut notes = Vec::new();
    let mut whole_services = Vec::new();
    let (mut gpus, mut usd, mut busy) = (0.0, Some(0.0), 0.0);
    for ((w, choice), fallback) in fleet.services.iter().zip(&per_service).zip(whole) {
        let whole_cost = fallback
            .as_ref()
            .ok()
            .and_then(|f| buy_gpus(&whole_offerings, f.instances))
            .map(|b| b.usd_per_hour);
        let fraction_wins = match (choice, whole_cost) {
            (Some((_, _, c)), Some(w)) => *c <= w,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let choice = if fraction_wins { choice } else { &None };
        let (device, instances, cost, share, fit) = match (choice, fallback) {
            (Some((i, f, cost)), _) => {
                let (o, g) = offerings[*i];
                (
                    format!("{} × {} ({})", g.name, o.accelerator_count, o.instance_type),
                    f.instances,
                    Some(*cost),
                    o.accelerator_count,
                    f,
                )
            }
            (None, Ok(f)) => {
                whole_services.push(w.name.clone());
                (gpu.name.clone(), f.instances, whole_cost, 1.0, f)
            }
            (None, Err(why)) => {
                notes.push(format!(
                    "{}: served by neither a fraction nor one {}: {why}",
                    w.name, gpu.name
                ));
                usd = None;
                continue;
            }
        };
        gpus += f64::from(instances) * share;
        busy += utilization(std::iter::once((fit, share)), 1.0);
        usd = usd.zip(cost).map(|(a, b)| a + b);
        lines.push(AlternativeLine {
            service: w.name.clone(),
            device,
            instances,
            usd_per_hour: cost,
        });
    }
    if !whole_services.is_empty() {
        notes.push(format!(
            "on whole {} (no fraction serves them for less): {}",
            gpu.name,
            whole_services.join(", ")
        ));
    }
    Alternative {
        name: "fractional".into(),
        description: "fractional cloud GPUs (e.g. AWS g6f), one service per instance, whole GPUs where no fraction is cheaper".into(),
        isolated: true,
        gpus,
        usd_per_hour: usd,
        utilization: if gpus > 0.0 { busy / gpus } else { 0.0 },
        lines,
        notes,
    }
}

/// Each service on its own cheapest whole-GPU plan of any type (the
/// single-service planner, on-demand) or fractional offering, whichever is cheaper.
fn heterogeneous(catalog: &Catalog, cal: &Calibration, fleet: &Fleet) -> Alternative {
    let fractions = fractional_offerings(catalog, &fleet.services[0]);
    let picks: Vec<Option<Pick>> = fleet
        .services
        .par_iter()
        .map(|w| cheapest_anywhere(catalog, cal, w, &fractions))
        .collect();
    let mut notes = vec!["whole-GPU plans are the single-service planner's (any GPU type, one GPU per replica, on-demand, each in its cheapest region)".to_string()];
    let mut lines = Vec::new();
    let (mut usd, mut gpus, mut busy) = (Some(0.0), 0.0, 0.0);
    for (w, pick) in fleet.services.iter().zip(picks) {
        match pick {
            Some(pick) => {
                usd = usd.zip(pick.line.usd_per_hour).map(|(a, b)| a + b);
                gpus += pick.gpus;
                busy += pick.busy_gpus;
                lines.push(pick.line);
            }
            None => {
                usd = None;
                notes.push(format!("{}: no plan on any GPU type", w.name));
            }
        }
    }
    Alternative {
        name: "heterogeneous".into(),
        description: "each service on its own cheapest GPU type (whole GPUs or a fraction)".into(),
        isolated: true,
        gpus,
        usd_per_hour: usd,
        utilization: if gpus > 0.0 { busy / gpus } else { 0.0 },
        lines,
        notes,
    }
}

/// One service's cheapest way to run alone.
struct Pick {
    line: AlternativeLine,
    /// GPUs billed (fractions count their share).
    gpus: f64,
    /// GPUs' worth of compute doing work at the peak.
    busy_gpus: f64,
}

/// The cheapest way to serve one service alone: the planner's best plan or
/// the cheapest fractional offering.
fn cheapest_anywhere(
    catalog: &Catalog,
    cal: &Calibration,
    w: &InferenceWorkload,
    fractions: &[(&gpuplan_catalog::Offering, &GpuSpec)],
) -> Option<Pick> {
    // On-demand, one GPU per replica: the services of a fleet are small, and
    // the single-GPU search is a tenth of the full one.
    let mut on_demand = w.clone();
    on_demand.constraints.spot = false;
    on_demand.constraints.max_gpus_per_replica = 1;
    let report = plan(catalog, &on_demand, cal, PlanOptions { top: 1 });
    let whole = report.plans.first().map(|p| {
        // GPUs billed, and those the replicas use times their load share.
        let billed = f64::from(p.instances * p.gpus_per_instance);
        let used = f64::from(p.replicas * p.gpus_per_replica);
        Pick {
            line: AlternativeLine {
                service: w.name.clone(),
                device: format!(
                    "{} × {} ({} {})",
                    p.gpu, billed, p.provider, p.instance_type
                ),
                instances: p.instances,
                usd_per_hour: Some(p.usd_per_hour),
            },
            gpus: billed,
            busy_gpus: used * p.utilization,
        }
    });
    let fraction = fractions
        .iter()
        .filter_map(|(o, g)| {
            let f = fit_on_device(catalog, cal, w, &fractional_gpu(g, o.accelerator_count)).ok()?;
            let share = o.accelerator_count;
            Some(Pick {
                line: AlternativeLine {
                    service: w.name.clone(),
                    device: format!("{} × {share} ({})", g.name, o.instance_type),
                    instances: f.instances,
                    // Instances times the price of one.
                    usd_per_hour: Some(f64::from(f.instances) * o.price_per_hour?),
                },
                gpus: f64::from(f.instances) * share,
                busy_gpus: utilization(std::iter::once((&f, share)), 1.0),
            })
        })
        .min_by(|a, b| cost(a).total_cmp(&cost(b)));
    [whole, fraction]
        .into_iter()
        .flatten()
        .min_by(|a, b| cost(a).total_cmp(&cost(b)))
}

fn cost(p: &Pick) -> f64 {
    p.line.usd_per_hour.unwrap_or(f64::INFINITY)
}
