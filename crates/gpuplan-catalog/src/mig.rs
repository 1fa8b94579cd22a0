//! MIG profiles (`data/mig_profiles.csv`).

use crate::error::{CatalogError, Result};
use crate::gpu::narrow;
use crate::limits;
use crate::table::{DuplicateCheck, Origin, Table};
use serde::Serialize;

/// One MIG GPU-instance profile of one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MigProfile {
    /// Canonical GPU name.
    pub gpu: String,
    /// Profile name as nvidia-smi shows it (`1g.10gb`, `3g.40gb` ...).
    pub profile: String,
    /// Compute (GPC) slices.
    pub compute_slices: u32,
    /// Memory slices.
    pub memory_slices: u32,
    /// Usable memory, GiB, as `nvidia-smi mig -lgip` reports (None = not captured).
    pub memory_gib: Option<f64>,
    /// Most instances of this profile on one GPU.
    pub max_instances: u32,
    /// Valid start slices on the memory-slice axis.
    pub valid_start_slices: Vec<u32>,
    /// Where the figures come from.
    pub source: String,
}

/// Parses `mig_profiles.csv`; each profile comes with its row (its GPU is
/// checked against the GPUs when the catalog is built).
pub(crate) fn parse_mig_profiles(file: &str, text: &str) -> Result<Vec<(MigProfile, Origin)>> {
    let table = Table::parse(file, text)?;
    table.require(&[
        "gpu",
        "profile",
        "compute_slices",
        "memory_slices",
        "max_instances",
    ])?;
    let mut dups = DuplicateCheck::new();
    let mut out = Vec::new();
    for row in table.rows() {
        let gpu = row.string("gpu")?;
        let profile = row.string("profile")?;
        dups.check(&row, "profile", &format!("{gpu}/{profile}"))?;
        let mut starts = Vec::new();
        for part in row.text("valid_start_slices").split(';') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            match part.parse::<u64>() {
                Ok(v) if limits::MIG_START_SLICE.contains(v) => starts.push(narrow(v)),
                _ => {
                    return Err(row.error(CatalogError::invalid(
                        "valid_start_slices",
                        part,
                        format!(
                            "whole numbers separated by `;`, each {}",
                            limits::MIG_START_SLICE.describe()
                        ),
                    )))
                }
            }
        }
        let origin = Origin::of(&row);
        let profile = MigProfile {
            compute_slices: narrow(row.count("compute_slices", limits::MIG_SLICES)?),
            memory_slices: narrow(row.count("memory_slices", limits::MIG_SLICES)?),
            memory_gib: row
                .opt_span("memory_gib", limits::GPU_MEMORY_GIB)?
                .filter(|m| *m > 0.0),
            max_instances: narrow(row.count("max_instances", limits::MIG_INSTANCES)?),
            valid_start_slices: starts,
            source: row.text("source").to_string(),
            gpu,
            profile,
        };
        out.push((profile, origin));
    }
    Ok(out)
}
