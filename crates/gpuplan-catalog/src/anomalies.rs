//! Price and offering sanity checks, computed once when a [`Catalog`](crate::Catalog) is built.
//!
//! Cloud price lists carry placeholder values, stale snapshots and rows whose shape cannot be
//! right (1024 vCPUs for eight GPUs, a PCIe instance mapped to an SXM part). The checks here do
//! not change or drop any row: they flag it, with a one-sentence reason that shows the numbers,
//! so a planner can distrust the price (or the shape) and say why.
//!
//! Every threshold is a named constant whose doc comment says why it has that value.

use crate::gpu::GpuSpec;
use crate::offering::Offering;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

/// Spot prices at or below this share of the on-demand price look like a floor or
/// placeholder value rather than a market price. Several sources write spot as exactly
/// 10 % of on-demand (AWS p6-b200 us-east-2, GCP A3 europe-north1; shared data README);
/// real spot discounts on GPU instances in the bundled data sit at 15–90 % of on-demand,
/// so 12 % leaves room for rounding around the 10 % placeholder without flagging real discounts.
pub const SPOT_FLOOR_SHARE: f64 = 0.12;

/// A per-GPU-hour on-demand price below this share of the GPU's cross-provider median is
/// flagged. Low-cost marketplaces sell at about half the median (RTX and A100 rows of vast
/// and RunPod), so 0.25 flags only prices a quarter of the market or less.
pub const GPU_HOUR_LOW_SHARE: f64 = 0.25;

/// A per-GPU-hour on-demand price above this multiple of the GPU's cross-provider median is
/// flagged. Hyperscaler list prices are legitimately about 3.2× the median of all providers
/// (Azure ND96isr H100 v5: $12.29 per GPU-hour against a $3.90 median), so 3× would flag
/// ordinary list prices; 4× flags prices no list explains.
pub const GPU_HOUR_HIGH_FACTOR: f64 = 4.0;

/// A GPU needs list prices from at least this many providers before its median stands for
/// "the market": one provider's median says nothing about whether that provider is the outlier.
pub const MIN_PROVIDERS_FOR_GPU_MEDIAN: usize = 2;

/// A region's on-demand price below this share of the median over the instance type's
/// other regions is flagged. Regional price differences of one instance type are within
/// ±40 % at AWS, Azure and GCP in the bundled data; the GCP A3 High rows at ~$5.4 per
/// GPU-hour in six regions against $11–14 elsewhere (shared data README) are at 0.45×.
pub const REGION_LOW_SHARE: f64 = 0.5;

/// A region's on-demand price above this multiple of the median over the instance type's
/// other regions is flagged (the mirror of [`REGION_LOW_SHARE`]).
pub const REGION_HIGH_FACTOR: f64 = 2.0;

/// An instance type needs prices in at least this many regions for a regional median:
/// with two regions either one could be the outlier.
pub const MIN_REGIONS_FOR_REGION_CHECK: usize = 3;

/// A provider that lists every instance type in every one of at least this many regions,
/// each at one identical price, is taken to list a price sheet, not regional availability
/// (Lambda: 23 instance types × 17 regions, one price each; shared data README). Two
/// regions at one price is common and says nothing.
pub const MIN_REGIONS_FOR_UNIFORM_LISTING: usize = 3;

/// More vCPUs per GPU than this is not a GPU server shape. The densest CPU hosts in the
/// bundled data give 64–75 vCPUs per GPU (AWS g4dn/g6.16xlarge: 64 vCPUs, one GPU;
/// Hyperbolic 1× H100: 75); a dual-socket host of two 192-core CPUs with SMT has 768
/// threads, 96 per GPU in an 8-GPU server. RunPod's 8× L40S lists 1024 vCPUs (128 per GPU).
pub const MAX_VCPUS_PER_GPU: f64 = 96.0;

/// Fewer vCPUs than this per whole GPU cannot feed the GPU (one host thread per GPU is the
/// least any engine runs with).
pub const MIN_VCPUS_PER_GPU: f64 = 1.0;

/// More host memory than this per GPU (GiB) suggests MiB written as GiB. The largest real
/// shape in the bundled data is Azure NV36adms A10 v5 with 880 GiB for one A10.
pub const MAX_HOST_GIB_PER_GPU: f64 = 1024.0;

/// A GPU memory size written in the instance name (`80GB`) may differ from the spec's
/// advertised capacity by this share at most (GB vs GiB rounding in names); more means the
/// row resolved to the wrong GPU variant.
pub const NAME_MEMORY_TOLERANCE: f64 = 0.1;

