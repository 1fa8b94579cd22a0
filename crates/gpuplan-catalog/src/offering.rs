//! Cloud offerings (`data/cloud_offerings.csv`), regions (`data/regions.csv`),
//! and the importer for SkyPilot's `vms.csv` format.

use crate::error::{CatalogError, Result};
use crate::limits;
use crate::table::{DuplicateCheck, Row, Table};
use serde::Serialize;

/// Scale-up fabric between the accelerators of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScaleUp {
    /// NVIDIA NVLink / NVSwitch.
    Nvlink,
    /// AMD Infinity Fabric.
    InfinityFabric,
    /// AWS NeuronLink.
    Neuronlink,
    /// Google TPU inter-chip interconnect.
    TpuIci,
    /// PCIe only.
    Pcie,
    /// Not stated by the source.
    Unknown,
}

/// One purchasable instance shape in one region.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Offering {
    /// Provider id (aws, gcp, azure, lambda ...).
    pub provider: String,
    /// Instance type as the provider names it.
    pub instance_type: String,
    /// Accelerator name as written by the source.
    pub accelerator: String,
    /// Canonical GPU name the accelerator resolves to (None = no spec in the catalog).
    pub gpu: Option<String>,
    /// Accelerators per instance (may be fractional for GPU slices).
    pub accelerator_count: f64,
    /// vCPUs, if known.
    pub vcpus: Option<f64>,
    /// Host memory, GiB, if known.
    pub memory_gib: Option<f64>,
    /// Region id.
    pub region: String,
    /// Zone, if the source gives one.
    pub zone: Option<String>,
    /// On-demand list price, USD per instance per hour (None = the source lists only a spot price).
    pub price_per_hour: Option<f64>,
    /// Spot price, USD per instance per hour (None = unknown, not zero).
    pub spot_price_per_hour: Option<f64>,
    /// Interconnect as written (`nvlink+efa-3200`, `pcie` ...).
    pub interconnect: String,
    /// Where and when the price was read.
    pub source_snapshot: String,
}

impl Offering {
    /// The scale-up fabric between the GPUs of the instance.
    pub fn scale_up(&self) -> ScaleUp {
        let s = self.interconnect.to_ascii_lowercase();
        let first = s.split('+').next().unwrap_or("");
        if first.starts_with("nvlink") {
            ScaleUp::Nvlink
        } else if first.starts_with("infinityfabric") {
            ScaleUp::InfinityFabric
        } else if first.starts_with("neuronlink") {
            ScaleUp::Neuronlink
        } else if first.starts_with("tpu") {
            ScaleUp::TpuIci
        } else if first.starts_with("pcie") {
            ScaleUp::Pcie
        } else {
            ScaleUp::Unknown
        }
    }

    /// Scale-out network per instance, Gb/s (`efa-3200` → 3200), if stated
    /// (a figure outside [`limits::OFFERING_SCALE_OUT_GBITS`], which the
    /// parsers reject, counts as not stated).
    pub fn scale_out_gbits(&self) -> Option<f64> {
        scale_out_figures(&self.interconnect)
            .filter_map(|(_, gbits)| gbits.ok())
            .find(|g| limits::OFFERING_SCALE_OUT_GBITS.contains(*g))
    }

    /// Whether the instance has a multi-node RDMA fabric (EFA, InfiniBand,
    /// RoCE, TCPX) fast enough for multi-instance model parallelism.
    pub fn has_fast_fabric(&self) -> bool {
        self.scale_out_gbits().is_some_and(|g| g >= 1600.0)
    }

    /// The on-demand price, else the spot price: the price to sort and show by default.
    pub fn list_price(&self) -> f64 {
        self.price_per_hour
            .or(self.spot_price_per_hour)
            .unwrap_or(f64::INFINITY)
    }

    /// The date part of `source_snapshot` (first `YYYY-MM-DD` found), if any.
    pub fn snapshot_date(&self) -> Option<&str> {
        find_date(&self.source_snapshot)
    }
}

