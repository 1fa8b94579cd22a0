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

// ---- Packing ----

use gpuplan_core::{pack, GpuShapes, Packing, ServiceDemand, SliceOption};
use proptest::prelude::*;

/// The A100-80GB base profiles, in packed order, and the catalog rows.
fn a100() -> (Catalog, MigGeometry, GpuShapes) {
    let catalog = Catalog::embedded().unwrap();
    let g = MigGeometry::of(&catalog, "A100-SXM-80GB").unwrap();
    let shapes = GpuShapes::new(&g).unwrap();
    (catalog, g, shapes)
}

/// Whether the packed profiles fit one GPU, by trying every start of every
/// instance against the catalog rows (independent of the enumeration).
fn fits_by_search(rows: &[&MigProfile], profiles: &[usize]) -> bool {
    fn place(
        rows: &[&MigProfile],
        rest: &[usize],
        used: &mut Vec<(u32, u32)>,
        compute: u32,
    ) -> bool {
        let Some((&p, rest)) = rest.split_first() else {
            return true;
        };
        let row = rows[p];
        if compute + row.compute_slices > 7 {
            return false;
        }
        for &s in &row.valid_start_slices {
            let last = s + row.memory_slices - 1;
            if last > 7 || used.iter().any(|&(a, b)| s <= b && a <= last) {
                continue;
            }
            used.push((s, last));
            if place(rows, rest, used, compute + row.compute_slices) {
                return true;
            }
            used.pop();
        }
        false
    }
    let counts_ok = (0..rows.len())
        .all(|p| profiles.iter().filter(|&&q| q == p).count() as u32 <= rows[p].max_instances);
    counts_ok && place(rows, profiles, &mut Vec::new(), 0)
}

/// The fewest GPUs for the demands, trying every option combination and
/// every assignment of instances to GPU numbers.
fn brute_force_gpus(rows: &[&MigProfile], demands: &[ServiceDemand]) -> usize {
    let mut best = usize::MAX;
    let combos: usize = demands.iter().map(|d| d.options.len()).product();
    for c in 0..combos {
        let mut rest = c;
        let mut items = Vec::new();
        for (s, d) in demands.iter().enumerate() {
            let o = d.options[rest % d.options.len()];
            rest /= d.options.len();
            items.extend((0..o.instances).map(|_| (s, o.profile)));
        }
        let n = items.len();
        // Assignment: item i to GPU a[i] < n, canonical (a[i] ≤ max(a[..i]) + 1).
        let mut a = vec![0usize; n];
        loop {
            let used = a.iter().max().map_or(0, |m| m + 1);
            if used < best && assignment_ok(rows, demands, &items, &a, used) {
                best = used;
            }
            // Next canonical assignment.
            let mut i = n;
            loop {
                if i == 0 {
                    break;
                }
                i -= 1;
                let limit = a[..i].iter().max().map_or(0, |m| m + 1);
                if a[i] < limit {
                    a[i] += 1;
                    for x in &mut a[i + 1..] {
                        *x = 0;
                    }
                    break;
                }
                if i == 0 {
                    i = usize::MAX;
                    break;
                }
            }
            if i == usize::MAX || (i == 0 && a.iter().all(|&x| x == 0)) {
                break;
            }
        }
    }
    best
}

fn assignment_ok(
    rows: &[&MigProfile],
    demands: &[ServiceDemand],
    items: &[(usize, usize)],
    a: &[usize],
    gpus: usize,
) -> bool {
    for g in 0..gpus {
        let profiles: Vec<usize> = (0..items.len())
            .filter(|&i| a[i] == g)
            .map(|i| items[i].1)
            .collect();
        if !fits_by_search(rows, &profiles) {
            return false;
        }
    }
    demands.iter().enumerate().all(|(s, d)| {
        let on: Vec<usize> = (0..items.len())
            .filter(|&i| items[i].0 == s)
            .map(|i| a[i])
            .collect();
        let mut distinct = on.clone();
        distinct.sort();
        distinct.dedup();
        distinct.len() as u32 >= d.min_gpus.min(on.len() as u32)
    })
}

