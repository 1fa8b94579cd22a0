//! Step 1 of the search: the offerings that pass the workload's constraints,
//! and the TP/PP layouts each can host.

use super::rejections::{RejectReason, Rejections};
use crate::check::{check_accelerator, Spelling};
use crate::layout::Layout;
use crate::workload::{Constraints, InferenceWorkload};
use gpuplan_catalog::{Catalog, GpuSpec, Offering, Precision};

/// An offering that passed the constraints, with its GPU spec.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate<'a> {
    pub offering: &'a Offering,
    pub gpu: &'a GpuSpec,
    pub gpus_per_instance: u32,
}

impl Candidate<'_> {
    /// Layouts this offering can host, with the instances one replica spans.
    pub fn layouts(&self, max_gpus_per_replica: u32) -> Vec<(Layout, u32)> {
        layouts(
            self.gpus_per_instance,
            self.offering.has_fast_fabric(),
            max_gpus_per_replica,
        )
    }
}

/// What one replica configuration is: evaluated once, shared by every
/// offering of the same GPU.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ReplicaKey {
    pub gpu: String,
    pub precision: Precision,
    pub layout: Layout,
    pub engine: crate::engine::Engine,
}

/// Whether region `r` lies in geography `code` (one of [`crate::GEO_CODES`]):
/// EU and EEA by membership, EUROPE and the other continents by continent,
/// US by country.
pub fn region_in_geo(r: &gpuplan_catalog::Region, code: &str) -> bool {
    match code {
        "EU" => r.eu,
        "EEA" => r.eea,
        "EUROPE" => r.continent == "EU",
        "US" => r.country == "US",
        other => r.continent == other,
    }
}

/// Whether the offering's region satisfies the residency constraint.
fn residency_ok(catalog: &Catalog, c: &Constraints, o: &Offering) -> bool {
    if c.geo.is_empty() && c.countries.is_empty() {
        return true;
    }
    let Some(r) = catalog.region(&o.provider, &o.region) else {
        return false;
    };
    if r.country.is_empty() {
        return false;
    }
    let geo_ok = c.geo.iter().any(|g| region_in_geo(r, g));
    let country_ok = c.countries.is_empty() || c.countries.contains(&r.country);
    (c.geo.is_empty() || geo_ok) && country_ok
}

/// Why an offering fails the constraints, with an example line.
fn constraint_failure(
    catalog: &Catalog,
    c: &Constraints,
    region_patterns: &[glob::Pattern],
    o: &Offering,
    gpu: &GpuSpec,
) -> Option<(RejectReason, String)> {
    if !c.providers.is_empty() && !c.providers.contains(&o.provider) {
        let e = format!("{} {}: provider {}", o.instance_type, o.region, o.provider);
        return Some((RejectReason::ProviderNotAllowed, e));
    }
    if !region_patterns.is_empty() && !region_patterns.iter().any(|p| p.matches(&o.region)) {
        let e = format!("{} {}: region {}", o.provider, o.instance_type, o.region);
        return Some((RejectReason::RegionNotAllowed, e));
    }
    if !residency_ok(catalog, c, o) {
        let where_ = catalog
            .region(&o.provider, &o.region)
            .map(|r| format!("{} ({}, {})", r.region, r.country, r.location))
            .unwrap_or_else(|| format!("{} (location unknown)", o.region));
        let e = format!("{} {}: {where_}", o.provider, o.instance_type);
        return Some((RejectReason::OutsideResidency, e));
    }
    if (!c.gpus.is_empty() && !c.gpus.contains(&gpu.name)) || c.exclude_gpus.contains(&gpu.name) {
        let e = format!("{} {}: {}", o.provider, o.instance_type, gpu.name);
        return Some((RejectReason::GpuNotAllowed, e));
    }
    if check_accelerator(gpu, &Spelling::WORKLOAD).is_err() {
        let e = format!(
            "{} {}: {} ({})",
            o.provider, o.instance_type, gpu.name, gpu.vendor
        );
        return Some((RejectReason::AcceleratorNotModelled, e));
    }
    if o.accelerator_count < 1.0 || o.accelerator_count.fract() != 0.0 {
        let e = format!(
            "{} {}: {} × {}",
            o.provider, o.instance_type, o.accelerator_count, gpu.name
        );
        return Some((RejectReason::FractionalGpu, e));
    }
    let has_price = o.price_per_hour.is_some() || (c.spot && o.spot_price_per_hour.is_some());
    if !has_price {
        let e = format!(
            "{} {} {}: on-demand price not listed",
            o.provider, o.instance_type, o.region
        );
        return Some((RejectReason::NoPrice, e));
    }
    None
}

