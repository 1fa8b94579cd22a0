//! `plan_fleet`: the cheapest MIG packing of a fleet, on each MIG-capable GPU
//! type its constraints allow (or the one asked for), and the alternatives a
//! user would otherwise pick, priced the same way.

use super::alternatives::{alternatives, utilization, whole_gpu_fits};
use super::fleet::Fleet;
use super::geometry::{mig_gpu_names, MigGeometry};
use super::pack::{pack, GpuShapes, Packing, ServiceDemand, SliceOption};
use super::pricing::{buy_gpus, whole_gpu_offerings, InstancePurchase};
use super::report::{
    Baseline, FleetReport, GpuAssignment, GpuTypeResult, ProfileOption, ProfileRejection,
    ServiceSlices, SliceAssignment,
};
use super::sizing::{fit_on_device, DeviceFit};
use super::slice::mig_instance_gpu;
use crate::calibration::Calibration;
use crate::error::Result;
use gpuplan_catalog::{Catalog, GpuSpec};
use rayon::prelude::*;

/// A fleet's MIG plan on one GPU type.
pub(crate) struct TypePlan<'a> {
    pub gpu: &'a GpuSpec,
    pub geometry: MigGeometry,
    pub shapes: GpuShapes,
    /// Per service, per packed profile: the fit or why not.
    pub fits: Vec<Vec<std::result::Result<DeviceFit, String>>>,
    pub packing: Packing,
    pub purchase: Option<InstancePurchase>,
}

/// Plans the fleet on `gpu`, or on every MIG-capable GPU its constraints
/// allow, keeping the cheapest. An error only for a `gpu` the catalog lacks
/// or that has no MIG profiles; an infeasible fleet is a report with reasons.
pub fn plan_fleet(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    gpu: Option<&str>,
) -> Result<FleetReport> {
    let names = match gpu {
        Some(name) => vec![MigGeometry::of(catalog, name)?.gpu],
        None => mig_gpu_names(catalog),
    };
    let mut results = Vec::new();
    let mut plans = Vec::new();
    for name in names {
        match plan_on_type(catalog, cal, fleet, &name) {
            Ok(p) => {
                results.push(GpuTypeResult {
                    gpu: name,
                    total_gpus: Some(p.packing.gpus.len() as u32),
                    usd_per_hour: p.purchase.as_ref().map(|b| b.usd_per_hour),
                    reason: p
                        .purchase
                        .is_none()
                        .then(|| "no allowed offering to price it".into()),
                });
                plans.push(p);
            }
            Err(reason) => results.push(GpuTypeResult {
                gpu: name,
                total_gpus: None,
                usd_per_hour: None,
                reason: Some(reason),
            }),
        }
    }
    // Gpu-type order is catalog order; the cheapest priced plan wins (ties: fewer GPUs).
    let best = plans
        .into_iter()
        .filter(|p| p.purchase.is_some() || gpu.is_some())
        .min_by(|a, b| {
            let cost = |p: &TypePlan<'_>| {
                p.purchase
                    .as_ref()
                    .map_or(f64::INFINITY, |x| x.usd_per_hour)
            };
            cost(a)
                .total_cmp(&cost(b))
                .then(a.packing.gpus.len().cmp(&b.packing.gpus.len()))
        });
    Ok(match best {
        Some(p) => report(catalog, cal, fleet, p, results),
        None => infeasible(fleet, results),
    })
}

/// The MIG plan on one GPU type, or why there is none.
pub(crate) fn plan_on_type<'a>(
    catalog: &'a Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    name: &str,
) -> std::result::Result<TypePlan<'a>, String> {
    let gpu = catalog.gpu(name).map_err(|e| e.to_string())?;
    let geometry = MigGeometry::of(catalog, name).map_err(|e| e.to_string())?;
    let shapes = GpuShapes::new(&geometry)
        .ok_or_else(|| format!("{name}: too many MIG profiles to pack"))?;
    let packed = (0..geometry.profiles.len())
        .filter(|&i| shapes.packed_index(i).is_some())
        .count();
    let fits = size_services(catalog, cal, fleet, gpu, &geometry, &shapes, packed);
    let demands = demands(fleet, &fits);
    if let Some(s) = demands.iter().position(|d| d.options.is_empty()) {
        let largest = (0..packed)
            .max_by_key(|&k| geometry.profiles[shapes.geometry_index(k)].compute_slices)
            .unwrap_or(0);
        let why = fits[s][largest].as_ref().err().cloned().unwrap_or_default();
        return Err(format!(
            "service {:?} fits no MIG profile of {name} (largest {}: {why})",
            fleet.services[s].name,
            geometry.profiles[shapes.geometry_index(largest)].name
        ));
    }
    let packing = pack(&shapes, &demands).ok_or_else(|| format!("{name}: nothing to pack"))?;
    let offerings = whole_gpu_offerings(catalog, &fleet.services[0], gpu);
    let purchase = buy_gpus(&offerings, packing.gpus.len() as u32);
    Ok(TypePlan {
        gpu,
        geometry,
        shapes,
        fits,
        packing,
        purchase,
    })
}