/// Checks a packing's GPUs: valid layouts (by the independent search),
/// every instance placed, min replicas on distinct GPUs.
fn check_packing(rows: &[&MigProfile], shapes: &GpuShapes, demands: &[ServiceDemand], p: &Packing) {
    for gpu in &p.gpus {
        let profiles: Vec<usize> = gpu.iter().map(|&(_, k)| k).collect();
        assert!(fits_by_search(rows, &profiles), "invalid GPU {gpu:?}");
        assert!(shapes.layout_of(&profiles).is_some());
    }
    for (s, d) in demands.iter().enumerate() {
        let o = d.options[p.choice[s]];
        let on: Vec<usize> = (0..p.gpus.len())
            .flat_map(|g| {
                p.gpus[g]
                    .iter()
                    .filter(|&&(x, _)| x == s)
                    .map(move |&(_, k)| (g, k))
            })
            .map(|(g, k)| {
                assert_eq!(k, o.profile);
                g
            })
            .collect();
        assert_eq!(on.len() as u32, o.instances, "service {s}");
        let mut distinct = on.clone();
        distinct.sort();
        distinct.dedup();
        assert!(
            distinct.len() as u32 >= d.min_gpus.min(o.instances),
            "service {s}"
        );
    }
    assert!(p.gpus.len() as u32 >= p.lower_bound);
}

/// The base rows in the shapes' packed order.
fn packed_rows<'a>(
    catalog: &'a Catalog,
    g: &MigGeometry,
    shapes: &GpuShapes,
) -> Vec<&'a MigProfile> {
    let all = catalog.mig_profiles_of(&g.gpu);
    (0..6)
        .map(|k| {
            let name = &g.profiles[shapes.geometry_index(k)].name;
            *all.iter().find(|r| &r.profile == name).unwrap()
        })
        .collect()
}

fn demand_strategy(max_services: usize) -> impl Strategy<Value = Vec<ServiceDemand>> {
    let option =
        (0usize..6, 1u32..3).prop_map(|(profile, instances)| SliceOption { profile, instances });
    let service = (prop::collection::vec(option, 1..3), 1u32..3)
        .prop_map(|(options, min_gpus)| ServiceDemand { options, min_gpus });
    prop::collection::vec(service, 1..=max_services)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Small fleets: the packer's GPU count is the brute-force optimum, and
    /// it says so.
    #[test]
    fn mig_packing_is_optimal_on_small_fleets(demands in demand_strategy(3)) {
        let (catalog, g, shapes) = a100();
        let rows = packed_rows(&catalog, &g, &shapes);
        let total: u32 = demands.iter().map(|d| d.options.iter().map(|o| o.instances).max().unwrap()).sum();
        prop_assume!(total <= 6);
        let p = pack(&shapes, &demands).unwrap();
        check_packing(&rows, &shapes, &demands, &p);
        prop_assert_eq!(p.gpus.len(), brute_force_gpus(&rows, &demands));
        prop_assert!(p.optimal);
    }

    /// Any fleet: every emitted GPU holds a valid layout, every instance is
    /// placed, min replicas sit on distinct GPUs, never below the bound.
    #[test]
    fn mig_packed_layouts_are_always_valid(demands in demand_strategy(40)) {
        let (catalog, g, shapes) = a100();
        let rows = packed_rows(&catalog, &g, &shapes);
        let p = pack(&shapes, &demands).unwrap();
        check_packing(&rows, &shapes, &demands, &p);
        for gpu in &p.gpus {
            let profiles: Vec<usize> = gpu.iter().map(|&(_, k)| k).collect();
            let layout = shapes.layout_of(&profiles).unwrap();
            let named: Vec<(String, u32)> = layout
                .placements
                .iter()
                .map(|pl| (g.profiles[pl.profile].name.clone(), pl.start))
                .collect();
            prop_assert!(g.check(&named).is_ok());
        }
    }
}

