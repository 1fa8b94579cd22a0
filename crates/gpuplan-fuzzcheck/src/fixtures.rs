//! What every check starts from, built once per process: a small catalog
//! (the bundled GPUs, models and regions with eight offerings, so that a
//! build and a search take milliseconds) and the bundled calibration.

use gpuplan_catalog::{Catalog, CatalogBuilder, TableKind};
use gpuplan_core::Calibration;
use std::sync::OnceLock;

/// The offerings of the small catalog (those of `gpuplan-core/tests/plan.rs`).
pub const OFFERINGS: &str = "provider,instance_type,accelerator,accelerator_count,vcpus,memory_gib,region,zone,price_per_hour,spot_price_per_hour,interconnect,source_snapshot
aws,p5.48xlarge,H100,8,192,2048,us-east-1,,98.32,40.0,nvlink+efa-3200,fuzz 2026-01-01
aws,g6e.xlarge,L40S,1,4,32,us-east-1,,1.86,0.9,pcie,fuzz 2026-01-01
aws,g6e.12xlarge,L40S,4,48,384,eu-west-1,,10.49,4.0,pcie,fuzz 2026-01-01
gcp,a3-highgpu-1g,H100,1,26,234,europe-west4,,11.06,3.1,nvlink,fuzz 2026-01-01
gcp,a2-ultragpu-1g,A100-80GB,1,12,170,us-central1,,5.07,1.6,nvlink,fuzz 2026-01-01
gcp,g2-standard-4,L4,1,4,16,europe-west4,,0.71,0.28,pcie,fuzz 2026-01-01
lambda,gpu_1x_h100_sxm5,H100,1,26,225,us-east-1,,3.29,,nvlink,fuzz 2026-01-01
azure,Standard_NC24ads_A100_v4,A100-80GB,1,24,220,westeurope,,3.67,0.9,pcie,fuzz 2026-01-01
";

/// The builder of the small catalog: the bundled tables with [`OFFERINGS`]
/// in place of the bundled offerings. A check clones it and adds its table.
pub fn builder() -> &'static CatalogBuilder {
    static BUILDER: OnceLock<CatalogBuilder> = OnceLock::new();
    BUILDER.get_or_init(|| {
        let mut b = CatalogBuilder::embedded().expect("the bundled catalog loads");
        b.clear_offerings();
        b.extend(TableKind::Offerings, "fuzz/offerings.csv", OFFERINGS)
            .expect("the fuzz offerings parse");
        b
    })
}

/// The small catalog.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| builder().clone().build().expect("the small catalog builds"))
}

/// The bundled calibration.
pub fn calibration() -> &'static Calibration {
    static CAL: OnceLock<Calibration> = OnceLock::new();
    CAL.get_or_init(Calibration::bundled)
}

/// `data` as text, or None when it is not UTF-8 (the CLI rejects such a
/// file when reading it, before any parser runs).
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