/// The scale-out parts of an interconnect (after the first `+`) that state a
/// figure after their last `-`, each with that figure parsed as a number.
fn scale_out_figures(interconnect: &str) -> impl Iterator<Item = (&str, Result<f64, ()>)> {
    interconnect.split('+').skip(1).filter_map(|part| {
        let (_, figure) = part.rsplit_once('-')?;
        Some((figure, figure.trim().parse::<f64>().map_err(|_| ())))
    })
}

/// An `interconnect` cell: the scale-up fabric, then `+`-separated scale-out
/// networks whose bandwidth, where stated (`efa-3200`), is a number of Gb/s
/// within [`limits::OFFERING_SCALE_OUT_GBITS`].
fn interconnect(row: &Row<'_>) -> Result<String> {
    let text = row.opt_string("interconnect").unwrap_or_default();
    for (figure, gbits) in scale_out_figures(&text) {
        if !gbits.is_ok_and(|g| limits::OFFERING_SCALE_OUT_GBITS.contains(g)) {
            return Err(row.error(CatalogError::invalid(
                "interconnect",
                &text,
                format!(
                    "a fabric, then `+network-<Gb/s>` parts (nvlink+efa-3200) whose Gb/s (`{figure}`) is {}",
                    limits::OFFERING_SCALE_OUT_GBITS.describe()
                ),
            )));
        }
    }
    Ok(text)
}

/// The first `YYYY-MM-DD` in `s`.
pub fn find_date(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    (0..b.len().saturating_sub(9)).find_map(|i| {
        let w = &b[i..i + 10];
        let ok = w.iter().enumerate().all(|(j, c)| match j {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        });
        ok.then(|| &s[i..i + 10])
    })
}

/// A provider region and where it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Region {
    /// Provider id.
    pub provider: String,
    /// Region id as the provider names it.
    pub region: String,
    /// ISO 3166 alpha-2 country code ("" when the provider gives none).
    pub country: String,
    /// Continent code (EU, NA, AS, ...).
    pub continent: String,
    /// In an EU member state.
    pub eu: bool,
    /// In an EEA member state.
    pub eea: bool,
    /// City or area, for display.
    pub location: String,
}

pub(crate) fn parse_offerings(file: &str, text: &str) -> Result<Vec<Offering>> {
    let table = Table::parse(file, text)?;
    table.require(&[
        "provider",
        "instance_type",
        "accelerator",
        "accelerator_count",
        "region",
        "price_per_hour",
    ])?;
    let mut dups = DuplicateCheck::new();
    let mut out = Vec::new();
    for row in table.rows() {
        let provider = row.string("provider")?.to_ascii_lowercase();
        let instance_type = row.string("instance_type")?;
        let region = row.string("region")?;
        let zone = row.opt_string("zone");
        let key = format!(
            "{provider}/{instance_type}/{region}/{}",
            zone.as_deref().unwrap_or("")
        );
        dups.check(&row, "instance_type", &key)?;
        out.push(Offering {
            accelerator: row.string("accelerator")?,
            gpu: None,
            accelerator_count: row.span("accelerator_count", limits::OFFERING_ACCELERATOR_COUNT)?,
            vcpus: row.opt_span("vcpus", limits::OFFERING_VCPUS)?,
            memory_gib: row.opt_span("memory_gib", limits::OFFERING_MEMORY_GIB)?,
            zone,
            price_per_hour: price(&row, "price_per_hour")?,
            spot_price_per_hour: price(&row, "spot_price_per_hour")?,
            interconnect: interconnect(&row)?,
            source_snapshot: row
                .opt_string("source_snapshot")
                .unwrap_or_else(|| file.to_string()),
            provider,
            instance_type,
            region,
        });
    }
    Ok(out)
}

/// A price cell: empty or 0 = not offered, else within
/// [`limits::OFFERING_PRICE_USD_PER_HOUR`].
fn price(row: &Row<'_>, column: &str) -> Result<Option<f64>> {
    Ok(row
        .opt_span(column, limits::OFFERING_PRICE_USD_PER_HOUR)?
        .filter(|p| *p > 0.0))
}