#[test]
fn mig_packing_a_gpu_of_slivers_needs_one_gpu() {
    let (_, g, shapes) = a100();
    let one_g = shapes
        .packed_index(g.profile_index("1g.10gb").unwrap())
        .unwrap();
    let three_g = shapes
        .packed_index(g.profile_index("3g.40gb").unwrap())
        .unwrap();
    // 4 × 1g + 1 × 3g = 7 compute slices, 8 memory slices: one GPU.
    let demands = vec![
        ServiceDemand {
            options: vec![SliceOption {
                profile: one_g,
                instances: 4,
            }],
            min_gpus: 1,
        },
        ServiceDemand {
            options: vec![SliceOption {
                profile: three_g,
                instances: 1,
            }],
            min_gpus: 1,
        },
    ];
    let p = pack(&shapes, &demands).unwrap();
    assert_eq!((p.gpus.len(), p.lower_bound, p.optimal), (1, 1, true));
    // Two replicas on distinct GPUs cost a second GPU.
    let spread = vec![ServiceDemand {
        options: vec![SliceOption {
            profile: one_g,
            instances: 2,
        }],
        min_gpus: 2,
    }];
    assert_eq!(pack(&shapes, &spread).unwrap().gpus.len(), 2);
}

#[test]
fn mig_brute_force_oracle_counts_gpus() {
    // The oracle itself: three 3g instances need two GPUs, two 1g replicas
    // on distinct GPUs need two, seven 1g instances need one.
    let (catalog, g, shapes) = a100();
    let rows = packed_rows(&catalog, &g, &shapes);
    let k = |name: &str| shapes.packed_index(g.profile_index(name).unwrap()).unwrap();
    let one = |profile, instances, min_gpus| ServiceDemand {
        options: vec![SliceOption { profile, instances }],
        min_gpus,
    };
    assert_eq!(brute_force_gpus(&rows, &[one(k("3g.40gb"), 3, 1)]), 2);
    assert_eq!(brute_force_gpus(&rows, &[one(k("1g.10gb"), 2, 2)]), 2);
    assert_eq!(brute_force_gpus(&rows, &[one(k("1g.10gb"), 7, 1)]), 1);
    assert_eq!(
        brute_force_gpus(&rows, &[one(k("4g.40gb"), 1, 1), one(k("3g.40gb"), 1, 1)]),
        1
    );
}

// ---- Fleets ----

use gpuplan_core::{
    default_kv_precision, fit_on_device, inference_memory, mig_instance_gpu, parse_fleet,
    plan_fleet, Calibration, EngineLimits, Fleet, InferenceMemoryInput, Layout, WorkloadFormat,
};

fn fleet(text: &str) -> Result<Fleet, String> {
    let catalog = Catalog::embedded().unwrap();
    parse_fleet("f.toml", text, WorkloadFormat::Toml)
        .and_then(|raw| raw.validate("f.toml", &catalog))
        .map_err(|e| e.to_string())
}

const ONE_SERVICE: &str = r#"
kind = "fleet"
[constraints]
providers = ["aws"]
[[services]]
name = "chat"
model = { id = "llama-3.1-8b" }
traffic = { requests_per_s = 1, input_tokens = { mean = 500, p99 = 2000 }, output_tokens = { mean = 100, p99 = 400 } }
"#;

