//! Shared fixtures of the unit tests: the bundled catalog, loaded once.

use gpuplan_catalog::{Catalog, GpuSpec, ModelArch};
use std::sync::OnceLock;

/// The bundled catalog.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::embedded().expect("the bundled catalog loads"))
}

/// A bundled model by id.
pub fn model(id: &str) -> ModelArch {
    catalog().model(id).unwrap_or_else(|e| panic!("{e}"))
}

/// A bundled GPU by name.
pub fn gpu(name: &str) -> &'static GpuSpec {
    catalog().gpu(name).unwrap_or_else(|e| panic!("{e}"))
}