/// Whether an offering passes the workload's constraints (provider, region,
/// residency, GPU, a price), fractional GPUs included: the fleet planner
/// prices slices of GPUs and fractional offerings alike.
pub(crate) fn offering_allowed(
    catalog: &Catalog,
    w: &InferenceWorkload,
    o: &Offering,
    gpu: &GpuSpec,
) -> bool {
    let region_patterns: Vec<glob::Pattern> = w
        .constraints
        .regions
        .iter()
        .filter_map(|r| glob::Pattern::new(r).ok())
        .collect();
    let has_price =
        o.price_per_hour.is_some() || (w.constraints.spot && o.spot_price_per_hour.is_some());
    match constraint_failure(catalog, &w.constraints, &region_patterns, o, gpu) {
        None => true,
        Some((RejectReason::FractionalGpu, _)) => has_price,
        Some(_) => false,
    }
}

/// The offerings that pass the constraints; the others are counted in `rejected`.
pub(crate) fn passing_offerings<'a>(
    catalog: &'a Catalog,
    c: &Constraints,
    rejected: &mut Rejections,
) -> Vec<Candidate<'a>> {
    let region_patterns: Vec<glob::Pattern> = c
        .regions
        .iter()
        .filter_map(|r| glob::Pattern::new(r).ok())
        .collect();
    let mut passing = Vec::new();
    for o in catalog.offerings() {
        let gpu = o.gpu.as_ref().and_then(|name| catalog.gpu(name).ok());
        let Some(gpu) = gpu else {
            rejected.add(RejectReason::NoGpuSpec, 1, None, || {
                format!(
                    "{} {} ({}): no spec for `{}`",
                    o.provider, o.instance_type, o.region, o.accelerator
                )
            });
            continue;
        };
        if let Some((reason, example)) = constraint_failure(catalog, c, &region_patterns, o, gpu) {
            rejected.add(reason, 1, None, || example);
            continue;
        }
        passing.push(Candidate {
            offering: o,
            gpu,
            // accelerator_count is a whole number ≥ 1 here, bounded by the catalog loader.
            gpus_per_instance: o.accelerator_count as u32,
        });
    }
    passing
}

/// TP/PP layouts for an instance of `per_instance` GPUs, with the number of
/// instances one replica spans (more than one only over a fast fabric, with
/// TP inside an instance and one pipeline stage per instance).
pub(crate) fn layouts(per_instance: u32, fast_fabric: bool, max_gpus: u32) -> Vec<(Layout, u32)> {
    let mut out = Vec::new();
    let powers = [1u32, 2, 4, 8, 16];
    for &tp in &powers {
        for &pp in &powers {
            let g = tp * pp;
            if g <= per_instance && g <= max_gpus {
                out.push((Layout { tp, pp }, 1));
            }
        }
    }
    if fast_fabric && per_instance >= 2 {
        for nodes in [2u32, 4] {
            let g = per_instance.saturating_mul(nodes);
            if g <= max_gpus {
                out.push((
                    Layout {
                        tp: per_instance,
                        pp: nodes,
                    },
                    nodes,
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_stay_within_the_instance_without_fabric() {
        for (l, nodes) in layouts(8, false, 16) {
            assert!(l.gpus() <= 8);
            assert_eq!(nodes, 1);
        }
        assert!(layouts(8, true, 16)
            .iter()
            .any(|(l, n)| *n == 2 && l.gpus() == 16));
        assert!(layouts(8, true, 8).iter().all(|(l, _)| l.gpus() <= 8));
    }
}