#[test]
fn mig_fleet_errors_name_the_file_the_service_and_the_field() {
    let ok = fleet(ONE_SERVICE).unwrap();
    assert_eq!(ok.services[0].name, "chat");
    assert_eq!(
        ok.services[0].constraints.providers,
        vec!["aws".to_string()]
    );
    for (text, expected) in [
        (
            ONE_SERVICE.replace("kind = \"fleet\"", "kind = \"inference\""),
            "invalid `kind` = \"inference\": expected \"fleet\"",
        ),
        (
            ONE_SERVICE.replace("name = \"chat\"", ""),
            "invalid `services[0].name` = (missing)",
        ),
        (
            ONE_SERVICE.replace("llama-3.1-8b", "no-such-model"),
            "services[0] \"chat\": invalid `model.id` = no-such-model",
        ),
        (
            ONE_SERVICE.replace("requests_per_s = 1", "requests_per_s = -1"),
            "services[0] \"chat\": invalid `traffic.requests_per_s`",
        ),
        (
            ONE_SERVICE.replace("traffic =", "trafic ="),
            "services[0] \"chat\": ",
        ),
        (
            format!(
                "{ONE_SERVICE}\n{}",
                &ONE_SERVICE[ONE_SERVICE.find("[[services]]").unwrap()..]
            ),
            "invalid `services[1].name` = \"chat\": expected a unique name",
        ),
        (
            "kind = \"fleet\"\n".to_string(),
            "0 `[[services]]`: expected",
        ),
        (
            "kind = \"fleet\"\n[constraints]\nmax_usd_per_hour = -5\n[[services]]\nname = \"x\""
                .to_string(),
            "invalid `constraints.max_usd_per_hour` = -5",
        ),
        ("kind = [".to_string(), "f.toml: "),
    ] {
        let e = fleet(&text).unwrap_err();
        assert!(e.starts_with("f.toml: "), "{e}");
        assert!(e.contains(expected), "expected {expected:?} in {e:?}");
    }
}

#[test]
fn mig_example_fleet_meets_every_slo_in_slices_that_hold_it() {
    let catalog = Catalog::embedded().unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fleets/fleet-12.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let fleet = parse_fleet(path, &text, WorkloadFormat::Toml)
        .and_then(|raw| raw.validate(path, &catalog))
        .unwrap();
    let cal = Calibration::bundled();
    let r = plan_fleet(&catalog, &cal, &fleet, Some("H100")).unwrap();
    assert!(r.feasible, "{:?}", r.reasons);
    assert_eq!(r.services.len(), 12);
    // Clearly fewer GPUs and dollars than one whole GPU per service.
    assert!(
        2 * r.total_gpus <= r.baseline_whole_gpu.total_gpus,
        "{} vs {}",
        r.total_gpus,
        r.baseline_whole_gpu.total_gpus
    );
    assert!(r.usd_per_hour * 2.0 <= r.baseline_whole_gpu.usd_per_hour.unwrap());
    assert!(r.total_gpus >= r.lower_bound_gpus);
    let h100 = catalog.gpu("H100").unwrap();
    let g = MigGeometry::of(&catalog, "H100").unwrap();
    for s in &r.services {
        let w = fleet.services.iter().find(|w| w.name == s.name).unwrap();
        let f = &s.fit;
        // Every SLO at the peak, within each instance's capacity.
        assert!(
            f.load_requests_per_s <= f.capacity_requests_per_s * (1.0 + 1e-9),
            "{}",
            s.name
        );
        assert!(
            w.slo.ttft_ms_p99.is_none_or(|l| f.ttft_p99_ms <= l),
            "{} TTFT {}",
            s.name,
            f.ttft_p99_ms
        );
        assert!(
            w.slo.tpot_ms_p99.is_none_or(|l| f.tpot_p99_ms <= l),
            "{} TPOT {}",
            s.name,
            f.tpot_p99_ms
        );
        assert!(f.instances >= w.constraints.min_replicas);
        assert!(
            s.on_gpus.len() as u32 >= w.constraints.min_replicas.min(f.instances),
            "{}",
            s.name
        );
        // The slice holds the weights and a p99 sequence, by the memory model alone.
        let p = &g.profiles[g.profile_index(&s.profile).unwrap()];
        let device = mig_instance_gpu(h100, &g, p);
        let mem = inference_memory(&InferenceMemoryInput {
            model: &w.model,
            gpu: &device,
            layout: Layout { tp: 1, pp: 1 },
            precision: f.precision,
            kv_precision: w.kv_precision.unwrap_or(default_kv_precision(f.precision)),
            context_len: (w.input_tokens.p99 + w.output_tokens.p99).ceil() as u64,
            limits: EngineLimits {
                memory_utilization: w.memory_utilization,
                max_batched_tokens: w.max_batched_tokens,
                max_num_seqs: f.batch_cap,
            },
        })
        .unwrap();
        assert!(mem.fits, "{} in {}: {:?}", s.name, s.profile, mem.reason);
    }
    // Every slice named in the layouts is a valid layout of the GPU, one service each.
    for gpu in &r.gpus {
        let named: Vec<(String, u32)> = gpu
            .layout
            .iter()
            .map(|s| (s.profile.clone(), s.start))
            .collect();
        assert!(g.check(&named).is_ok(), "{named:?}");
        assert!(gpu.layout.iter().all(|s| s.services.len() <= 1));
    }
    let names: Vec<&str> = r.alternatives.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mig",
            "whole_gpu",
            "time_sharing",
            "fractional",
            "heterogeneous"
        ]
    );
    assert!(!r.alternatives[2].isolated);
}

