//! Prices of GPUs for a fleet: whole GPUs come in instances of a fixed count
//! (a p4d holds 8 A100s), so G GPUs cost ⌈G / count⌉ instances of the
//! cheapest offering; fractional offerings (AWS g6f) are priced per instance.
//! On-demand list prices (discounts and spot are the single-service
//! planner's business).

use crate::plan::offering_allowed;
use crate::workload::InferenceWorkload;
use gpuplan_catalog::{Catalog, GpuSpec, Offering};
use serde::Serialize;

/// The instances bought for a number of GPUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstancePurchase {
    /// Provider.
    pub provider: String,
    /// Instance type.
    pub instance_type: String,
    /// Region.
    pub region: String,
    /// GPUs per instance (a fraction for fractional offerings).
    pub gpus_per_instance: f64,
    /// Instances bought.
    pub instances: u32,
    /// On-demand price per instance-hour, USD.
    pub usd_per_instance_hour: f64,
    /// Total, USD per hour.
    pub usd_per_hour: f64,
}

/// The allowed offerings of one GPU with a whole number of GPUs and an
/// on-demand price, as (offering, GPUs per instance).
pub fn whole_gpu_offerings<'a>(
    catalog: &'a Catalog,
    w: &InferenceWorkload,
    gpu: &GpuSpec,
) -> Vec<(&'a Offering, u32)> {
    catalog
        .offerings()
        .iter()
        .filter(|o| o.gpu.as_deref() == Some(gpu.name.as_str()))
        .filter(|o| o.accelerator_count >= 1.0 && o.accelerator_count.fract() == 0.0)
        .filter(|o| o.price_per_hour.is_some() && offering_allowed(catalog, w, o, gpu))
        // accelerator_count is a whole number ≥ 1, bounded by the catalog loader.
        .map(|o| (o, o.accelerator_count as u32))
        .collect()
}

/// The cheapest way to buy `gpus` GPUs from these offerings.
pub fn buy_gpus(offerings: &[(&Offering, u32)], gpus: u32) -> Option<InstancePurchase> {
    offerings
        .iter()
        .filter_map(|&(o, per)| {
            let price = o.price_per_hour?;
            // Whole instances that hold `gpus` GPUs.
            let instances = gpus.div_ceil(per);
            Some(purchase(o, f64::from(per), instances, price))
        })
        .min_by(|a, b| a.usd_per_hour.total_cmp(&b.usd_per_hour))
}

/// The allowed fractional offerings (fewer than one GPU per instance) with
/// an on-demand price, cheapest per (GPU, fraction) first.
pub fn fractional_offerings<'a>(
    catalog: &'a Catalog,
    w: &InferenceWorkload,
) -> Vec<(&'a Offering, &'a GpuSpec)> {
    let mut out: Vec<(&Offering, &GpuSpec)> = catalog
        .offerings()
        .iter()
        .filter(|o| o.accelerator_count < 1.0 && o.price_per_hour.is_some())
        .filter_map(|o| {
            let gpu = catalog.gpu(o.gpu.as_deref()?).ok()?;
            offering_allowed(catalog, w, o, gpu).then_some((o, gpu))
        })
        .collect();
    out.sort_by(|a, b| {
        (a.1.name.as_str(), a.0.accelerator_count)
            .partial_cmp(&(b.1.name.as_str(), b.0.accelerator_count))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.0.list_price().total_cmp(&b.0.list_price()))
    });
    // Keep the cheapest region of each (GPU, fraction).
    out.dedup_by(|b, a| a.1.name == b.1.name && a.0.accelerator_count == b.0.accelerator_count);
    out
}

/// A purchase of `instances` of one offering.
pub fn purchase(
    o: &Offering,
    gpus_per_instance: f64,
    instances: u32,
    price: f64,
) -> InstancePurchase {
    InstancePurchase {
        provider: o.provider.clone(),
        instance_type: o.instance_type.clone(),
        region: o.region.clone(),
        gpus_per_instance,
        instances,
        usd_per_instance_hour: price,
        // Instances times the price of one.
        usd_per_hour: f64::from(instances) * price,
    }
}
