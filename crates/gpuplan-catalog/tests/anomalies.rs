//! The anomaly checks on the bundled catalog: the oddities the shared data README names are
//! flagged, and ordinary rows are not.

use gpuplan_catalog::{AnomalyKind, Catalog, CatalogBuilder, PriceUse, TableKind};

/// The kinds flagged for (provider, instance type, region); panics if the row is missing.
fn kinds(c: &Catalog, provider: &str, instance: &str, region: &str) -> Vec<AnomalyKind> {
    let o = c
        .offerings()
        .iter()
        .find(|o| o.provider == provider && o.instance_type == instance && o.region == region)
        .unwrap_or_else(|| panic!("{provider}/{instance}/{region} is not in the catalog"));
    c.offering_anomalies(o).iter().map(|a| a.kind).collect()
}

#[test]
fn known_oddities_of_the_bundled_catalog_are_flagged() {
    let c = Catalog::embedded().expect("bundled catalog loads");
    let cases = [
        (
            "runpod",
            "1x_L40S_SECURE",
            "US",
            AnomalyKind::SpotNotBelowOnDemand,
        ),
        (
            "runpod",
            "8x_L40S_SECURE",
            "US",
            AnomalyKind::InstanceShapeImplausible,
        ),
        (
            "aws",
            "p6-b200.48xlarge",
            "us-east-2",
            AnomalyKind::SpotAtFloor,
        ),
        (
            "gcp",
            "a3-highgpu-8g",
            "europe-north1",
            AnomalyKind::SpotAtFloor,
        ),
        (
            "gcp",
            "a3-highgpu-8g",
            "us-central1",
            AnomalyKind::RegionPriceOutlier,
        ),
        (
            "gcp",
            "a3-highgpu-1g",
            "us-west1",
            AnomalyKind::RegionPriceOutlier,
        ),
        (
            "lambda",
            "gpu_8x_h100_sxm5",
            "us-east-1",
            AnomalyKind::RegionAvailabilityUnknown,
        ),
        (
            "crusoe",
            "NVIDIA H100 80GB HGX (per GPU)",
            "us",
            AnomalyKind::InstanceShapeImplausible,
        ),
    ];
    for (provider, instance, region, kind) in cases {
        let got = kinds(&c, provider, instance, region);
        assert!(
            got.contains(&kind),
            "{provider}/{instance}/{region}: expected {kind}, got {got:?}"
        );
    }
}

#[test]
fn the_gcp_a3_high_majority_price_is_not_the_outlier() {
    // Six regions at ~$5.4/GPU-h, ten at $11–14: the six are flagged, the ten are not.
    let c = Catalog::embedded().expect("bundled catalog loads");
    let flagged: Vec<&str> = c
        .anomalies()
        .iter()
        .filter(|a| a.kind == AnomalyKind::RegionPriceOutlier && a.instance_type == "a3-highgpu-8g")
        .map(|a| a.region.as_str())
        .collect();
    assert_eq!(flagged.len(), 6, "{flagged:?}");
    assert!(!flagged.contains(&"europe-west4"));
    let a = c
        .anomalies()
        .iter()
        .find(|a| {
            a.kind == AnomalyKind::RegionPriceOutlier
                && a.region == "us-central1"
                && a.instance_type == "a3-highgpu-8g"
        })
        .expect("us-central1 flagged");
    assert_eq!(a.affects, PriceUse::OnDemand);
    assert!(a.reason.contains("below the majority"), "{}", a.reason);
}

#[test]
fn ordinary_rows_are_not_flagged() {
    let c = Catalog::embedded().expect("bundled catalog loads");
    for (provider, instance, region) in [
        ("aws", "p5.48xlarge", "us-east-1"),
        ("aws", "p4d.24xlarge", "us-east-1"),
        ("gcp", "a3-highgpu-8g", "europe-west4"),
        ("azure", "Standard_ND96isr_H100_v5", "eastus"),
    ] {
        let got = kinds(&c, provider, instance, region);
        assert!(got.is_empty(), "{provider}/{instance}/{region}: {got:?}");
    }
}

#[test]
fn every_anomaly_is_indexed_and_names_a_real_row() {
    let c = Catalog::embedded().expect("bundled catalog loads");
    assert!(!c.anomalies().is_empty());
    for a in c.anomalies() {
        let o = c
            .offerings()
            .iter()
            .find(|o| {
                o.provider == a.provider
                    && o.instance_type == a.instance_type
                    && o.region == a.region
            })
            .expect("anomaly names an offering");
        assert!(c.offering_anomalies(o).contains(&a), "{a:?} not indexed");
        assert!(!a.reason.is_empty());
    }
}

#[test]
fn user_offerings_are_checked_too() {
    let mut b = CatalogBuilder::embedded().expect("bundled tables");
    let csv = "provider,instance_type,accelerator,accelerator_count,vcpus,memory_gib,region,price_per_hour,spot_price_per_hour\n\
               myco,box-8x,H100,8,96,1024,eu-1,20,25\n";
    b.extend(TableKind::Offerings, "mine.csv", csv)
        .expect("parses");
    let c = b.build().expect("builds");
    let got = kinds(&c, "myco", "box-8x", "eu-1");
    assert_eq!(got, vec![AnomalyKind::SpotNotBelowOnDemand]);
    let reason = &c
        .anomalies()
        .iter()
        .find(|a| a.provider == "myco")
        .expect("flagged")
        .reason;
    assert_eq!(
        reason,
        "spot $25.00/h ≥ on-demand $20.00/h: one of the two is wrong"
    );
}