#[test]
fn mig_a_larger_slice_never_carries_less() {
    // Metamorphic: more compute and memory slices never lower the capacity
    // within the SLO, and the whole-GPU 7g instance of an A100 is below the
    // whole GPU (MIG leaves 10 of its 108 SMs idle).
    let catalog = Catalog::embedded().unwrap();
    let fleet = fleet(ONE_SERVICE).unwrap();
    let w = &fleet.services[0];
    let cal = Calibration::bundled();
    let a100 = catalog.gpu("A100-80GB").unwrap();
    let g = MigGeometry::of(&catalog, "A100-80GB").unwrap();
    let capacity = |name: &str| {
        let p = &g.profiles[g.profile_index(name).unwrap()];
        fit_on_device(&catalog, &cal, w, &mig_instance_gpu(a100, &g, p))
            .map(|f| f.capacity_requests_per_s)
            .unwrap_or(0.0)
    };
    let ladder: Vec<f64> = ["1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
        .iter()
        .map(|n| capacity(n))
        .collect();
    assert!(ladder.windows(2).all(|p| p[0] <= p[1]), "{ladder:?}");
    assert!(ladder[1] > 0.0, "{ladder:?}");
    let whole = fit_on_device(&catalog, &cal, w, a100)
        .unwrap()
        .capacity_requests_per_s;
    assert!(ladder[4] < whole, "7g {} vs whole {whole}", ladder[4]);
}

#[test]
fn mig_fleet_over_budget_is_infeasible_with_the_reason() {
    let catalog = Catalog::embedded().unwrap();
    let text = ONE_SERVICE.replace("providers = [\"aws\"]", "max_usd_per_hour = 0.01");
    let fleet = fleet(&text).unwrap();
    assert_eq!(fleet.max_usd_per_hour, Some(0.01));
    let r = plan_fleet(&catalog, &Calibration::bundled(), &fleet, Some("H100")).unwrap();
    assert!(!r.feasible);
    assert!(
        r.reasons.iter().any(|x| x.contains("max_usd_per_hour")),
        "{:?}",
        r.reasons
    );
}

#[test]
fn mig_fleet_reads_json_like_toml() {
    let catalog = Catalog::embedded().unwrap();
    let json = r#"{"kind": "fleet", "constraints": {"providers": ["aws"]},
        "services": [{"name": "chat", "model": {"id": "llama-3.1-8b"},
        "traffic": {"requests_per_s": 1, "input_tokens": {"mean": 500, "p99": 2000},
                    "output_tokens": {"mean": 100, "p99": 400}}}]}"#;
    let from_json = parse_fleet("f.json", json, WorkloadFormat::Json)
        .and_then(|raw| raw.validate("f.json", &catalog))
        .unwrap();
    let from_toml = fleet(ONE_SERVICE).unwrap();
    assert_eq!(
        from_json.services[0].peak_requests_per_s,
        from_toml.services[0].peak_requests_per_s
    );
    assert_eq!(
        from_json.services[0].constraints.providers,
        from_toml.services[0].constraints.providers
    );
    let e = parse_fleet(
        "f.json",
        r#"{"kind": "fleet", "services": null}"#,
        WorkloadFormat::Json,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("f.json: "), "{e}");
}
