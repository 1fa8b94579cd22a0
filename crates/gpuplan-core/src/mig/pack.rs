//! Packing service instances onto MIG slices of as few GPUs as possible.
//!
//! Each service has options — `instances` of one profile — and a number of
//! distinct GPUs its instances must span (its min replicas, for
//! availability). A GPU may host any multiset of profiles that some valid
//! layout holds ([`GpuShapes`], from the geometry's enumeration), so the
//! placement rules are never approximated.
//!
//! - **Lower bound**: the most of ⌈Σ compute slices / C⌉, ⌈Σ memory slices /
//!   M⌉ (each service at its cheapest option on that axis) and the largest
//!   distinct-GPU requirement.
//! - **Heuristic** (any size): each service takes the option with the
//!   smallest footprint (`instances × max(c/C, m/M)`), instances are placed
//!   largest first into the first GPU that still has a valid layout (first
//!   fit decreasing); then, within a fixed budget of reruns, each service's
//!   other options are tried one at a time and kept when they save a GPU;
//!   last, the final choice is packed again memory-first and compute-first,
//!   first fit and best fit, and the fewest GPUs kept.
//! - **Exact** (small fleets): branch and bound over every combination of
//!   options and every assignment of instances to GPUs, bounded by the
//!   heuristic's count and the lower bound; exact when it finishes within its
//!   node budget.

use super::geometry::{GpuLayout, MigGeometry};
use serde::Serialize;
use std::collections::HashMap;

/// Most base profiles a geometry may have for the packer (counts are kept
/// 8 bits per profile in a `u64`); NVIDIA parts have 6 (or 3).
pub const MAX_PACKED_PROFILES: usize = 8;

/// Largest fleet (instances at the smallest-footprint options) the exact
/// search is tried on.
pub const EXACT_MAX_INSTANCES: usize = 16;

/// Most combinations of per-service options the exact search enumerates.
pub const EXACT_MAX_COMBINATIONS: u64 = 4096;

/// Nodes the exact search may visit before it settles for the best found.
pub const EXACT_NODE_BUDGET: u64 = 2_000_000;

/// First-fit reruns the heuristic's option improvement may spend.
pub const HEURISTIC_RERUNS: usize = 2000;

/// The profile multisets one GPU can host, each with one valid layout.
#[derive(Debug, Clone)]
pub struct GpuShapes {
    /// Geometry profile index of each packed profile.
    profiles: Vec<usize>,
    /// (compute, memory) slices of each packed profile.
    sizes: Vec<(u32, u32)>,
    /// Valid starts and most instances of each packed profile.
    starts: Vec<Vec<u32>>,
    max_instances: Vec<u32>,
    compute_slices: u32,
    memory_slices: u32,
    /// Packed count vector → a valid layout holding exactly those instances.
    layouts: HashMap<u64, GpuLayout>,
}

impl GpuShapes {
    /// The shapes of a geometry's base profiles; `None` when it has more
    /// than [`MAX_PACKED_PROFILES`] of them.
    pub fn new(g: &MigGeometry) -> Option<GpuShapes> {
        let profiles: Vec<usize> = (0..g.profiles.len())
            .filter(|&i| g.profiles[i].base)
            .collect();
        if profiles.len() > MAX_PACKED_PROFILES {
            return None;
        }
        let sizes = profiles
            .iter()
            .map(|&i| (g.profiles[i].compute_slices, g.profiles[i].memory_slices))
            .collect();
        let starts = profiles
            .iter()
            .map(|&i| g.profiles[i].valid_starts.clone())
            .collect();
        let max_instances = profiles
            .iter()
            .map(|&i| g.profiles[i].max_instances)
            .collect();
        let mut layouts = HashMap::new();
        layouts.insert(
            0,
            GpuLayout {
                placements: Vec::new(),
            },
        );
        for l in g.layouts(|p| p.base) {
            let mut key = 0u64;
            for p in &l.placements {
                let k = profiles.iter().position(|&i| i == p.profile)?;
                // One more instance of packed profile k: its count sits in bits 8k..8k+8.
                key += 1 << (8 * k);
            }
            layouts.entry(key).or_insert(l);
        }
        Some(GpuShapes {
            profiles,
            sizes,
            starts,
            max_instances,
            compute_slices: g.compute_slices,
            memory_slices: g.memory_slices,
            layouts,
        })
    }