/// Name tokens like `24GB` larger than this are host memory (Nebius `1600gb`), not the
/// memory of one GPU (the largest GPU in the catalog has 288 GB).
pub const MAX_GPU_MEMORY_IN_NAME_GB: f64 = 300.0;

/// Why a price or offering row looks wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    /// The spot price is at or above the on-demand price.
    SpotNotBelowOnDemand,
    /// The spot price is a floor or placeholder share of on-demand ([`SPOT_FLOOR_SHARE`]).
    SpotAtFloor,
    /// The per-GPU-hour on-demand price is far from the GPU's cross-provider median.
    GpuHourPriceOutlier,
    /// The on-demand price of one region is far from the instance type's other regions.
    RegionPriceOutlier,
    /// The provider lists every instance type in every region at one price: availability by
    /// region is not known.
    RegionAvailabilityUnknown,
    /// The instance shape (GPU count, vCPUs, host memory, GPU variant, interconnect) cannot
    /// be right as written.
    InstanceShapeImplausible,
}

impl AnomalyKind {
    /// What the kind means, in one phrase.
    pub fn meaning(self) -> &'static str {
        match self {
            AnomalyKind::SpotNotBelowOnDemand => {
                "spot at or above on-demand: one of the two prices is wrong"
            }
            AnomalyKind::SpotAtFloor => "spot at a floor or placeholder share of on-demand",
            AnomalyKind::GpuHourPriceOutlier => {
                "per-GPU-hour price far from the GPU's cross-provider median"
            }
            AnomalyKind::RegionPriceOutlier => {
                "one region's price far from the same instance's other regions"
            }
            AnomalyKind::RegionAvailabilityUnknown => {
                "every instance listed in every region at one price: availability unknown"
            }
            AnomalyKind::InstanceShapeImplausible => {
                "GPU count, vCPUs, host memory or GPU variant cannot be right as written"
            }
        }
    }

    /// Every kind, in display order.
    pub const ALL: [AnomalyKind; 6] = [
        AnomalyKind::SpotNotBelowOnDemand,
        AnomalyKind::SpotAtFloor,
        AnomalyKind::GpuHourPriceOutlier,
        AnomalyKind::RegionPriceOutlier,
        AnomalyKind::RegionAvailabilityUnknown,
        AnomalyKind::InstanceShapeImplausible,
    ];

    /// The snake_case name used in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            AnomalyKind::SpotNotBelowOnDemand => "spot_not_below_on_demand",
            AnomalyKind::SpotAtFloor => "spot_at_floor",
            AnomalyKind::GpuHourPriceOutlier => "gpu_hour_price_outlier",
            AnomalyKind::RegionPriceOutlier => "region_price_outlier",
            AnomalyKind::RegionAvailabilityUnknown => "region_availability_unknown",
            AnomalyKind::InstanceShapeImplausible => "instance_shape_implausible",
        }
    }
}

impl fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AnomalyKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let key = s.trim().to_ascii_lowercase().replace('-', "_");
        AnomalyKind::ALL
            .into_iter()
            .find(|k| k.as_str() == key)
            .ok_or_else(|| {
                format!(
                    "unknown anomaly kind `{s}`: expected one of {}",
                    AnomalyKind::ALL.map(AnomalyKind::as_str).join(", ")
                )
            })
    }
}

/// Which price of a row an anomaly makes untrustworthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceUse {
    /// The on-demand price.
    OnDemand,
    /// The spot price.
    Spot,
    /// Both prices (or the row as a whole).
    Both,
}

impl PriceUse {
    /// Whether the on-demand price is affected.
    pub fn on_demand(self) -> bool {
        matches!(self, PriceUse::OnDemand | PriceUse::Both)
    }

    /// Whether the spot price is affected.
    pub fn spot(self) -> bool {
        matches!(self, PriceUse::Spot | PriceUse::Both)
    }
}

/// One flagged (provider, instance type, region) and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Anomaly {
    /// What looks wrong.
    pub kind: AnomalyKind,
    /// Provider id.
    pub provider: String,
    /// Instance type as the provider names it.
    pub instance_type: String,
    /// Region id.
    pub region: String,
    /// One sentence with the numbers, e.g. "spot $0.86/h ≥ on-demand $0.43/h".
    pub reason: String,
    /// Which price the anomaly makes untrustworthy.
    pub affects: PriceUse,
}