/// Every service on every packed profile, in parallel.
fn size_services(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    gpu: &GpuSpec,
    geometry: &MigGeometry,
    shapes: &GpuShapes,
    packed: usize,
) -> Vec<Vec<std::result::Result<DeviceFit, String>>> {
    let devices: Vec<GpuSpec> = (0..packed)
        .map(|k| mig_instance_gpu(gpu, geometry, &geometry.profiles[shapes.geometry_index(k)]))
        .collect();
    let cells: Vec<(usize, usize)> = (0..fleet.services.len())
        .flat_map(|s| (0..packed).map(move |k| (s, k)))
        .collect();
    let sized: Vec<_> = cells
        .par_iter()
        .map(|&(s, k)| fit_on_device(catalog, cal, &fleet.services[s], &devices[k]))
        .collect();
    let mut out: Vec<Vec<_>> = vec![Vec::with_capacity(packed); fleet.services.len()];
    for ((s, _), fit) in cells.into_iter().zip(sized) {
        out[s].push(fit);
    }
    out
}

/// The packer's view of the sized services.
fn demands(
    fleet: &Fleet,
    fits: &[Vec<std::result::Result<DeviceFit, String>>],
) -> Vec<ServiceDemand> {
    fleet
        .services
        .iter()
        .zip(fits)
        .map(|(w, per_profile)| ServiceDemand {
            options: per_profile
                .iter()
                .enumerate()
                .filter_map(|(k, f)| {
                    f.as_ref().ok().map(|f| SliceOption {
                        profile: k,
                        instances: f.instances,
                    })
                })
                .collect(),
            min_gpus: w.constraints.min_replicas,
        })
        .collect()
}

/// The report of the chosen plan, with its alternatives.
fn report(
    catalog: &Catalog,
    cal: &Calibration,
    fleet: &Fleet,
    p: TypePlan<'_>,
    gpu_types: Vec<GpuTypeResult>,
) -> FleetReport {
    let gpus = assignments(fleet, &p);
    let services = service_rows(fleet, &p, &gpus);
    let total_gpus = gpus.len() as u32;
    let usd_per_hour = p.purchase.as_ref().map_or(0.0, |b| b.usd_per_hour);
    let whole = whole_gpu_fits(catalog, cal, fleet, p.gpu);
    let offerings = whole_gpu_offerings(catalog, &fleet.services[0], p.gpu);
    let baseline_gpus: u32 = whole
        .iter()
        .map(|f| f.as_ref().map_or(0, |f| f.instances))
        .sum();
    let baseline = Baseline {
        total_gpus: baseline_gpus,
        usd_per_hour: whole
            .iter()
            .all(|f| f.is_ok())
            .then(|| buy_gpus(&offerings, baseline_gpus).map(|b| b.usd_per_hour))
            .flatten(),
    };
    let mig_utilization = utilization(
        services.iter().map(|s| {
            let k = p
                .shapes
                .packed_index(p.geometry.profile_index(&s.profile).unwrap_or(0));
            let c = k.map_or(0, |k| {
                p.geometry.profiles[p.shapes.geometry_index(k)].compute_slices
            });
            (&s.fit, f64::from(c) / f64::from(p.geometry.compute_slices))
        }),
        f64::from(total_gpus),
    );
    let alternatives = alternatives(catalog, cal, fleet, &p, &whole, mig_utilization, &baseline);
    let mut reasons = Vec::new();
    let within_budget = fleet.max_usd_per_hour.is_none_or(|max| usd_per_hour <= max);
    if !within_budget {
        reasons.push(format!(
            "${usd_per_hour:.2}/h > the fleet's max_usd_per_hour ${:.2}/h",
            fleet.max_usd_per_hour.unwrap_or(0.0)
        ));
    }
    if p.purchase.is_none() {
        reasons.push(format!("no allowed offering of {} to buy", p.gpu.name));
    }
    FleetReport {
        fleet: fleet.name.clone(),
        feasible: reasons.is_empty(),
        gpu: Some(p.gpu.name.clone()),
        total_gpus,
        usd_per_hour,
        purchase: p.purchase.clone(),
        lower_bound_gpus: p.packing.lower_bound,
        gap_gpus: total_gpus.saturating_sub(p.packing.lower_bound),
        optimal: p.packing.optimal,
        method: Some(p.packing.method),
        baseline_whole_gpu: baseline,
        gpus,
        services,
        alternatives,
        gpu_types,
        reasons,
        notes: Vec::new(),
    }
}

