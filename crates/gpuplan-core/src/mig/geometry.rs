//! MIG geometry of one GPU: its profiles on the two slice axes, the placement
//! rules of `data/mig_notes.md`, the check of a user-given combination, and
//! the enumeration of every valid layout.
//!
//! A set of GPU instances is valid when (a) each instance sits at one of its
//! profile's valid starts on the memory-slice axis, (b) no two instances
//! overlap on that axis, (c) their compute slices sum to at most the GPU's
//! compute slices (7, or 4 on A30 and RTX PRO 6000), (d) at most one instance
//! carries the media extensions (`+me`), and (e) no profile exceeds its
//! `max_instances`.

use crate::error::{CoreError, Result};
use gpuplan_catalog::{Catalog, MigProfile};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;

/// Most memory slices a geometry may have: the enumeration keeps occupied
/// slices in a bit set, and NVIDIA parts have 8 (or 4).
pub const MAX_MEMORY_SLICES: u32 = 16;

/// Most valid layouts a GPU may have: NVIDIA's 7-slice parts have 722 with
/// base profiles and a few thousand with the `+me` variants. A user catalog
/// beyond this is refused rather than enumerated for hours.
pub const MAX_LAYOUTS: usize = 1_000_000;

/// One MIG profile as the geometry uses it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SliceProfile {
    /// Profile name as nvidia-smi shows it (`3g.40gb`).
    pub name: String,
    /// Compute (SM) slices.
    pub compute_slices: u32,
    /// Memory slices (the placement axis).
    pub memory_slices: u32,
    /// Usable memory, GiB, as `nvidia-smi mig -lgip` reports (None = not captured).
    pub memory_gib: Option<f64>,
    /// Most instances of this profile on one GPU.
    pub max_instances: u32,
    /// Valid starts on the memory-slice axis (`nvidia-smi mig -lgipp`).
    pub valid_starts: Vec<u32>,
    /// Whether the instance takes the media engines (`+me`, `+me.all`): at
    /// most one such instance per GPU.
    pub media_extensions: bool,
    /// Whether this is a base profile (no `+me`, `+gfx`, `-me` suffix): the
    /// profiles the packer and the layout count use, as mig-parted's builder does.
    pub base: bool,
}

/// The MIG geometry of one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MigGeometry {
    /// Canonical GPU name.
    pub gpu: String,
    /// Compute slices of the whole GPU (the largest profile's).
    pub compute_slices: u32,
    /// Memory slices of the whole GPU (the largest profile's).
    pub memory_slices: u32,
    /// Its profiles, in catalog order.
    pub profiles: Vec<SliceProfile>,
}

/// One GPU instance: a profile (index into [`MigGeometry::profiles`]) at a
/// start on the memory-slice axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Placement {
    /// First memory slice it occupies (placements order by start first).
    pub start: u32,
    /// Index of the profile in the geometry.
    pub profile: usize,
}

/// Why a combination of instances is not a valid layout.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LayoutViolation {
    /// The GPU has no profile of that name.
    UnknownProfile {
        /// The name given.
        profile: String,
        /// The GPU's profiles.
        known: Vec<String>,
    },
    /// The profile may not start at that memory slice.
    StartNotAllowed {
        /// The profile.
        profile: String,
        /// The start given.
        start: u32,
        /// Its valid starts.
        allowed: Vec<u32>,
    },
    /// Two instances share memory slices.
    Overlap {
        /// The earlier instance (profile@start).
        first: String,
        /// The later instance (profile@start).
        second: String,
        /// The memory slices both occupy, first and last.
        slices: (u32, u32),
    },
    /// The instances need more compute slices than the GPU has.
    ComputeOverBudget {
        /// Compute slices the instances need.
        used: u32,
        /// Compute slices of the GPU.
        budget: u32,
    },
    /// More than one instance takes the media engines.
    MediaExtensionsOverLimit {
        /// The `+me` instances given.
        instances: Vec<String>,
    },
    /// More instances of one profile than the GPU allows.
    TooManyInstances {
        /// The profile.
        profile: String,
        /// Instances given.
        count: u32,
        /// The most allowed.
        max: u32,
    },
}

