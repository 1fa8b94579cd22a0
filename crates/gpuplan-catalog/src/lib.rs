//! The catalog of gpuplan: accelerator specs, MIG profiles, cloud offerings,
//! regions, model architectures and their published checkpoints, embedded in the binary and overridable
//! by user files. Parsing and validation only; reading files is the caller's job.
//!
//! ```
//! use gpuplan_catalog::Catalog;
//! let catalog = Catalog::embedded().unwrap();
//! let h100 = catalog.gpu("h100").unwrap();
//! assert_eq!(h100.name, "H100-SXM-80GB");
//! let model = catalog.model("meta-llama/Llama-3.1-70B").unwrap();
//! assert_eq!(model.id, "llama-3.1-70b");
//! // Rows whose price or shape looks wrong are flagged when the catalog is built, never dropped.
//! let p5 = catalog
//!     .offerings()
//!     .iter()
//!     .find(|o| o.instance_type == "p5.48xlarge" && o.region == "us-east-1")
//!     .unwrap();
//! assert!(catalog.offering_anomalies(p5).is_empty());
//! assert!(!catalog.anomalies().is_empty());
//! ```

mod anomalies;
mod benchmarks;
mod catalog;
mod checkpoint;
mod error;
mod gpu;
mod hf;
pub mod limits;
mod mig;
mod model;
mod nonllm;
mod nonllm_hf;
mod offering;
mod table;

pub use anomalies::{
    Anomaly, AnomalyKind, PriceUse, GPU_HOUR_HIGH_FACTOR, GPU_HOUR_LOW_SHARE, MAX_HOST_GIB_PER_GPU,
    MAX_VCPUS_PER_GPU, MIN_VCPUS_PER_GPU, REGION_HIGH_FACTOR, REGION_LOW_SHARE, SPOT_FLOOR_SHARE,
};
pub use benchmarks::{
    parse_benchmarks, BenchmarkKind, BenchmarkRow, BUNDLED_BENCHMARKS_DEV,
    BUNDLED_BENCHMARKS_DEV_2, BUNDLED_BENCHMARKS_HOLDOUT,
};
pub use catalog::{Catalog, CatalogBuilder, TableKind};
pub use checkpoint::{Checkpoint, CheckpointFormat, Variant};
pub use error::{CatalogError, CatalogErrorKind, Result};
pub use gpu::{GpuSpec, Precision, ALL_PRECISIONS};
pub use hf::{import_hf_config, SUPPORTED_MODEL_TYPES};
pub use mig::MigProfile;
pub use model::{
    check_model, parse_parametric_gpt, ArchRules, EncoderSpec, MlaSpec, MlpType, ModelArch,
    MoeSpec, ParamBreakdown,
};
pub use nonllm::{
    Component, ComponentKind, FeedForward, NonLlmCatalog, NonLlmFamily, NonLlmModel,
    BUNDLED_NONLLM_COMPONENTS, BUNDLED_NONLLM_MODELS,
};
pub use nonllm_hf::{import_nonllm_config, ENCODER_MODEL_TYPES};
pub use offering::{find_date, import_skypilot_vms, Offering, Region, ScaleUp};