/// The packed GPUs with their layouts, instances assigned to slices.
fn assignments(fleet: &Fleet, p: &TypePlan<'_>) -> Vec<GpuAssignment> {
    p.packing
        .gpus
        .iter()
        .map(|items| {
            let packed: Vec<usize> = items.iter().map(|&(_, k)| k).collect();
            let mut free: Vec<(usize, usize)> = items.clone();
            let layout = p
                .shapes
                .layout_of(&packed)
                .map(|l| l.placements.clone())
                .unwrap_or_default();
            let slices = layout
                .iter()
                .map(|pl| {
                    let k = p.shapes.packed_index(pl.profile);
                    let at = free.iter().position(|&(_, kk)| Some(kk) == k);
                    let services = at
                        .map(|i| vec![fleet.services[free.remove(i).0].name.clone()])
                        .unwrap_or_default();
                    SliceAssignment {
                        profile: p.geometry.profiles[pl.profile].name.clone(),
                        start: pl.start,
                        services,
                    }
                })
                .collect();
            GpuAssignment {
                gpu: p.gpu.name.clone(),
                layout: slices,
            }
        })
        .collect()
}

/// Per service: the profile taken, its fit, where it runs, its other options.
fn service_rows(fleet: &Fleet, p: &TypePlan<'_>, gpus: &[GpuAssignment]) -> Vec<ServiceSlices> {
    let name_of = |k: usize| p.geometry.profiles[p.shapes.geometry_index(k)].name.clone();
    let size_of = |k: usize| {
        let prof = &p.geometry.profiles[p.shapes.geometry_index(k)];
        (prof.compute_slices, prof.memory_slices)
    };
    fleet
        .services
        .iter()
        .enumerate()
        .filter_map(|(s, w)| {
            let fits = &p.fits[s];
            let served: Vec<usize> = (0..fits.len()).filter(|&k| fits[k].is_ok()).collect();
            let option = (0..fits.len())
                .filter(|&k| fits[k].is_ok())
                .nth(p.packing.choice[s])
                .unwrap_or(0);
            let smallest = served
                .iter()
                .copied()
                .min_by_key(|&k| {
                    (
                        size_of(k),
                        fits[k].as_ref().map_or(u32::MAX, |f| f.instances),
                    )
                })
                .unwrap_or(option);
            Some(ServiceSlices {
                name: w.name.clone(),
                model: w.model.id.clone(),
                profile: name_of(option),
                smallest_profile: name_of(smallest),
                // The packer only takes options that fit.
                fit: fits[option].clone().ok()?,
                on_gpus: gpus
                    .iter()
                    .enumerate()
                    .filter(|(_, g)| g.layout.iter().any(|sl| sl.services.contains(&w.name)))
                    .map(|(i, _)| i)
                    .collect(),
                options: served
                    .iter()
                    .map(|&k| ProfileOption {
                        profile: name_of(k),
                        instances: fits[k].as_ref().map_or(0, |f| f.instances),
                    })
                    .collect(),
                simulated: None,
                rejected_profiles: (0..fits.len())
                    .filter_map(|k| {
                        fits[k].as_ref().err().map(|why| ProfileRejection {
                            profile: name_of(k),
                            reason: why.clone(),
                        })
                    })
                    .collect(),
            })
        })
        .collect()
}

/// The report when no GPU type can serve the fleet.
fn infeasible(fleet: &Fleet, gpu_types: Vec<GpuTypeResult>) -> FleetReport {
    let reasons = gpu_types
        .iter()
        .filter_map(|t| t.reason.as_ref().map(|r| format!("{}: {r}", t.gpu)))
        .collect();
    FleetReport {
        fleet: fleet.name.clone(),
        feasible: false,
        gpu: None,
        gpus: Vec::new(),
        total_gpus: 0,
        usd_per_hour: 0.0,
        purchase: None,
        lower_bound_gpus: 0,
        gap_gpus: 0,
        optimal: false,
        method: None,
        baseline_whole_gpu: Baseline {
            total_gpus: 0,
            usd_per_hour: None,
        },
        services: Vec::new(),
        alternatives: Vec::new(),
        gpu_types,
        reasons,
        notes: Vec::new(),
    }
}