impl fmt::Display for LayoutViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutViolation::UnknownProfile { profile, known } => {
                write!(
                    f,
                    "no profile `{profile}` on this GPU (has {})",
                    known.join(", ")
                )
            }
            LayoutViolation::StartNotAllowed {
                profile,
                start,
                allowed,
            } => {
                let list: Vec<String> = allowed.iter().map(u32::to_string).collect();
                write!(
                    f,
                    "{profile} may not start at memory slice {start} (valid starts: {})",
                    if list.is_empty() {
                        "none".to_string()
                    } else {
                        list.join(", ")
                    }
                )
            }
            LayoutViolation::Overlap {
                first,
                second,
                slices,
            } => {
                let at = if slices.0 == slices.1 {
                    format!("memory slice {}", slices.0)
                } else {
                    format!("memory slices {}-{}", slices.0, slices.1)
                };
                write!(f, "{first} and {second} overlap on {at}")
            }
            LayoutViolation::ComputeOverBudget { used, budget } => {
                write!(f, "needs {used} compute slices, the GPU has {budget}")
            }
            LayoutViolation::MediaExtensionsOverLimit { instances } => write!(
                f,
                "at most one instance may take the media engines (+me), got {}",
                instances.join(", ")
            ),
            LayoutViolation::TooManyInstances {
                profile,
                count,
                max,
            } => write!(f, "{count} × {profile}, at most {max} fit on one GPU"),
        }
    }
}

/// A valid layout of one GPU: its instances ordered by start.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct GpuLayout {
    /// The instances, by start.
    pub placements: Vec<Placement>,
}

impl MigGeometry {
    /// The geometry of `gpu` from the catalog's MIG profiles; an error when
    /// the GPU has none or its grid is larger than [`MAX_MEMORY_SLICES`].
    pub fn of(catalog: &Catalog, gpu: &str) -> Result<MigGeometry> {
        let spec = catalog.gpu(gpu)?;
        let rows = catalog.mig_profiles_of(&spec.name);
        if rows.is_empty() {
            let mig_gpus = mig_gpu_names(catalog);
            return Err(CoreError::invalid(
                "gpu",
                gpu,
                format!("a MIG-capable GPU ({})", mig_gpus.join(", ")),
            ));
        }
        let profiles: Vec<SliceProfile> = rows.into_iter().map(slice_profile).collect();
        // The whole GPU: the largest profile on each axis (7g.80gb: 7 and 8).
        let compute_slices = profiles.iter().map(|p| p.compute_slices).max().unwrap_or(0);
        let memory_slices = profiles.iter().map(|p| p.memory_slices).max().unwrap_or(0);
        if memory_slices > MAX_MEMORY_SLICES {
            return Err(CoreError::invalid(
                "mig_profiles.memory_slices",
                memory_slices.to_string(),
                format!("at most {MAX_MEMORY_SLICES} memory slices per GPU"),
            ));
        }
        let geometry = MigGeometry {
            gpu: spec.name.clone(),
            compute_slices,
            memory_slices,
            profiles,
        };
        if geometry.walk(|_| true, MAX_LAYOUTS).len() >= MAX_LAYOUTS {
            return Err(CoreError::invalid(
                "mig_profiles",
                &geometry.gpu,
                format!("profiles with at most {MAX_LAYOUTS} valid layouts per GPU"),
            ));
        }
        Ok(geometry)
    }

    /// The index of a profile by name (case-insensitive).
    pub fn profile_index(&self, name: &str) -> Option<usize> {
        self.profiles
            .iter()
            .position(|p| p.name.eq_ignore_ascii_case(name.trim()))
    }

    /// `profile@start` of a placement, as messages and tables print it.
    pub fn label(&self, p: Placement) -> String {
        format!("{}@{}", self.profiles[p.profile].name, p.start)
    }

    /// Checks a combination of `(profile name, start)` instances; on success
    /// the layout, else every rule it breaks.
    pub fn check(
        &self,
        instances: &[(String, u32)],
    ) -> std::result::Result<GpuLayout, Vec<LayoutViolation>> {
        let mut violations = Vec::new();
        let mut placements = Vec::new();
        for (name, start) in instances {
            let Some(i) = self.profile_index(name) else {
                violations.push(LayoutViolation::UnknownProfile {
                    profile: name.clone(),
                    known: self.profiles.iter().map(|p| p.name.clone()).collect(),
                });
                continue;
            };
            let p = &self.profiles[i];
            if !self.start_allowed(p, *start) {
                violations.push(LayoutViolation::StartNotAllowed {
                    profile: p.name.clone(),
                    start: *start,
                    allowed: p.valid_starts.clone(),
                });
                continue;
            }
            placements.push(Placement {
                profile: i,
                start: *start,
            });
        }
        placements.sort();
        violations.extend(self.overlaps(&placements));
        violations.extend(self.budget_violations(&placements));
        if violations.is_empty() {
            Ok(GpuLayout { placements })
        } else {
            Err(violations)
        }
    }