    /// The packed index of a geometry profile (None for a variant).
    pub fn packed_index(&self, geometry_profile: usize) -> Option<usize> {
        self.profiles.iter().position(|&i| i == geometry_profile)
    }

    /// The geometry profile index of a packed profile.
    pub fn geometry_index(&self, packed: usize) -> usize {
        self.profiles[packed]
    }

    /// The valid layout of a GPU holding these packed profiles (one each).
    pub fn layout_of(&self, packed_profiles: &[usize]) -> Option<&GpuLayout> {
        // The count vector, 8 bits per packed profile.
        let key = packed_profiles.iter().map(|&k| 1u64 << (8 * k)).sum();
        self.layouts.get(&key)
    }

    fn fits(&self, key: u64, packed: usize) -> bool {
        // The GPU's count vector with one more instance of `packed`.
        self.layouts.contains_key(&(key + (1 << (8 * packed))))
    }

    /// Whether option `a` is never worse than `b`: no more instances, each no
    /// larger on either axis, allowed at every start of `b` and as many
    /// times. Any packing with `b` then stays valid with `a` in its place
    /// (each `a` at a `b`'s start occupies a subset of its slices; surplus
    /// `b`s are dropped, keeping those on distinct GPUs).
    fn dominates(&self, a: SliceOption, b: SliceOption) -> bool {
        let (sa, sb) = (self.sizes[a.profile], self.sizes[b.profile]);
        a.instances <= b.instances
            && sa.0 <= sb.0
            && sa.1 <= sb.1
            && self.starts[b.profile]
                .iter()
                .all(|s| self.starts[a.profile].contains(s))
            && self.max_instances[a.profile] >= self.max_instances[b.profile]
    }

    /// A packed profile's share of a GPU: the larger of its compute and memory shares.
    fn footprint(&self, packed: usize) -> f64 {
        let (c, m) = self.sizes[packed];
        (f64::from(c) / f64::from(self.compute_slices))
            .max(f64::from(m) / f64::from(self.memory_slices))
    }
}

/// One way to serve a service: `instances` of one packed profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SliceOption {
    /// Packed profile index ([`GpuShapes::packed_index`]).
    pub profile: usize,
    /// Instances of it.
    pub instances: u32,
}

/// What one service asks of the packer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceDemand {
    /// Its options (at least one).
    pub options: Vec<SliceOption>,
    /// Distinct GPUs its instances must span (its min replicas; capped by
    /// the instances of the option taken).
    pub min_gpus: u32,
}

/// How a packing was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PackMethod {
    /// Branch and bound, finished: optimal.
    BranchAndBound,
    /// First fit decreasing with option improvement.
    FirstFitDecreasing,
}

/// The result: per service the option taken, per GPU its instances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Packing {
    /// Option index taken, per service.
    pub choice: Vec<usize>,
    /// Per GPU: (service, packed profile) of each instance.
    pub gpus: GpuContents,
    /// A lower bound on the GPUs any packing needs.
    pub lower_bound: u32,
    /// Whether the GPU count is proven optimal.
    pub optimal: bool,
    /// How it was found.
    pub method: PackMethod,
}

/// One GPU while packing.
#[derive(Debug, Clone, Default)]
struct Bin {
    key: u64,
    compute: u32,
    items: Vec<(usize, usize)>,
}

impl Bin {
    fn hosts(&self, service: usize) -> bool {
        self.items.iter().any(|&(s, _)| s == service)
    }
}

/// Per GPU: (service index, packed profile) of each instance.
pub type GpuContents = Vec<Vec<(usize, usize)>>;

/// One instance to place: (service, packed profile, must it avoid GPUs
/// already hosting its service).
type Item = (usize, usize, bool);

/// Packs the demands onto as few GPUs as possible; `None` when a service
/// has no option.
pub fn pack(shapes: &GpuShapes, demands: &[ServiceDemand]) -> Option<Packing> {
    if demands.iter().any(|d| d.options.is_empty()) {
        return None;
    }
    let (pruned, origin) = undominated(shapes, demands);
    let mut packing = pack_undominated(shapes, &pruned);
    for (s, c) in packing.choice.iter_mut().enumerate() {
        *c = origin[s][*c];
    }
    Some(packing)
}

