//! MIG geometry against an independent brute-force enumerator: every subset
//! of candidate placements is tested pairwise, with no shared code beyond the
//! catalog rows.

use gpuplan_catalog::{Catalog, MigProfile};
use gpuplan_core::{mig_gpu_names, MigGeometry};
use std::collections::BTreeSet;

/// One candidate instance: (profile row, start, first and last memory slice).
#[derive(Clone, Copy)]
struct Candidate<'a> {
    row: &'a MigProfile,
    start: u32,
    last: u32,
}

/// The base profiles (no `+`/`-` suffix), or every profile when `all`.
fn rows<'a>(catalog: &'a Catalog, gpu: &str, all: bool) -> Vec<&'a MigProfile> {
    catalog
        .mig_profiles_of(gpu)
        .into_iter()
        .filter(|p| all || !p.profile.contains(['+', '-']))
        .collect()
}

fn candidates<'a>(rows: &[&'a MigProfile], memory_slices: u32) -> Vec<Candidate<'a>> {
    let mut out = Vec::new();
    for row in rows {
        for &start in &row.valid_start_slices {
            let last = start + row.memory_slices - 1;
            if last < memory_slices {
                out.push(Candidate { row, start, last });
            }
        }
    }
    out
}

/// Whether a subset (bit i = candidate i) is a valid layout, checked from scratch.
fn valid(cands: &[Candidate<'_>], subset: u64, compute_budget: u32) -> bool {
    let chosen: Vec<&Candidate<'_>> = (0..cands.len())
        .filter(|i| subset >> i & 1 == 1)
        .map(|i| &cands[i])
        .collect();
    let compute: u32 = chosen.iter().map(|c| c.row.compute_slices).sum();
    if compute > compute_budget {
        return false;
    }
    if chosen
        .iter()
        .filter(|c| c.row.profile.contains("+me"))
        .count()
        > 1
    {
        return false;
    }
    for c in &chosen {
        let same = chosen
            .iter()
            .filter(|d| d.row.profile == c.row.profile)
            .count();
        if same as u32 > c.row.max_instances {
            return false;
        }
    }
    for (i, a) in chosen.iter().enumerate() {
        for b in &chosen[i + 1..] {
            if a.start <= b.last && b.start <= a.last {
                return false;
            }
        }
    }
    true
}

/// (valid non-empty layouts, maximal layouts, distinct profile multisets of
/// the maximal ones), by brute force.
fn brute_force(catalog: &Catalog, gpu: &str, all: bool) -> (usize, usize, usize) {
    let rows = rows(catalog, gpu, all);
    let compute_budget = rows.iter().map(|r| r.compute_slices).max().unwrap();
    let memory_slices = rows.iter().map(|r| r.memory_slices).max().unwrap();
    let cands = candidates(&rows, memory_slices);
    let n = cands.len();
    assert!(n <= 26, "{gpu}: {n} candidates is too many to brute-force");
    let ok: Vec<bool> = (0..1u64 << n)
        .map(|s| valid(&cands, s, compute_budget))
        .collect();
    let mut layouts = 0;
    let mut full = 0;
    let mut shapes = BTreeSet::new();
    for s in 1..1u64 << n {
        if !ok[s as usize] {
            continue;
        }
        layouts += 1;
        let maximal = (0..n).all(|i| s >> i & 1 == 1 || !ok[(s | 1 << i) as usize]);
        if maximal {
            full += 1;
            let mut shape: Vec<&str> = (0..n)
                .filter(|i| s >> i & 1 == 1)
                .map(|i| cands[i].row.profile.as_str())
                .collect();
            shape.sort();
            shapes.insert(shape.join("+"));
        }
    }
    (layouts, full, shapes.len())
}

#[test]
fn mig_layout_counts_match_a_brute_force_enumeration() {
    let catalog = Catalog::embedded().unwrap();
    let gpus = mig_gpu_names(&catalog);
    assert!(gpus.len() >= 10, "{gpus:?}");
    for gpu in &gpus {
        let g = MigGeometry::of(&catalog, gpu).unwrap();
        let layouts = g.layouts(|p| p.base);
        let full: Vec<_> = layouts
            .iter()
            .filter(|l| g.is_full(l, |p| p.base))
            .collect();
        let mut shapes = BTreeSet::new();
        for l in &full {
            let mut names: Vec<&str> = l
                .placements
                .iter()
                .map(|p| g.profiles[p.profile].name.as_str())
                .collect();
            names.sort();
            shapes.insert(names.join("+"));
        }
        let expected = brute_force(&catalog, gpu, false);
        assert_eq!(
            (layouts.len(), full.len(), shapes.len()),
            expected,
            "{gpu}: (layouts, full layouts, full profile combinations)"
        );
    }
}

#[test]
fn mig_layouts_with_media_extensions_match_brute_force_on_a30() {
    let catalog = Catalog::embedded().unwrap();
    let g = MigGeometry::of(&catalog, "A30-24GB").unwrap();
    let layouts = g.layouts(|_| true);
    let full = layouts.iter().filter(|l| g.is_full(l, |_| true)).count();
    let (expected_layouts, expected_full, _) = brute_force(&catalog, "A30-24GB", true);
    assert_eq!((layouts.len(), full), (expected_layouts, expected_full));
    // +me instances multiply the layouts but never two in one layout.
    assert!(layouts.iter().all(|l| l
        .placements
        .iter()
        .filter(|p| g.profiles[p.profile].media_extensions)
        .count()
        <= 1));
}

#[test]
fn mig_a100_full_layouts_include_the_documented_shapes() {
    let catalog = Catalog::embedded().unwrap();
    let g = MigGeometry::of(&catalog, "A100-SXM-40GB").unwrap();
    let full: Vec<Vec<String>> = g
        .layouts(|p| p.base)
        .into_iter()
        .filter(|l| g.is_full(l, |p| p.base))
        .map(|l| l.placements.iter().map(|p| g.label(*p)).collect())
        .collect();
    for shape in [
        vec!["3g.20gb@0", "3g.20gb@4"],
        vec!["4g.20gb@0", "3g.20gb@4"],
        vec!["1g.5gb@0", "1g.5gb@1", "2g.10gb@2", "3g.20gb@4"],
        vec!["7g.40gb@0"],
    ] {
        assert!(full.iter().any(|f| f == &shape), "{shape:?} missing");
    }
}