    /// Whether `start` is one of the profile's starts and the instance ends
    /// inside the GPU.
    fn start_allowed(&self, p: &SliceProfile, start: u32) -> bool {
        p.valid_starts.contains(&start) && start + p.memory_slices <= self.memory_slices
    }

    /// Every pair of placements (sorted by start) sharing memory slices.
    fn overlaps(&self, placements: &[Placement]) -> Vec<LayoutViolation> {
        let mut out = Vec::new();
        for (i, a) in placements.iter().enumerate() {
            let a_end = a.start + self.profiles[a.profile].memory_slices;
            for b in &placements[i + 1..] {
                let b_end = b.start + self.profiles[b.profile].memory_slices;
                // Shared slices: from the later start to the earlier end, exclusive.
                let (lo, hi) = (a.start.max(b.start), a_end.min(b_end));
                if lo < hi {
                    out.push(LayoutViolation::Overlap {
                        first: self.label(*a),
                        second: self.label(*b),
                        slices: (lo, hi - 1),
                    });
                }
            }
        }
        out
    }

    /// Compute budget, media-extension and per-profile count violations.
    fn budget_violations(&self, placements: &[Placement]) -> Vec<LayoutViolation> {
        let mut out = Vec::new();
        // Compute slices all instances take together.
        let used: u32 = placements
            .iter()
            .map(|p| self.profiles[p.profile].compute_slices)
            .sum();
        if used > self.compute_slices {
            out.push(LayoutViolation::ComputeOverBudget {
                used,
                budget: self.compute_slices,
            });
        }
        let media: Vec<String> = placements
            .iter()
            .filter(|p| self.profiles[p.profile].media_extensions)
            .map(|p| self.label(*p))
            .collect();
        if media.len() > 1 {
            out.push(LayoutViolation::MediaExtensionsOverLimit { instances: media });
        }
        let mut counts: HashMap<usize, u32> = HashMap::new();
        for p in placements {
            *counts.entry(p.profile).or_default() += 1;
        }
        let mut over: Vec<(usize, u32)> = counts
            .into_iter()
            .filter(|(i, n)| *n > self.profiles[*i].max_instances)
            .collect();
        over.sort();
        for (i, count) in over {
            out.push(LayoutViolation::TooManyInstances {
                profile: self.profiles[i].name.clone(),
                count,
                max: self.profiles[i].max_instances,
            });
        }
        out
    }

    /// Every valid non-empty layout (partial or full) built from the
    /// profiles `use_profile` admits, each set of placements once.
    pub fn layouts(&self, use_profile: impl Fn(&SliceProfile) -> bool) -> Vec<GpuLayout> {
        // `of` refused geometries with MAX_LAYOUTS or more.
        self.walk(use_profile, MAX_LAYOUTS)
    }

    /// At most `limit` layouts of the admitted profiles.
    fn walk(&self, use_profile: impl Fn(&SliceProfile) -> bool, limit: usize) -> Vec<GpuLayout> {
        let allowed: Vec<usize> = (0..self.profiles.len())
            .filter(|&i| use_profile(&self.profiles[i]))
            .collect();
        let mut walk = Walk {
            geometry: self,
            allowed: &allowed,
            counts: vec![0; self.profiles.len()],
            current: Vec::new(),
            out: Vec::new(),
            limit,
        };
        walk.walk_from(0, 0, 0, false);
        walk.out
    }

    /// Whether no instance of the admitted profiles can be added to `layout`.
    pub fn is_full(&self, layout: &GpuLayout, use_profile: impl Fn(&SliceProfile) -> bool) -> bool {
        let mut occupied = 0u64;
        let mut compute = 0;
        let mut media = false;
        let mut counts = vec![0u32; self.profiles.len()];
        for p in &layout.placements {
            let prof = &self.profiles[p.profile];
            occupied |= span_mask(p.start, prof.memory_slices);
            compute += prof.compute_slices;
            media |= prof.media_extensions;
            counts[p.profile] += 1;
        }
        !self.profiles.iter().enumerate().any(|(i, p)| {
            use_profile(p)
                && counts[i] < p.max_instances
                && compute + p.compute_slices <= self.compute_slices
                && !(media && p.media_extensions)
                && p.valid_starts.iter().any(|&s| {
                    self.start_allowed(p, s) && occupied & span_mask(s, p.memory_slices) == 0
                })
        })
    }
}

