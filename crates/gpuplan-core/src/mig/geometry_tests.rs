//! Unit tests of the MIG geometry: the examples of `data/mig_notes.md`.

use super::geometry::{parse_placements, LayoutViolation, MigGeometry};
use crate::test_support::catalog;

fn geometry(gpu: &str) -> MigGeometry {
    MigGeometry::of(catalog(), gpu).unwrap_or_else(|e| panic!("{e}"))
}

/// Checks a layout written as `profile@start,...` on `gpu`.
fn check(gpu: &str, text: &str) -> Result<(), Vec<LayoutViolation>> {
    let instances = parse_placements("layout", text).unwrap();
    geometry(gpu).check(&instances).map(|_| ())
}

#[test]
fn grids_follow_the_notes_table() {
    for (gpu, compute, memory) in [
        ("A100-SXM-40GB", 7, 8),
        ("A100-SXM-80GB", 7, 8),
        ("H100-SXM-80GB", 7, 8),
        ("H200-SXM-141GB", 7, 8),
        ("B200-180GB", 7, 8),
        ("A30-24GB", 4, 4),
        ("RTX-PRO-6000-Blackwell-96GB", 4, 4),
    ] {
        let g = geometry(gpu);
        assert_eq!(
            (g.compute_slices, g.memory_slices),
            (compute, memory),
            "{gpu}"
        );
    }
}

#[test]
fn valid_examples_of_the_notes_are_accepted() {
    // mig_notes.md "Examples of valid full geometries" (A100-40GB names).
    for layout in [
        "1g.5gb@0,1g.5gb@1,1g.5gb@2,1g.5gb@3,1g.5gb@4,1g.5gb@5,1g.5gb@6",
        "2g.10gb@0,2g.10gb@2,2g.10gb@4,1g.5gb@6",
        "3g.20gb@0,3g.20gb@4",
        "4g.20gb@0,3g.20gb@4",
        "3g.20gb@4,2g.10gb@2,1g.5gb@0,1g.5gb@1",
        "2g.10gb@4,1g.5gb@0,1g.5gb@1,1g.5gb@2,1g.5gb@3,1g.5gb@6",
        "4g.20gb@0,2g.10gb@4,1g.5gb@6",
        "1g.10gb@0,1g.10gb@2,1g.10gb@4,1g.10gb@6",
        "7g.40gb@0",
        "1g.5gb+me@3,1g.5gb@0",
    ] {
        assert_eq!(check("A100-SXM-40GB", layout), Ok(()), "{layout}");
    }
    // A30: 4 × 1g.6gb; 2 × 2g.12gb; 2g.12gb + 2 × 1g.6gb; 4g.24gb.
    for layout in [
        "1g.6gb@0,1g.6gb@1,1g.6gb@2,1g.6gb@3",
        "2g.12gb@0,2g.12gb@2",
        "2g.12gb@0,1g.6gb@2,1g.6gb@3",
        "4g.24gb@0",
    ] {
        assert_eq!(check("A30-24GB", layout), Ok(()), "{layout}");
    }
    // The mig-parted all-balanced shape on an 80 GB part.
    assert_eq!(
        check("H100-SXM-80GB", "1g.10gb@0,1g.10gb@1,2g.20gb@2,3g.40gb@4"),
        Ok(())
    );
}

#[test]
fn no_profile_starts_at_slice_seven() {
    let Err(v) = check("A100-SXM-80GB", "1g.10gb@7") else {
        panic!("1g at 7 accepted")
    };
    assert!(
        matches!(&v[0], LayoutViolation::StartNotAllowed { start: 7, allowed, .. } if allowed == &vec![0, 1, 2, 3, 4, 5, 6]),
        "{v:?}"
    );
    // A 3g instance starts at 0 or 4 only.
    let Err(v) = check("A100-SXM-80GB", "3g.40gb@2") else {
        panic!("3g at 2 accepted")
    };
    assert_eq!(
        v[0].to_string(),
        "3g.40gb may not start at memory slice 2 (valid starts: 0, 4)"
    );
}