/// Imports SkyPilot's catalog format (`vms.csv`: InstanceType, AcceleratorName,
/// AcceleratorCount, vCPUs, MemoryGiB, Price, SpotPrice, Region,
/// AvailabilityZone). Rows without an accelerator (CPU instances) or without
/// a price are skipped; `provider` names the cloud the file describes and
/// must not be empty. A second row with the same instance type, region and
/// zone is rejected, as in `cloud_offerings.csv`.
pub fn import_skypilot_vms(file: &str, text: &str, provider: &str) -> Result<Vec<Offering>> {
    let provider = provider.trim().to_ascii_lowercase();
    if provider.is_empty() {
        return Err(CatalogError::invalid(
            "--skypilot-provider",
            "",
            "the provider the file describes (aws, gcp, azure, ...)",
        )
        .in_file(file));
    }
    let table = Table::parse(file, text)?;
    table.require(&[
        "InstanceType",
        "AcceleratorName",
        "AcceleratorCount",
        "Price",
        "Region",
    ])?;
    let snapshot = format!("{file} (SkyPilot vms.csv import)");
    let mut dups = DuplicateCheck::new();
    let mut out = Vec::new();
    for row in table.rows() {
        let Some(accelerator) = row.opt_string("AcceleratorName") else {
            continue;
        };
        let Some(on_demand) = price(&row, "Price")? else {
            continue;
        };
        let count = row.span("AcceleratorCount", limits::OFFERING_ACCELERATOR_COUNT)?;
        let instance_type = row.string("InstanceType")?;
        let region = row.string("Region")?;
        let zone = row.opt_string("AvailabilityZone");
        let key = format!("{instance_type}/{region}/{}", zone.as_deref().unwrap_or(""));
        dups.check(&row, "InstanceType", &key)?;
        out.push(Offering {
            provider: provider.clone(),
            instance_type,
            accelerator,
            gpu: None,
            accelerator_count: count,
            vcpus: row.opt_span("vCPUs", limits::OFFERING_VCPUS)?,
            memory_gib: row.opt_span("MemoryGiB", limits::OFFERING_MEMORY_GIB)?,
            region,
            zone,
            price_per_hour: Some(on_demand),
            spot_price_per_hour: price(&row, "SpotPrice")?,
            interconnect: String::new(),
            source_snapshot: snapshot.clone(),
        });
    }
    Ok(out)
}