/// The anomalies of a catalog and an index by (provider, instance type, region).
#[derive(Debug, Clone, Default)]
pub(crate) struct AnomalyIndex {
    list: Vec<Anomaly>,
    /// provider → instance type → region → indexes into `list`; nested so lookups by `&str`
    /// allocate nothing.
    by_key: HashMap<String, HashMap<String, HashMap<String, Vec<usize>>>>,
}

impl AnomalyIndex {
    /// Runs every check over `offerings` (whose `gpu` is already resolved) and indexes the result.
    pub(crate) fn build(offerings: &[Offering], gpus: &[GpuSpec]) -> AnomalyIndex {
        let specs: HashMap<&str, &GpuSpec> = gpus.iter().map(|g| (g.name.as_str(), g)).collect();
        let mut found = Vec::new();
        spot_checks(offerings, &mut found);
        gpu_hour_outliers(offerings, &mut found);
        region_outliers(offerings, &mut found);
        uniform_listings(offerings, &mut found);
        shape_checks(offerings, &specs, &mut found);
        // One anomaly per kind and (provider, instance type, region): zones of a region collapse.
        let mut seen = BTreeSet::new();
        found.retain(|a: &Anomaly| {
            seen.insert((
                a.kind,
                a.provider.clone(),
                a.instance_type.clone(),
                a.region.clone(),
            ))
        });
        found.sort_by(|a, b| {
            (&a.provider, &a.instance_type, &a.region, a.kind).cmp(&(
                &b.provider,
                &b.instance_type,
                &b.region,
                b.kind,
            ))
        });
        let mut by_key: HashMap<String, HashMap<String, HashMap<String, Vec<usize>>>> =
            HashMap::new();
        for (i, a) in found.iter().enumerate() {
            by_key
                .entry(a.provider.clone())
                .or_default()
                .entry(a.instance_type.clone())
                .or_default()
                .entry(a.region.clone())
                .or_default()
                .push(i);
        }
        AnomalyIndex {
            list: found,
            by_key,
        }
    }

    pub(crate) fn all(&self) -> &[Anomaly] {
        &self.list
    }

    pub(crate) fn of(&self, provider: &str, instance_type: &str, region: &str) -> Vec<&Anomaly> {
        self.by_key
            .get(provider)
            .and_then(|m| m.get(instance_type))
            .and_then(|m| m.get(region))
            .map(|ix| ix.iter().map(|&i| &self.list[i]).collect())
            .unwrap_or_default()
    }
}

fn anomaly(o: &Offering, kind: AnomalyKind, affects: PriceUse, reason: String) -> Anomaly {
    Anomaly {
        kind,
        provider: o.provider.clone(),
        instance_type: o.instance_type.clone(),
        region: o.region.clone(),
        reason,
        affects,
    }
}

/// The median of `values` (NaN-free), None when empty.
fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Spot at or above on-demand, and spot at a floor share of on-demand.
fn spot_checks(offerings: &[Offering], out: &mut Vec<Anomaly>) {
    for o in offerings {
        let (Some(od), Some(spot)) = (o.price_per_hour, o.spot_price_per_hour) else {
            continue;
        };
        if spot >= od {
            // One of the two is wrong and the row cannot tell which (RunPod
            // L40S: on-demand $0.43 where public pages give ~$0.79–0.86), so
            // both prices are suspect.
            out.push(anomaly(
                o,
                AnomalyKind::SpotNotBelowOnDemand,
                PriceUse::Both,
                format!("spot ${spot:.2}/h ≥ on-demand ${od:.2}/h: one of the two is wrong"),
            ));
        } else if spot <= SPOT_FLOOR_SHARE * od {
            out.push(anomaly(
                o,
                AnomalyKind::SpotAtFloor,
                PriceUse::Spot,
                format!(
                    "spot ${spot:.2}/h is {:.1} % of on-demand ${od:.2}/h (≤ {:.0} %: a floor or placeholder value)",
                    spot / od * 100.0,
                    SPOT_FLOOR_SHARE * 100.0
                ),
            ));
        }
    }
}

/// On-demand USD per GPU-hour of a whole-GPU row with a resolved GPU.
fn gpu_hour_price(o: &Offering) -> Option<(&str, f64)> {
    let gpu = o.gpu.as_deref()?;
    let od = o.price_per_hour?;
    // Fractional slices (AWS g6f, Azure NV A10 v5) cost more per whole GPU by design.
    (o.accelerator_count >= 1.0).then(|| (gpu, od / o.accelerator_count))
}