/// Bits `start .. start + len` set: the memory slices an instance occupies.
fn span_mask(start: u32, len: u32) -> u64 {
    ((1u64 << len) - 1) << start
}

/// The depth-first walk of [`MigGeometry::layouts`]: at each free memory
/// slice, either leave it free or start one admitted profile there.
struct Walk<'a> {
    geometry: &'a MigGeometry,
    allowed: &'a [usize],
    counts: Vec<u32>,
    current: Vec<Placement>,
    out: Vec<GpuLayout>,
    /// Stop once this many layouts are found.
    limit: usize,
}

impl Walk<'_> {
    fn walk_from(&mut self, slice: u32, occupied: u64, compute: u32, media: bool) {
        let g = self.geometry;
        if self.out.len() >= self.limit {
            return;
        }
        if slice >= g.memory_slices {
            if !self.current.is_empty() {
                self.out.push(GpuLayout {
                    placements: self.current.clone(),
                });
            }
            return;
        }
        if occupied & (1 << slice) != 0 {
            self.walk_from(slice + 1, occupied, compute, media);
            return;
        }
        // Leave this slice free.
        self.walk_from(slice + 1, occupied, compute, media);
        for &i in self.allowed {
            let p = &g.profiles[i];
            let mask = span_mask(slice, p.memory_slices);
            let fits = g.start_allowed(p, slice)
                && occupied & mask == 0
                && compute + p.compute_slices <= g.compute_slices
                && self.counts[i] < p.max_instances
                && !(media && p.media_extensions);
            if !fits {
                continue;
            }
            self.counts[i] += 1;
            self.current.push(Placement {
                profile: i,
                start: slice,
            });
            self.walk_from(
                slice + 1,
                occupied | mask,
                compute + p.compute_slices,
                media || p.media_extensions,
            );
            self.current.pop();
            self.counts[i] -= 1;
        }
    }
}

/// The names of the GPUs with MIG profiles in the catalog.
pub fn mig_gpu_names(catalog: &Catalog) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in catalog.mig_profiles() {
        if !names.contains(&p.gpu) {
            names.push(p.gpu.clone());
        }
    }
    names
}

fn slice_profile(p: &MigProfile) -> SliceProfile {
    // The suffix after the memory size: `+me`, `+me.all`, `+gfx`, `-me`.
    let suffix = p
        .profile
        .find(['+', '-'])
        .map(|i| &p.profile[i..])
        .unwrap_or("");
    SliceProfile {
        name: p.profile.clone(),
        compute_slices: p.compute_slices,
        memory_slices: p.memory_slices,
        memory_gib: p.memory_gib,
        max_instances: p.max_instances,
        valid_starts: p.valid_start_slices.clone(),
        media_extensions: suffix.starts_with("+me"),
        base: suffix.is_empty(),
    }
}

/// Parses `profile@start` items separated by commas or spaces
/// (`3g.40gb@4,2g.20gb@2,1g.10gb@0`); `field` names the input in errors.
pub fn parse_placements(field: &str, text: &str) -> Result<Vec<(String, u32)>> {
    let items: Vec<&str> = text
        .split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Err(CoreError::invalid(
            field,
            text,
            "instances as profile@start, e.g. 3g.40gb@4,2g.20gb@2",
        ));
    }
    items
        .into_iter()
        .map(|item| {
            let parsed = item.split_once('@').and_then(|(name, start)| {
                let start = start.trim().parse::<u32>().ok()?;
                (!name.trim().is_empty() && start < MAX_MEMORY_SLICES)
                    .then(|| (name.trim().to_string(), start))
            });
            parsed.ok_or_else(|| {
                CoreError::invalid(
                    field,
                    item,
                    format!(
                        "profile@start with a start from 0 to {}, e.g. 3g.40gb@4",
                        MAX_MEMORY_SLICES - 1
                    ),
                )
            })
        })
        .collect()
}