/// Each service's options without those another option dominates, and the
/// original index of each kept option. Exact: see [`GpuShapes::dominates`].
fn undominated(
    shapes: &GpuShapes,
    demands: &[ServiceDemand],
) -> (Vec<ServiceDemand>, Vec<Vec<usize>>) {
    let mut pruned = Vec::with_capacity(demands.len());
    let mut origin = Vec::with_capacity(demands.len());
    for d in demands {
        let keep: Vec<usize> = (0..d.options.len())
            .filter(|&i| {
                !(0..d.options.len()).any(|j| {
                    let (a, b) = (d.options[j], d.options[i]);
                    // j beats i, or equals it and comes first.
                    j != i && shapes.dominates(a, b) && (!shapes.dominates(b, a) || j < i)
                })
            })
            .collect();
        pruned.push(ServiceDemand {
            options: keep.iter().map(|&i| d.options[i]).collect(),
            min_gpus: d.min_gpus,
        });
        origin.push(keep);
    }
    (pruned, origin)
}

/// [`pack`] on options none of which dominates another.
fn pack_undominated(shapes: &GpuShapes, demands: &[ServiceDemand]) -> Packing {
    let lower_bound = lower_bound(shapes, demands);
    let (choice, gpus) = heuristic(shapes, demands);
    let mut packing = Packing {
        choice,
        gpus,
        lower_bound,
        optimal: false,
        method: PackMethod::FirstFitDecreasing,
    };
    if packing.gpus.len() as u32 <= lower_bound {
        packing.optimal = true;
        return packing;
    }
    if exact_size_ok(demands) {
        let mut search = Exact::new(shapes, packing.gpus.len());
        let finished = search.run(demands);
        if let Some((choice, gpus)) = search.best {
            packing.choice = choice;
            packing.gpus = gpus;
        }
        if finished {
            packing.optimal = true;
            packing.method = PackMethod::BranchAndBound;
        }
    }
    packing
}

