//! Fleet workloads (`kind = "fleet"`): several services, each written as an
//! inference workload's `[model]`, `[traffic]`, `[slo]`, `[engine]` (and
//! `[constraints]` of its own, such as `min_replicas`), plus constraints and
//! pricing every service shares. Each service is validated by the inference
//! workload's own code ([`RawWorkload::validate`]), so the two kinds accept
//! the same fields with the same ranges.
//!
//! ```toml
//! name = "small-services"
//! kind = "fleet"
//! [constraints]            # shared: providers, regions, geo, gpus, spot, max_usd_per_hour
//! providers = ["aws", "gcp"]
//! [[services]]
//! name = "assistant"
//! model = { id = "llama-3.1-8b", precisions = ["bf16", "fp8"] }
//! traffic = { requests_per_s = 2, input_tokens = { mean = 800, p99 = 3000 }, output_tokens = { mean = 200, p99 = 800 } }
//! slo = { ttft_ms_p99 = 1500, tpot_ms_p99 = 60 }
//! constraints = { min_replicas = 2 }
//! ```

use crate::error::{CoreError, Result};
use crate::limits::{self, Count, Span};
use crate::workload::{InferenceWorkload, RawWorkload};
use crate::workload_text::WorkloadFormat;
use gpuplan_catalog::Catalog;
use serde::Deserialize;

/// Services in one fleet: 1 to 1,000 (each is sized on every slice of
/// every MIG-capable GPU; beyond that a fleet is several fleets).
pub const FLEET_SERVICES: Count = Count::new(1, 1_000);

/// A fleet file as written: the services stay raw tables until each is
/// merged with the shared constraints and validated as an inference workload.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a fleet: kind, [constraints], [[services]]"
)]
pub struct RawFleet {
    /// A name for reports.
    pub name: Option<String>,
    /// `fleet`.
    pub kind: String,
    /// Constraints every service shares; `max_usd_per_hour` bounds the whole fleet.
    #[serde(default)]
    pub constraints: toml::Table,
    /// Pricing every service shares.
    #[serde(default)]
    pub pricing: toml::Table,
    /// The services, each an inference workload's tables plus a `name`.
    #[serde(default)]
    pub services: Vec<toml::Table>,
}

/// A validated fleet.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// Name for reports.
    pub name: String,
    /// The services, each a validated inference workload named after the service.
    pub services: Vec<InferenceWorkload>,
    /// The most the whole fleet may cost, USD per hour.
    pub max_usd_per_hour: Option<f64>,
}

/// Parses a fleet file; `file` (its path) starts every error.
pub fn parse_fleet(file: &str, text: &str, format: WorkloadFormat) -> Result<RawFleet> {
    let value: toml::Value = match format {
        WorkloadFormat::Toml => toml::from_str::<toml::Table>(text)
            .map(toml::Value::Table)
            .map_err(|e| CoreError::malformed(file, e.to_string().trim_end().to_string()))?,
        WorkloadFormat::Json => {
            let json: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| CoreError::malformed(file, e.to_string()))?;
            toml::Value::try_from(json).map_err(|e| {
                CoreError::malformed(file, format!("{e} (JSON `null` is not a value here)"))
            })?
        }
    };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!("field `{path}`: ")
        };
        CoreError::malformed(file, format!("{at}{}", e.inner().message().trim_end()))
    })
}

impl RawFleet {
    /// Validates every service against the catalog; errors name the file,
    /// the service (`services[2] "reranker"`), the field and what is expected.
    pub fn validate(self, file: &str, catalog: &Catalog) -> Result<Fleet> {
        if self.kind != "fleet" {
            return Err(CoreError::malformed(
                file,
                format!("invalid `kind` = {:?}: expected \"fleet\"", self.kind),
            ));
        }
        let count = self.services.len() as u64;
        if !FLEET_SERVICES.contains(count) {
            return Err(CoreError::malformed(
                file,
                format!(
                    "{count} `[[services]]`: expected {}",
                    FLEET_SERVICES.describe()
                ),
            ));
        }
        let mut shared = self.constraints.clone();
        let budget = match shared.remove("max_usd_per_hour") {
            None => None,
            Some(v) => Some(budget_of(file, &v)?),
        };
        let mut services: Vec<InferenceWorkload> = Vec::with_capacity(self.services.len());
        for (i, table) in self.services.into_iter().enumerate() {
            let w = service(file, i, table, &shared, &self.pricing, catalog)?;
            if let Some(j) = services.iter().position(|s| s.name == w.name) {
                return Err(CoreError::malformed(
                    file,
                    format!(
                        "invalid `services[{i}].name` = {:?}: expected a unique name (services[{j}] has it)",
                        w.name
                    ),
                ));
            }
            services.push(w);
        }
        Ok(Fleet {
            name: self.name.unwrap_or_else(|| "fleet".to_string()),
            services,
            max_usd_per_hour: budget,
        })
    }
}

/// `constraints.max_usd_per_hour` of the fleet.
fn budget_of(file: &str, v: &toml::Value) -> Result<f64> {
    let range: Span = limits::BUDGET_USD_PER_HOUR;
    let x = v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
    match x {
        Some(x) if range.contains(x) => Ok(x),
        _ => Err(CoreError::malformed(
            file,
            format!(
                "invalid `constraints.max_usd_per_hour` = {v}: expected {}",
                range.describe()
            ),
        )),
    }
}

/// Service `i`: its table merged with the shared constraints and pricing,
/// validated as an inference workload.
fn service(
    file: &str,
    i: usize,
    mut table: toml::Table,
    shared: &toml::Table,
    pricing: &toml::Table,
    catalog: &Catalog,
) -> Result<InferenceWorkload> {
    let name = match table.get("name") {
        Some(toml::Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        other => {
            let got = other
                .map(ToString::to_string)
                .unwrap_or_else(|| "(missing)".into());
            return Err(CoreError::malformed(
                file,
                format!("invalid `services[{i}].name` = {got}: expected a non-empty string"),
            ));
        }
    };
    let at = format!("services[{i}] {name:?}");
    if table.contains_key("kind") {
        return Err(CoreError::malformed(
            file,
            format!("{at}: `kind` is the fleet's, not a service's: remove it"),
        ));
    }
    // The service's own constraints override the shared ones, key by key.
    let mut constraints = shared.clone();
    match table.remove("constraints") {
        None => {}
        Some(toml::Value::Table(own)) => constraints.extend(own),
        Some(other) => {
            return Err(CoreError::malformed(
                file,
                format!("{at}: invalid `constraints` = {other}: expected a table"),
            ))
        }
    }
    table.insert("constraints".into(), toml::Value::Table(constraints));
    if !pricing.is_empty() && !table.contains_key("pricing") {
        table.insert("pricing".into(), toml::Value::Table(pricing.clone()));
    }
    table.insert("kind".into(), toml::Value::String("inference".into()));
    table.insert("name".into(), toml::Value::String(name));
    let raw: RawWorkload =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." {
                String::new()
            } else {
                format!("field `{path}`: ")
            };
            CoreError::malformed(
                file,
                format!("{at}: {field}{}", e.inner().message().trim_end()),
            )
        })?;
    if raw.model.hf_config.is_some() {
        return Err(CoreError::malformed(
            file,
            format!("{at}: `model.hf_config` is not supported in fleets yet: expected `model.id` naming a catalog model"),
        ));
    }
    raw.validate(catalog, None)
        .map_err(|e| CoreError::malformed(file, format!("{at}: {e}")))
}