pub(crate) fn parse_regions(file: &str, text: &str) -> Result<Vec<Region>> {
    let table = Table::parse(file, text)?;
    table.require(&["provider", "region", "country", "continent"])?;
    let mut dups = DuplicateCheck::new();
    let mut out = Vec::new();
    for row in table.rows() {
        let provider = row.string("provider")?.to_ascii_lowercase();
        let region = row.string("region")?;
        dups.check(&row, "region", &format!("{provider}/{region}"))?;
        out.push(Region {
            country: row.text("country").to_ascii_uppercase(),
            continent: row.text("continent").to_ascii_uppercase(),
            eu: row.bool_or("eu", false)?,
            eea: row.bool_or("eea", false)?,
            location: row.text("location").to_string(),
            provider,
            region,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offering(interconnect: &str) -> Offering {
        Offering {
            provider: "aws".into(),
            instance_type: "p5.48xlarge".into(),
            accelerator: "H100".into(),
            gpu: None,
            accelerator_count: 8.0,
            vcpus: None,
            memory_gib: None,
            region: "us-east-1".into(),
            zone: None,
            price_per_hour: Some(1.0),
            spot_price_per_hour: None,
            interconnect: interconnect.into(),
            source_snapshot: "aws-od 2026-01-21; spot".into(),
        }
    }

    #[test]
    fn interconnect_parsing() {
        let o = offering("nvlink+efa-3200");
        assert_eq!(o.scale_up(), ScaleUp::Nvlink);
        assert_eq!(o.scale_out_gbits(), Some(3200.0));
        assert!(o.has_fast_fabric());
        assert!(!offering("nvlink+efa-400").has_fast_fabric());
        assert_eq!(offering("pcie").scale_up(), ScaleUp::Pcie);
        assert_eq!(offering("").scale_up(), ScaleUp::Unknown);
        assert_eq!(offering("").snapshot_date(), Some("2026-01-21"));
    }

    #[test]
    fn skypilot_import_skips_cpu_rows_and_rejects_bad_counts() {
        let csv = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n\
                   m5.large,,,2,8,0.096,0.03,us-east-1,us-east-1a\n\
                   p5.48xlarge,H100,8,192,2048,98.32,30.1,us-east-1,us-east-1a\n";
        let o = import_skypilot_vms("vms.csv", csv, "AWS").unwrap();
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].provider, "aws");
        assert_eq!(o[0].accelerator_count, 8.0);
        assert_eq!(o[0].spot_price_per_hour, Some(30.1));
        let bad = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n\
                   p5,H100,x,1,1,1,,us-east-1,\n";
        let err = import_skypilot_vms("vms.csv", bad, "aws")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("AcceleratorCount") && err.contains("line 2"),
            "{err}"
        );
    }

    #[test]
    fn skypilot_import_rejects_duplicates_empty_provider_and_absurd_counts() {
        let header =
            "InstanceType,AcceleratorName,AcceleratorCount,Price,Region,AvailabilityZone\n";
        let row = "p5,H100,8,98,us-east-1,us-east-1a\n";
        let err = import_skypilot_vms("vms.csv", &format!("{header}{row}{row}"), "aws")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 3") && err.contains("first defined on line 2"),
            "{err}"
        );
        let err = import_skypilot_vms("vms.csv", &format!("{header}{row}"), " ")
            .unwrap_err()
            .to_string();
        assert!(err.contains("--skypilot-provider"), "{err}");
        let err = import_skypilot_vms(
            "vms.csv",
            &format!("{header}p5,H100,1e12,98,us-east-1,\n"),
            "aws",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("AcceleratorCount") && err.contains("1e12") && err.contains("65536"),
            "{err}"
        );
    }

    #[test]
    fn offerings_reject_absurd_counts_and_prices() {
        let header = "provider,instance_type,accelerator,accelerator_count,region,price_per_hour\n";
        for (row, needle, range) in [
            (
                "aws,p5,H100,1e12,us-east-1,98",
                "accelerator_count",
                "at most 65536",
            ),
            (
                "aws,p5,H100,8,us-east-1,1e300",
                "price_per_hour",
                "from 0 to 10000000",
            ),
            (
                "aws,p5,H100,8,us-east-1,NaN",
                "price_per_hour",
                "from 0 to 10000000",
            ),
        ] {
            let err = parse_offerings("o.csv", &format!("{header}{row}\n"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle) && err.contains(range), "{err}");
        }
    }

    /// Found by fuzzing (`catalog_offerings`): `nvlink+efa-1e308` was
    /// accepted and passed every fast-fabric test; a stated scale-out
    /// bandwidth must be a number of Gb/s within the limit.
    #[test]
    fn absurd_scale_out_bandwidth_is_rejected() {
        let header = "provider,instance_type,accelerator,accelerator_count,region,price_per_hour,interconnect\n";
        for bad in [
            "nvlink+efa-1e308",
            "nvlink+efa-NaN",
            "nvlink+efa-inf",
            "nvlink+ib-0",
            "pcie+ib-",
            "nvlink+efa-32OO",
        ] {
            let e = parse_offerings(
                "o.csv",
                &format!("{header}aws,p5,H100,8,us-east-1,98,{bad}\n"),
            )
            .unwrap_err();
            assert_eq!(
                (e.line, e.field.as_deref()),
                (Some(2), Some("interconnect")),
                "{bad}: {e}"
            );
            assert!(e.to_string().contains("at most 100000"), "{e}");
        }
        for good in [
            "nvlink+efa-3200",
            "nvlink+ib",
            "nvlink-nvl72+ib",
            "pcie",
            "",
        ] {
            parse_offerings(
                "o.csv",
                &format!("{header}aws,p5,H100,8,us-east-1,98,{good}\n"),
            )
            .unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        assert_eq!(offering("nvlink+efa-1e308").scale_out_gbits(), None);
        assert!(!offering("nvlink+efa-inf").has_fast_fabric());
    }
}