/// Per-GPU-hour on-demand prices far from the median of per-provider medians of that GPU.
fn gpu_hour_outliers(offerings: &[Offering], out: &mut Vec<Anomaly>) {
    let mut by_gpu: BTreeMap<&str, BTreeMap<&str, Vec<f64>>> = BTreeMap::new();
    for o in offerings {
        if let Some((gpu, p)) = gpu_hour_price(o) {
            by_gpu
                .entry(gpu)
                .or_default()
                .entry(o.provider.as_str())
                .or_default()
                .push(p);
        }
    }
    // Median of per-provider medians: a provider with many rows counts once.
    let market: HashMap<&str, (f64, usize)> = by_gpu
        .into_iter()
        .filter(|(_, providers)| providers.len() >= MIN_PROVIDERS_FOR_GPU_MEDIAN)
        .filter_map(|(gpu, providers)| {
            let n = providers.len();
            let medians: Vec<f64> = providers.into_values().filter_map(median).collect();
            median(medians).map(|m| (gpu, (m, n)))
        })
        .collect();
    for o in offerings {
        let Some((gpu, p)) = gpu_hour_price(o) else {
            continue;
        };
        let Some(&(m, providers)) = market.get(gpu) else {
            continue;
        };
        let ratio = p / m;
        let side = if ratio < GPU_HOUR_LOW_SHARE {
            "below"
        } else if ratio > GPU_HOUR_HIGH_FACTOR {
            "above"
        } else {
            continue;
        };
        out.push(anomaly(
            o,
            AnomalyKind::GpuHourPriceOutlier,
            PriceUse::OnDemand,
            format!(
                "${p:.2} per {gpu}-hour is {ratio:.2}× the ${m:.2} median of {providers} providers ({side} the {GPU_HOUR_LOW_SHARE}–{GPU_HOUR_HIGH_FACTOR}× band)"
            ),
        ));
    }
}

/// On-demand prices of one region far from the median of the instance type's other regions.
fn region_outliers(offerings: &[Offering], out: &mut Vec<Anomaly>) {
    // (provider, instance) → region → on-demand prices (several zones per region possible).
    let mut by_type: BTreeMap<(&str, &str), BTreeMap<&str, Vec<f64>>> = BTreeMap::new();
    for o in offerings {
        if let Some(p) = o.price_per_hour {
            by_type
                .entry((o.provider.as_str(), o.instance_type.as_str()))
                .or_default()
                .entry(o.region.as_str())
                .or_default()
                .push(p);
        }
    }
    let mut flagged: HashMap<(&str, &str, &str), String> = HashMap::new();
    for ((provider, instance), regions) in &by_type {
        if regions.len() < MIN_REGIONS_FOR_REGION_CHECK {
            continue;
        }
        let prices: BTreeMap<&str, f64> = regions
            .iter()
            .filter_map(|(r, v)| median(v.clone()).map(|m| (*r, m)))
            .collect();
        let n = prices.len();
        for (region, &p) in &prices {
            let others: Vec<f64> = prices
                .iter()
                .filter(|(r, _)| *r != region)
                .map(|(_, &q)| q)
                .collect();
            let Some(m) = median(others) else { continue };
            let ratio = p / m;
            if (REGION_LOW_SHARE..=REGION_HIGH_FACTOR).contains(&ratio) {
                continue;
            }
            // The majority side: regions priced within the band of this median.
            let majority = prices
                .values()
                .filter(|&&q| (REGION_LOW_SHARE..=REGION_HIGH_FACTOR).contains(&(q / m)))
                .count();
            let side = if ratio < REGION_LOW_SHARE {
                "below"
            } else {
                "above"
            };
            flagged.insert(
                (provider, instance, region),
                format!(
                    "on-demand ${p:.2}/h is {ratio:.2}× the ${m:.2}/h median of {} other regions; {majority} of {n} regions sit near it, this one is {side} the majority",
                    n - 1
                ),
            );
        }
    }
    for o in offerings {
        if let Some(reason) = flagged.get(&(
            o.provider.as_str(),
            o.instance_type.as_str(),
            o.region.as_str(),
        )) {
            out.push(anomaly(
                o,
                AnomalyKind::RegionPriceOutlier,
                PriceUse::OnDemand,
                reason.clone(),
            ));
        }
    }
}

