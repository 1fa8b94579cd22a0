//! The catalog listings (`gpuplan catalog …`, `GET /v1/catalog/…`): the
//! rows each filter selects, in the order the tables print them.

use crate::error::{AppError, AppResult};
use gpuplan_catalog::{Anomaly, AnomalyKind, Catalog, GpuSpec, ModelArch, Offering};
use gpuplan_core::{region_in_geo, GEO_CODES};
use serde::{Deserialize, Serialize};

/// GPUs whose name, vendor or architecture contains `filter` (any case).
pub fn gpus<'a>(catalog: &'a Catalog, filter: Option<&str>) -> Vec<&'a GpuSpec> {
    let f = filter.unwrap_or_default().to_ascii_lowercase();
    catalog
        .gpus()
        .iter()
        .filter(|g| {
            f.is_empty()
                || g.name.to_ascii_lowercase().contains(&f)
                || g.vendor.to_ascii_lowercase().contains(&f)
                || g.architecture.to_ascii_lowercase().contains(&f)
        })
        .collect()
}

/// The filters of the offerings listing.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OfferingFilter {
    /// Only this GPU (any alias).
    pub gpu: Option<String>,
    /// Only this provider.
    pub provider: Option<String>,
    /// Only regions matching this glob (`eu-*`).
    pub region: Option<String>,
    /// At most this many rows (0 = all); default 50.
    pub limit: Option<usize>,
}

/// Offerings matching the filter, cheapest first.
pub fn offerings<'a>(catalog: &'a Catalog, f: &OfferingFilter) -> AppResult<Vec<&'a Offering>> {
    let gpu_name = match &f.gpu {
        Some(g) => Some(
            catalog
                .gpu(g)
                .map_err(|e| AppError::bad_field("gpu", format!("--gpu: {e}")))?
                .name
                .clone(),
        ),
        None => None,
    };
    let provider = known_provider(catalog, f.provider.as_deref())?;
    let pattern = match &f.region {
        Some(r) => Some(glob::Pattern::new(r).map_err(|e| {
            AppError::bad_field("region", format!("--region `{r}`: not a valid glob: {e}"))
        })?),
        None => None,
    };
    let limit = match f.limit.unwrap_or(50) {
        0 => usize::MAX,
        n => n,
    };
    Ok(catalog
        .offerings()
        .iter()
        .filter(|o| gpu_name.as_ref().is_none_or(|g| o.gpu.as_ref() == Some(g)))
        .filter(|o| provider.as_ref().is_none_or(|p| &o.provider == p))
        .filter(|o| pattern.as_ref().is_none_or(|p| p.matches(&o.region)))
        .take(limit)
        .collect())
}

/// The provider, lower-cased, if the catalog knows it.
pub fn known_provider(catalog: &Catalog, provider: Option<&str>) -> AppResult<Option<String>> {
    let Some(p) = provider.map(|p| p.to_ascii_lowercase()) else {
        return Ok(None);
    };
    if catalog.providers().contains(&p) {
        Ok(Some(p))
    } else {
        Err(AppError::bad_field(
            "provider",
            format!(
                "--provider: unknown provider `{p}`; expected one of {}",
                catalog.providers().join(", ")
            ),
        ))
    }
}

/// Anomalies of one provider and/or kind.
pub fn anomalies<'a>(
    catalog: &'a Catalog,
    provider: Option<&str>,
    kind: Option<AnomalyKind>,
) -> AppResult<Vec<&'a Anomaly>> {
    let provider = known_provider(catalog, provider)?;
    Ok(catalog
        .anomalies()
        .iter()
        .filter(|a| provider.as_ref().is_none_or(|p| &a.provider == p))
        .filter(|a| kind.is_none_or(|k| a.kind == k))
        .collect())
}

/// Every model.
pub fn models(catalog: &Catalog) -> Vec<ModelRow<'_>> {
    catalog
        .models()
        .iter()
        .map(|m| ModelRow {
            model: m,
            total_params: m.params().total(),
            active_params: m.params().active(),
        })
        .collect()
}

/// A model architecture with its parameter counts (what `catalog models --json` lists).
#[derive(Debug, Clone, Serialize)]
pub struct ModelRow<'a> {
    /// The architecture as the catalog holds it.
    #[serde(flatten)]
    pub model: &'a ModelArch,
    /// Every parameter, embeddings included.
    pub total_params: u64,
    /// Parameters used per token (MoE: shared + routed experts chosen).
    pub active_params: u64,
}

/// A region and the geographies (`constraints.geo` codes) it lies in.
#[derive(Debug, Clone, Serialize)]
pub struct RegionRow<'a> {
    /// Provider id.
    pub provider: &'a str,
    /// Region id.
    pub region: &'a str,
    /// Where it is, in words.
    pub location: &'a str,
    /// ISO country code ("" when unknown).
    pub country: &'a str,
    /// Continent code.
    pub continent: &'a str,
    /// Every `constraints.geo` code the region satisfies, as the planner decides it.
    pub geo: Vec<&'static str>,
}

/// Regions of one provider (or all), with their geographies.
pub fn regions<'a>(catalog: &'a Catalog, provider: Option<&str>) -> AppResult<Vec<RegionRow<'a>>> {
    let provider = known_provider(catalog, provider)?;
    Ok(catalog
        .regions()
        .iter()
        .filter(|r| provider.as_ref().is_none_or(|p| &r.provider == p))
        .map(|r| RegionRow {
            provider: &r.provider,
            region: &r.region,
            location: &r.location,
            country: &r.country,
            continent: &r.continent,
            geo: if r.country.is_empty() {
                Vec::new()
            } else {
                GEO_CODES
                    .iter()
                    .copied()
                    .filter(|g| region_in_geo(r, g))
                    .collect()
            },
        })
        .collect())
}