/// The largest of the compute, memory and distinct-GPU bounds.
pub fn lower_bound(shapes: &GpuShapes, demands: &[ServiceDemand]) -> u32 {
    let cheapest = |axis: fn((u32, u32)) -> u32| -> u64 {
        demands
            .iter()
            .map(|d| {
                d.options
                    .iter()
                    .map(|o| u64::from(o.instances) * u64::from(axis(shapes.sizes[o.profile])))
                    .min()
                    .unwrap_or(0)
            })
            .sum()
    };
    // GPUs for the compute slices and for the memory slices all services need at least.
    let compute = cheapest(|(c, _)| c).div_ceil(u64::from(shapes.compute_slices));
    let memory = cheapest(|(_, m)| m).div_ceil(u64::from(shapes.memory_slices));
    let distinct = demands
        .iter()
        .map(|d| {
            d.options
                .iter()
                .map(|o| u64::from(d.min_gpus.min(o.instances)))
                .min()
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0);
    compute.max(memory).max(distinct).min(u64::from(u32::MAX)) as u32
}

/// The instances of a choice, largest first, a service's instances together.
fn items(shapes: &GpuShapes, demands: &[ServiceDemand], choice: &[usize]) -> Vec<Item> {
    let mut out = Vec::new();
    for (s, d) in demands.iter().enumerate() {
        let o = d.options[choice[s]];
        let spread = d.min_gpus.min(o.instances);
        for k in 0..o.instances {
            out.push((s, o.profile, k < spread));
        }
    }
    out.sort_by(|a, b| {
        shapes
            .footprint(b.1)
            .total_cmp(&shapes.footprint(a.1))
            .then(shapes.sizes[b.1].0.cmp(&shapes.sizes[a.1].0))
            .then(a.0.cmp(&b.0))
            .then(b.2.cmp(&a.2))
    });
    out
}

/// First fit of the items in order.
fn first_fit(shapes: &GpuShapes, items: &[Item]) -> Vec<Bin> {
    let mut bins: Vec<Bin> = Vec::new();
    for &(s, p, spread) in items {
        let slot = bins
            .iter()
            .position(|b| shapes.fits(b.key, p) && !(spread && b.hosts(s)));
        let i = slot.unwrap_or_else(|| {
            bins.push(Bin::default());
            bins.len() - 1
        });
        place(&mut bins[i], shapes, s, p, 1);
    }
    bins
}

/// The heuristic: smallest-footprint options, first fit decreasing, then
/// one-service option changes kept when they save a GPU.
fn heuristic(
    shapes: &GpuShapes,
    demands: &[ServiceDemand],
) -> (Vec<usize>, Vec<Vec<(usize, usize)>>) {
    let footprint = |o: &SliceOption| f64::from(o.instances) * shapes.footprint(o.profile);
    let mut choice: Vec<usize> = demands
        .iter()
        .map(|d| {
            (0..d.options.len())
                .min_by(|&a, &b| footprint(&d.options[a]).total_cmp(&footprint(&d.options[b])))
                .unwrap_or(0)
        })
        .collect();
    let mut best = first_fit(shapes, &items(shapes, demands, &choice));
    let mut reruns = 0;
    // Passes over the services until one saves nothing or the budget is spent.
    let mut improved = true;
    while improved && reruns < HEURISTIC_RERUNS {
        improved = false;
        for s in 0..demands.len() {
            for alt in 0..demands[s].options.len() {
                if alt == choice[s] || reruns >= HEURISTIC_RERUNS {
                    continue;
                }
                reruns += 1;
                let previous = std::mem::replace(&mut choice[s], alt);
                let bins = first_fit(shapes, &items(shapes, demands, &choice));
                if bins.len() < best.len() {
                    best = bins;
                    improved = true;
                } else {
                    choice[s] = previous;
                }
            }
        }
    }
    // Polish: the final choice in other orders and with best fit.
    let base = items(shapes, demands, &choice);
    for order in [Order::MemoryFirst, Order::ComputeFirst] {
        let mut again = base.clone();
        reorder(shapes, &mut again, order);
        for bins in [first_fit(shapes, &again), best_fit(shapes, &again)] {
            if bins.len() < best.len() {
                best = bins;
            }
        }
    }
    let bins = best_fit(shapes, &base);
    if bins.len() < best.len() {
        best = bins;
    }
    (choice, best.into_iter().map(|b| b.items).collect())
}

/// Orders the polish pass tries besides the footprint order of [`items`].
#[derive(Clone, Copy)]
enum Order {
    /// Most memory slices first, then most compute slices.
    MemoryFirst,
    /// Most compute slices first, then most memory slices.
    ComputeFirst,
}

fn reorder(shapes: &GpuShapes, items: &mut [Item], order: Order) {
    items.sort_by(|a, b| {
        let (sa, sb) = (shapes.sizes[a.1], shapes.sizes[b.1]);
        let key = match order {
            Order::MemoryFirst => (sb.1, sb.0).cmp(&(sa.1, sa.0)),
            Order::ComputeFirst => (sb.0, sb.1).cmp(&(sa.0, sa.1)),
        };
        key.then(a.0.cmp(&b.0)).then(b.2.cmp(&a.2))
    });
}

/// Best fit of the items in order: each into the feasible GPU with the most
/// compute slices taken already.
fn best_fit(shapes: &GpuShapes, items: &[Item]) -> Vec<Bin> {
    let mut bins: Vec<Bin> = Vec::new();
    for &(s, p, spread) in items {
        let slot = bins
            .iter()
            .enumerate()
            .filter(|(_, b)| shapes.fits(b.key, p) && !(spread && b.hosts(s)))
            .max_by_key(|(i, b)| (b.compute, std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        let i = slot.unwrap_or_else(|| {
            bins.push(Bin::default());
            bins.len() - 1
        });
        place(&mut bins[i], shapes, s, p, 1);
    }
    bins
}

/// Whether the exact search is worth trying on this fleet.
fn exact_size_ok(demands: &[ServiceDemand]) -> bool {
    let mut combinations = 1u64;
    let mut instances = 0usize;
    for d in demands {
        combinations = combinations.saturating_mul(d.options.len() as u64);
        instances += d
            .options
            .iter()
            .map(|o| o.instances as usize)
            .min()
            .unwrap_or(0);
    }
    combinations <= EXACT_MAX_COMBINATIONS && instances <= EXACT_MAX_INSTANCES
}

/// Branch and bound over option combinations and assignments.
struct Exact<'a> {
    shapes: &'a GpuShapes,
    /// GPUs of the best packing so far (the heuristic's to start).
    limit: usize,
    best: Option<(Vec<usize>, GpuContents)>,
    nodes: u64,
}

impl<'a> Exact<'a> {
    fn new(shapes: &'a GpuShapes, limit: usize) -> Self {
        Exact {
            shapes,
            limit,
            best: None,
            nodes: 0,
        }
    }

    /// Tries every combination of options; true when the search finished
    /// within its node budget (the best is then optimal).
    fn run(&mut self, demands: &[ServiceDemand]) -> bool {
        let mut choice = vec![0usize; demands.len()];
        loop {
            let single: Vec<ServiceDemand> = demands
                .iter()
                .zip(&choice)
                .map(|(d, &c)| ServiceDemand {
                    options: vec![d.options[c]],
                    min_gpus: d.min_gpus,
                })
                .collect();
            if (lower_bound(self.shapes, &single) as usize) < self.limit {
                let items = items(self.shapes, demands, &choice);
                let mut bins = Vec::new();
                self.assign(&items, 0, &mut bins, &choice);
            }
            if self.nodes > EXACT_NODE_BUDGET {
                return false;
            }
            // Next combination (mixed radix over the option counts).
            let mut s = 0;
            loop {
                if s == demands.len() {
                    return true;
                }
                choice[s] += 1;
                if choice[s] < demands[s].options.len() {
                    break;
                }
                choice[s] = 0;
                s += 1;
            }
        }
    }

    /// Places item `i` onward into `bins`; records any packing with fewer
    /// GPUs than the limit.
    fn assign(&mut self, items: &[Item], i: usize, bins: &mut Vec<Bin>, choice: &[usize]) {
        self.nodes += 1;
        if self.nodes > EXACT_NODE_BUDGET || bins.len() >= self.limit {
            return;
        }
        if i == items.len() {
            self.limit = bins.len();
            let gpus = bins.iter().map(|b| b.items.clone()).collect();
            self.best = Some((choice.to_vec(), gpus));
            return;
        }
        // Compute slices still to place beyond what the open GPUs have free.
        let remaining: u32 = items[i..].iter().map(|it| self.shapes.sizes[it.1].0).sum();
        let free: u32 = bins
            .iter()
            .map(|b| self.shapes.compute_slices.saturating_sub(b.compute))
            .sum();
        let more = remaining
            .saturating_sub(free)
            .div_ceil(self.shapes.compute_slices);
        if bins.len() + more as usize >= self.limit {
            return;
        }
        let (s, p, spread) = items[i];
        let mut tried: Vec<Vec<(usize, usize)>> = Vec::new();
        for j in 0..bins.len() {
            let b = &bins[j];
            if !self.shapes.fits(b.key, p) || (spread && b.hosts(s)) {
                continue;
            }
            // Two GPUs holding the same instances lead to the same subtrees: try one.
            let mut state = b.items.clone();
            state.sort_unstable();
            if tried.contains(&state) {
                continue;
            }
            tried.push(state);
            place(&mut bins[j], self.shapes, s, p, 1);
            self.assign(items, i + 1, bins, choice);
            place(&mut bins[j], self.shapes, s, p, -1);
        }
        if bins.len() + 1 < self.limit {
            let mut b = Bin::default();
            place(&mut b, self.shapes, s, p, 1);
            bins.push(b);
            self.assign(items, i + 1, bins, choice);
            bins.pop();
        }
    }
}

/// Adds (`+1`) or removes (`-1`) one instance of packed profile `p` for service `s`.
fn place(b: &mut Bin, shapes: &GpuShapes, s: usize, p: usize, sign: i32) {
    if sign > 0 {
        b.key += 1 << (8 * p);
        b.compute += shapes.sizes[p].0;
        b.items.push((s, p));
    } else {
        b.key -= 1 << (8 * p);
        b.compute -= shapes.sizes[p].0;
        if let Some(k) = b.items.iter().rposition(|&x| x == (s, p)) {
            b.items.remove(k);
        }
    }
}