#[test]
fn overlaps_name_both_instances_and_the_slices() {
    let Err(v) = check("A100-SXM-80GB", "4g.40gb@0,2g.20gb@2") else {
        panic!("overlap accepted")
    };
    assert_eq!(
        v,
        vec![LayoutViolation::Overlap {
            first: "4g.40gb@0".into(),
            second: "2g.20gb@2".into(),
            slices: (2, 3),
        }]
    );
    assert_eq!(
        v[0].to_string(),
        "4g.40gb@0 and 2g.20gb@2 overlap on memory slices 2-3"
    );
    // 1g.20gb at 6 spans slices 6 and 7: a 1g at 6 overlaps on one slice.
    let Err(v) = check("A100-SXM-80GB", "1g.20gb@6,1g.10gb@6") else {
        panic!("overlap accepted")
    };
    assert!(
        v[0].to_string().ends_with("overlap on memory slice 6"),
        "{v:?}"
    );
}

#[test]
fn compute_budget_and_media_engines_are_enforced() {
    // 4g + 2g + 2g on memory slices 0-7 fits the memory axis but needs 8 compute slices.
    let Err(v) = check("A100-SXM-80GB", "4g.40gb@0,2g.20gb@4,1g.20gb@6,1g.10gb@6") else {
        panic!("accepted")
    };
    assert!(v
        .iter()
        .any(|x| matches!(x, LayoutViolation::Overlap { .. })));
    let Err(v) = check("A30-24GB", "2g.12gb@0,2g.12gb@2,1g.6gb@3") else {
        panic!("accepted")
    };
    assert!(
        v.iter()
            .any(|x| matches!(x, LayoutViolation::ComputeOverBudget { used: 5, budget: 4 })),
        "{v:?}"
    );
    let Err(v) = check("A100-SXM-40GB", "1g.5gb+me@0,1g.5gb+me@1") else {
        panic!("two +me accepted")
    };
    assert!(
        v.iter()
            .any(|x| matches!(x, LayoutViolation::MediaExtensionsOverLimit { .. })),
        "{v:?}"
    );
    let Err(v) = check("A100-SXM-40GB", "5g.20gb@0") else {
        panic!("unknown profile accepted")
    };
    assert!(
        v[0].to_string().starts_with("no profile `5g.20gb`"),
        "{v:?}"
    );
}

#[test]
fn bad_layout_text_is_an_error_not_a_panic() {
    for text in ["", "3g.40gb", "3g.40gb@x", "@4", "3g.40gb@99999999999"] {
        assert!(parse_placements("--check", text).is_err(), "{text:?}");
    }
    assert!(MigGeometry::of(catalog(), "L4").is_err());
    assert!(MigGeometry::of(catalog(), "no-such-gpu").is_err());
}

#[test]
fn every_enumerated_layout_passes_the_check() {
    let g = geometry("A100-SXM-80GB");
    let layouts = g.layouts(|_| true);
    assert!(!layouts.is_empty());
    for l in &layouts {
        let named: Vec<(String, u32)> = l
            .placements
            .iter()
            .map(|p| (g.profiles[p.profile].name.clone(), p.start))
            .collect();
        assert_eq!(g.check(&named).as_ref(), Ok(l), "{named:?}");
    }
    // The 7 × 1g layout is full; 3g@4 alone is not.
    let full = g.check(&[("7g.80gb".into(), 0)]).unwrap();
    assert!(g.is_full(&full, |p| p.base));
    let partial = g.check(&[("3g.40gb".into(), 4)]).unwrap();
    assert!(!g.is_full(&partial, |p| p.base));
}

#[test]
fn a_user_grid_with_too_many_layouts_is_refused_not_enumerated() {
    use gpuplan_catalog::{CatalogBuilder, TableKind};
    let starts: Vec<String> = (0..16).map(|s| s.to_string()).collect();
    let starts = starts.join(";");
    let mut csv = String::from(
        "gpu,profile,compute_slices,memory_slices,memory_gib,max_instances,valid_start_slices,source\n",
    );
    // Three interchangeable one-slice profiles on a 16-slice grid: 3^16 layouts.
    for name in ["1g.a", "1g.b", "1g.c"] {
        csv.push_str(&format!("L4-24GB,{name},1,1,1.5,16,{starts},test\n"));
    }
    csv.push_str("L4-24GB,16g.24gb,16,16,24,1,0,test\n");
    let mut b = CatalogBuilder::embedded().unwrap();
    b.extend(TableKind::MigProfiles, "mig.csv", &csv).unwrap();
    let catalog = b.build().unwrap();
    let e = MigGeometry::of(&catalog, "L4-24GB").unwrap_err();
    assert!(e.to_string().contains("valid layouts per GPU"), "{e}");
}