/// Providers that list every instance type in every region at one price.
fn uniform_listings(offerings: &[Offering], out: &mut Vec<Anomaly>) {
    // provider → (regions, instance → (regions, distinct prices))
    type PerType<'a> = BTreeMap<&'a str, (BTreeSet<&'a str>, BTreeSet<u64>)>;
    let mut by_provider: BTreeMap<&str, (BTreeSet<&str>, PerType<'_>)> = BTreeMap::new();
    for o in offerings {
        let entry = by_provider.entry(o.provider.as_str()).or_default();
        entry.0.insert(o.region.as_str());
        let t = entry.1.entry(o.instance_type.as_str()).or_default();
        t.0.insert(o.region.as_str());
        // Prices compared to the cent.
        let cents = o.list_price() * 100.0;
        if cents.is_finite() {
            t.1.insert(cents.round() as u64);
        }
    }
    for (provider, (regions, types)) in &by_provider {
        let uniform = regions.len() >= MIN_REGIONS_FOR_UNIFORM_LISTING
            && types
                .values()
                .all(|(r, prices)| r.len() == regions.len() && prices.len() <= 1);
        if !uniform {
            continue;
        }
        let reason = format!(
            "all {} instance types listed in all {} {provider} regions at one price each: availability by region unknown",
            types.len(),
            regions.len()
        );
        for o in offerings.iter().filter(|o| o.provider == *provider) {
            out.push(anomaly(
                o,
                AnomalyKind::RegionAvailabilityUnknown,
                PriceUse::Both,
                reason.clone(),
            ));
        }
    }
}

/// The GPU count an instance name states (`8x_`, `_8x`, `(8x`, `8gpu`, `4-GPU`, `-8g`), if any.
pub(crate) fn count_in_name(name: &str) -> Option<f64> {
    let lower = name.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || (i > 0 && b[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &lower[start..i];
        let rest = &lower[i..];
        // `x` must end the token: `8x_`, `(8x)`; not `24xlarge` or IBM's `8x64x1v100` (vCPU × GiB).
        let token_ends_at = |skip: usize| {
            rest.as_bytes()
                .get(skip)
                .is_none_or(|c| !c.is_ascii_alphanumeric())
        };
        let stated = (rest.starts_with('x') && token_ends_at(1))
            || rest.starts_with("gpu")
            || rest.starts_with("-gpu")
            // GCP `a3-highgpu-8g`; not Paperspace `A100-80G` (memory).
            || (rest.starts_with('g') && token_ends_at(1) && lower[..start].ends_with("gpu-"));
        if stated {
            if let Ok(n) = digits.parse::<f64>() {
                return Some(n);
            }
        }
    }
    None
}

/// GPU memory sizes written in an instance name (`80GB`, `_94gb`), GB.
pub(crate) fn gpu_memory_in_name(name: &str) -> Vec<f64> {
    let lower = name.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // Only a number that starts a token counts (`v24gb` is cudo's host memory).
        if !b[i].is_ascii_digit() || (i > 0 && b[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        // Nebius `…_1gpu-16vcpu-200gb`: the size after the vCPU count is host memory.
        let after_vcpus = lower[..start].ends_with("vcpu-") || lower[..start].ends_with("vcpu_");
        if lower[i..].starts_with("gb") && !after_vcpus {
            if let Ok(v) = lower[start..i].parse::<f64>() {
                if v <= MAX_GPU_MEMORY_IN_NAME_GB {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// Form-factor words an instance name states: (says PCIe or NVL, says SXM).
pub(crate) fn form_in_name(name: &str) -> (bool, bool) {
    let lower = name.to_ascii_lowercase();
    let nvl = lower
        .match_indices("nvl")
        .any(|(i, _)| !lower[i + 3..].starts_with("ink"));
    (lower.contains("pcie") || nvl, lower.contains("sxm"))
}

/// Whether a spec is an SXM module (form factor `SXM`, `SXM4`, `SXM5` …).
pub(crate) fn spec_is_sxm(g: &GpuSpec) -> bool {
    g.form_factor.to_ascii_lowercase().starts_with("sxm")
}

/// Rows whose shape cannot be right: GPU count, vCPUs and host memory per GPU, GPU variant,
/// interconnect.
fn shape_checks(offerings: &[Offering], specs: &HashMap<&str, &GpuSpec>, out: &mut Vec<Anomaly>) {
    for o in offerings {
        let mut reasons: Vec<String> = Vec::new();
        let n = o.accelerator_count;
        if o.instance_type.to_ascii_lowercase().contains("per gpu") {
            reasons.push(format!(
                "priced per GPU (count {n}), not per instance: the machine's GPU count and NVLink domain are unknown"
            ));
        } else if let Some(stated) = count_in_name(&o.instance_type) {
            if (stated - n).abs() > 1e-9 {
                reasons.push(format!(
                    "the name states {stated} GPUs but the row counts {n}"
                ));
            }
        }
        if n >= 1.0 {
            if let Some(v) = o.vcpus.filter(|v| *v > 0.0) {
                let per = v / n;
                if per > MAX_VCPUS_PER_GPU {
                    reasons.push(format!(
                        "{v} vCPUs for {n} GPUs is {per:.0} per GPU (> {MAX_VCPUS_PER_GPU})"
                    ));
                } else if per < MIN_VCPUS_PER_GPU {
                    reasons.push(format!(
                        "{v} vCPUs for {n} GPUs is {per:.2} per GPU (< {MIN_VCPUS_PER_GPU})"
                    ));
                }
            }
            if let Some(m) = o.memory_gib.filter(|m| *m > 0.0) {
                let per = m / n;
                if per > MAX_HOST_GIB_PER_GPU {
                    reasons.push(format!(
                        "{m} GiB host memory for {n} GPUs is {per:.0} GiB per GPU (> {MAX_HOST_GIB_PER_GPU})"
                    ));
                }
            }
        }
        if let Some(g) = o.gpu.as_deref().and_then(|g| specs.get(g)) {
            let (says_pcie_or_nvl, says_sxm) = form_in_name(&o.instance_type);
            if says_pcie_or_nvl && !says_sxm && spec_is_sxm(g) {
                reasons.push(format!(
                    "the name says PCIe/NVL but `{}` resolves to the SXM part {}",
                    o.accelerator, g.name
                ));
            }
            if says_sxm && !says_pcie_or_nvl && !spec_is_sxm(g) {
                reasons.push(format!(
                    "the name says SXM but `{}` resolves to the {} part {}",
                    o.accelerator, g.form_factor, g.name
                ));
            }
            let sizes = gpu_memory_in_name(&o.instance_type);
            if !sizes.is_empty()
                && !sizes
                    .iter()
                    .any(|s| (s / g.memory_gib - 1.0).abs() <= NAME_MEMORY_TOLERANCE)
            {
                reasons.push(format!(
                    "the name says {} GB per GPU but {} has {} GB",
                    sizes[0], g.name, g.memory_gib
                ));
            }
            if o.interconnect.to_ascii_lowercase().starts_with("nvlink") && g.pcie_only() {
                reasons.push(format!(
                    "interconnect `{}` but {} has no NVLink",
                    o.interconnect, g.name
                ));
            }
        }
        if !reasons.is_empty() {
            out.push(anomaly(
                o,
                AnomalyKind::InstanceShapeImplausible,
                PriceUse::Both,
                reasons.join("; "),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offering(
        provider: &str,
        instance: &str,
        region: &str,
        od: f64,
        spot: Option<f64>,
    ) -> Offering {
        Offering {
            provider: provider.into(),
            instance_type: instance.into(),
            accelerator: "H100".into(),
            gpu: Some("H100-SXM-80GB".into()),
            accelerator_count: 8.0,
            vcpus: Some(192.0),
            memory_gib: Some(2048.0),
            region: region.into(),
            zone: None,
            price_per_hour: Some(od),
            spot_price_per_hour: spot,
            interconnect: "nvlink".into(),
            source_snapshot: "test".into(),
        }
    }

    fn spec(name: &str, form: &str, memory_gib: f64, nvlink_gbps: f64) -> GpuSpec {
        GpuSpec {
            name: name.into(),
            vendor: "NVIDIA".into(),
            architecture: "Hopper".into(),
            memory_gib,
            memory_bandwidth_gbps: 3350.0,
            fp32_tflops: None,
            tf32_tflops: None,
            bf16_tflops: Some(989.4),
            fp16_tflops: None,
            fp8_tflops: None,
            int8_tops: None,
            fp4_tflops: None,
            nvlink_gbps,
            pcie_gen: Some(5),
            form_factor: form.into(),
            tdp_w: None,
            power_headroom: None,
            mig_max_instances: 0,
            release_year: None,
            source: "test".into(),
        }
    }

    fn specs() -> Vec<GpuSpec> {
        vec![
            spec("H100-SXM-80GB", "SXM5", 80.0, 900.0),
            spec("H100-PCIe-80GB", "PCIe", 80.0, 0.0),
        ]
    }

    fn kinds(index: &AnomalyIndex, o: &Offering) -> Vec<AnomalyKind> {
        index
            .of(&o.provider, &o.instance_type, &o.region)
            .iter()
            .map(|a| a.kind)
            .collect()
    }

    #[test]
    fn spot_above_on_demand_and_floor_are_flagged_with_numbers() {
        let high = offering("x", "a", "r1", 0.43, Some(0.86));
        let floor = offering("x", "b", "r1", 100.0, Some(10.0));
        // 15 % of on-demand is a real discount: not flagged.
        let fine = offering("x", "c", "r1", 100.0, Some(15.0));
        let rows = vec![high.clone(), floor.clone(), fine.clone()];
        let ix = AnomalyIndex::build(&rows, &specs());
        let a = ix.of("x", "a", "r1");
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].kind, AnomalyKind::SpotNotBelowOnDemand);
        assert_eq!(
            a[0].reason,
            "spot $0.86/h ≥ on-demand $0.43/h: one of the two is wrong"
        );
        assert_eq!(a[0].affects, PriceUse::Both);
        assert_eq!(kinds(&ix, &floor), vec![AnomalyKind::SpotAtFloor]);
        assert!(ix.of("x", "b", "r1")[0].reason.contains("10.0 %"));
        assert!(kinds(&ix, &fine).is_empty());
    }

    #[test]
    fn gpu_hour_median_is_a_median_of_provider_medians() {
        // Provider "many" has ten rows at $1/GPU-h (8 GPUs, $8/h); the others one row each.
        // The median of all rows would be $1 and hide the cheap row; the median of provider
        // medians counts "many" once.
        let mut rows: Vec<Offering> = (0..10)
            .map(|i| offering("many", &format!("m{i}"), "r", 8.0, None))
            .collect();
        rows.push(offering("p2", "a", "r", 32.0, None));
        rows.push(offering("p3", "a", "r", 40.0, None));
        let cheap = offering("cheap", "a", "r", 7.2, None);
        rows.push(cheap.clone());
        let ix = AnomalyIndex::build(&rows, &specs());
        // Four providers: medians 1, 4, 5, 0.9 → median (1 + 4) / 2 = 2.5; 0.9/2.5 = 0.36: not flagged.
        assert!(kinds(&ix, &cheap).is_empty());
        rows.push(offering("p4", "a", "r", 48.0, None));
        rows.push(offering("p5", "a", "r", 48.0, None));
        // Medians 1, 4, 5, 0.9, 6, 6 → median (4 + 5) / 2 = 4.5; 0.9/4.5 = 0.2 → flagged; 1/4.5 = 0.22 → flagged too.
        let ix = AnomalyIndex::build(&rows, &specs());
        assert_eq!(kinds(&ix, &cheap), vec![AnomalyKind::GpuHourPriceOutlier]);
        assert!(ix.of("cheap", "a", "r")[0].reason.contains("0.20×"));
        assert_eq!(
            ix.of("p5", "a", "r").len(),
            0,
            "6/4.5 = 1.3× is an ordinary price"
        );
    }

    #[test]
    fn region_outliers_follow_the_majority() {
        // Four regions at ~$100, two at $45: each $45 region is 45/100 = 0.45× the median of
        // the five others → flagged "below"; the $100 regions are 1× → not flagged.
        let mut rows = Vec::new();
        for (r, p) in [
            ("a", 100.0),
            ("b", 98.0),
            ("c", 102.0),
            ("d", 100.0),
            ("e", 45.0),
            ("f", 45.0),
        ] {
            rows.push(offering("gcp", "a3", r, p, None));
        }
        let ix = AnomalyIndex::build(&rows, &specs());
        let flagged: Vec<&str> = ix
            .all()
            .iter()
            .filter(|a| a.kind == AnomalyKind::RegionPriceOutlier)
            .map(|a| a.region.as_str())
            .collect();
        assert_eq!(flagged, vec!["e", "f"]);
        assert!(ix.of("gcp", "a3", "e")[0]
            .reason
            .contains("below the majority"));
    }

    #[test]
    fn uniform_listing_across_every_region_is_flagged() {
        let mut rows = Vec::new();
        for r in ["r1", "r2", "r3"] {
            rows.push(offering("lambda", "gpu_8x", r, 20.0, None));
            rows.push(offering("lambda", "gpu_1x", r, 2.5, None));
            rows.push(offering("aws", "p5", r, 55.0, None));
        }
        // AWS has one price per region too, but a second instance type only in r1.
        rows.push(offering("aws", "p4", "r1", 30.0, None));
        let ix = AnomalyIndex::build(&rows, &specs());
        let lambda = ix.of("lambda", "gpu_8x", "r2");
        assert_eq!(lambda.len(), 1);
        assert_eq!(lambda[0].kind, AnomalyKind::RegionAvailabilityUnknown);
        assert!(ix.of("aws", "p5", "r1").is_empty());
    }

    #[test]
    fn implausible_shapes_are_flagged() {
        let mut many_cpus = offering("runpod", "8x_L40S_SECURE", "r", 8.0, None);
        many_cpus.vcpus = Some(1024.0);
        let mut per_gpu = offering("crusoe", "NVIDIA H100 80GB HGX (per GPU)", "r", 3.0, None);
        per_gpu.accelerator_count = 1.0;
        per_gpu.vcpus = None;
        per_gpu.memory_gib = None;
        let mut pcie_as_sxm = offering("vast", "2x-H100_PCIE-32-65536", "r", 3.0, None);
        pcie_as_sxm.accelerator_count = 2.0;
        pcie_as_sxm.vcpus = Some(32.0);
        pcie_as_sxm.memory_gib = Some(64.0);
        let mut nvlink_on_pcie = offering("x", "pcie-box", "r", 3.0, None);
        nvlink_on_pcie.gpu = Some("H100-PCIe-80GB".into());
        let ordinary = offering("aws", "p5.48xlarge", "r", 55.0, None);
        let rows = vec![
            many_cpus.clone(),
            per_gpu.clone(),
            pcie_as_sxm.clone(),
            nvlink_on_pcie.clone(),
            ordinary.clone(),
        ];
        let ix = AnomalyIndex::build(&rows, &specs());
        // Prices differ widely here, so only the shape check is asserted.
        for o in [&many_cpus, &per_gpu, &pcie_as_sxm, &nvlink_on_pcie] {
            assert!(
                kinds(&ix, o).contains(&AnomalyKind::InstanceShapeImplausible),
                "{}",
                o.instance_type
            );
        }
        assert!(ix.of("runpod", "8x_L40S_SECURE", "r")[0]
            .reason
            .contains("128 per GPU"));
        assert!(!kinds(&ix, &ordinary).contains(&AnomalyKind::InstanceShapeImplausible));
    }

    #[test]
    fn names_state_counts_memory_and_form() {
        assert_eq!(count_in_name("8x_L40S_SECURE"), Some(8.0));
        assert_eq!(count_in_name("gpu_8x_h100_sxm5"), Some(8.0));
        assert_eq!(count_in_name("NVIDIA L40S (8x)"), Some(8.0));
        assert_eq!(count_in_name("gpu-h100-sxm_8gpu-128vcpu-1600gb"), Some(8.0));
        assert_eq!(
            count_in_name("NVIDIA GB200 NVL72 (4-GPU instance)"),
            Some(4.0)
        );
        assert_eq!(count_in_name("a3-highgpu-4g"), Some(4.0));
        assert_eq!(count_in_name("p4d.24xlarge"), None);
        assert_eq!(count_in_name("gx2-8x64x1v100"), None);
        assert_eq!(count_in_name("A100-80G"), None);
        assert!(gpu_memory_in_name("gpu-h200-sxm_1gpu-16vcpu-200gb").is_empty());
        assert_eq!(count_in_name("Standard_NC24ads_A100_v4"), None);
        assert_eq!(gpu_memory_in_name("gpu_8x_a100_80gb_sxm4"), vec![80.0]);
        assert!(gpu_memory_in_name("intel-broadwell-v100_1x12v24gb").is_empty());
        assert!(gpu_memory_in_name("gpu-h100-sxm_8gpu-128vcpu-1600gb").is_empty());
        assert_eq!(form_in_name("Standard_NC40ads_H100_v5"), (false, false));
        assert_eq!(form_in_name("1x-H100_NVL-16-65536"), (true, false));
        assert_eq!(form_in_name("nvlink-box"), (false, false));
        assert_eq!(form_in_name("gpu_1x_h100_sxm5"), (false, true));
    }

    #[test]
    fn kind_names_round_trip() {
        for k in AnomalyKind::ALL {
            assert_eq!(k.as_str().parse::<AnomalyKind>(), Ok(k));
            assert_eq!(
                serde_json::to_string(&k).ok(),
                Some(format!("\"{}\"", k.as_str()))
            );
        }
        assert!("spot-at-floor".parse::<AnomalyKind>().is_ok());
        assert!("nope".parse::<AnomalyKind>().is_err());
    }
}
