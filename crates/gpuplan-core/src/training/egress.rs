//! Moving a data set to the GPUs: what the provider holding it charges per
//! GB (`data/egress.csv`, per provider, sourced) and how long it takes.

use super::workload::DataLocation;
use gpuplan_catalog::Catalog;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The bundled egress table.
pub const BUNDLED_EGRESS: &str = include_str!("../../../../data/egress.csv");

#[derive(Debug, Clone, Deserialize)]
struct EgressRow {
    provider: String,
    same_continent_usd_per_gb: f64,
    cross_continent_usd_per_gb: f64,
    internet_usd_per_gb: f64,
    #[allow(dead_code)]
    source: String,
}

fn table() -> &'static Vec<EgressRow> {
    static TABLE: OnceLock<Vec<EgressRow>> = OnceLock::new();
    TABLE.get_or_init(|| {
        csv::Reader::from_reader(BUNDLED_EGRESS.as_bytes())
            .deserialize()
            .filter_map(|r| r.ok())
            .collect()
    })
}

/// The cost and time of bringing the data to one region.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataMove {
    /// USD charged by the provider holding the data (None = it publishes no rate in the table).
    pub usd: Option<f64>,
    /// Hours the copy takes at the transfer bandwidth (0 when the data is local).
    pub hours: f64,
    /// In words: `local`, `inter-region (same continent)`, `cross-continent`, `to another provider`.
    pub route: String,
}

/// What moving `data` to `provider`/`region` costs.
pub fn data_move(catalog: &Catalog, data: &DataLocation, provider: &str, region: &str) -> DataMove {
    let same_provider = data.provider == provider;
    if same_provider && data.region.as_deref().is_none_or(|r| r == region) {
        return DataMove {
            usd: Some(0.0),
            hours: 0.0,
            route: "local".into(),
        };
    }
    let continent = |p: &str, r: &str| {
        catalog
            .regions()
            .iter()
            .find(|x| x.provider == p && x.region == r)
            .map(|x| x.continent.clone())
    };
    let row = table().iter().find(|r| r.provider == data.provider);
    let (rate, route) = if !same_provider {
        (row.map(|r| r.internet_usd_per_gb), "to another provider")
    } else {
        let from = data
            .region
            .as_deref()
            .and_then(|r| continent(&data.provider, r));
        let to = continent(provider, region);
        if from.is_some() && from == to {
            (
                row.map(|r| r.same_continent_usd_per_gb),
                "inter-region (same continent)",
            )
        } else {
            (row.map(|r| r.cross_continent_usd_per_gb), "cross-continent")
        }
    };
    DataMove {
        usd: rate.map(|r| r * data.size_gb),
        // GB × 8 bits / (Gb/s) seconds.
        hours: data.size_gb * 8.0 / data.transfer_gbits / 3600.0,
        route: route.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_parses_and_rates_are_sane() {
        assert!(table().len() >= 8);
        for r in table() {
            for v in [
                r.same_continent_usd_per_gb,
                r.cross_continent_usd_per_gb,
                r.internet_usd_per_gb,
            ] {
                assert!((0.0..1.0).contains(&v), "{}", r.provider);
            }
        }
    }
}
