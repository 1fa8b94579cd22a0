//! Packing 200 services onto MIG slices of H100s with the heuristic (the
//! exact search is out of reach at this size): target under 1 s on a 2-core
//! machine. The services are the 12 of `examples/fleets/fleet-12.toml`,
//! sized on every H100 profile once and repeated to 200; the setup prints
//! the GPUs, the lower bound and the gap.
//!
//! Run: `cargo bench -p gpuplan-core --bench mig`

use gpuplan_catalog::Catalog;
use gpuplan_core::{
    fit_on_device, mig_instance_gpu, pack, parse_fleet, Calibration, GpuShapes, MigGeometry,
    ServiceDemand, SliceOption, WorkloadFormat,
};

fn main() {
    divan::main();
}

/// The demands of `count` services cycling through the example fleet's 12.
fn demands(count: usize) -> (GpuShapes, Vec<ServiceDemand>) {
    let catalog = Catalog::embedded().unwrap();
    let path = format!(
        "{}/../../examples/fleets/fleet-12.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let fleet = parse_fleet(&path, &text, WorkloadFormat::Toml)
        .and_then(|raw| raw.validate(&path, &catalog))
        .unwrap();
    let cal = Calibration::bundled();
    let gpu = catalog.gpu("H100").unwrap();
    let g = MigGeometry::of(&catalog, "H100").unwrap();
    let shapes = GpuShapes::new(&g).unwrap();
    let base: Vec<ServiceDemand> = fleet
        .services
        .iter()
        .map(|w| ServiceDemand {
            options: (0..g.profiles.len())
                .filter_map(|i| {
                    let k = shapes.packed_index(i)?;
                    let device = mig_instance_gpu(gpu, &g, &g.profiles[i]);
                    let fit = fit_on_device(&catalog, &cal, w, &device).ok()?;
                    Some(SliceOption {
                        profile: k,
                        instances: fit.instances,
                    })
                })
                .collect(),
            min_gpus: w.constraints.min_replicas,
        })
        .collect();
    let all = (0..count).map(|i| base[i % base.len()].clone()).collect();
    (shapes, all)
}

#[divan::bench(args = [12, 50, 200], sample_count = 10)]
fn pack_services(bencher: divan::Bencher, count: usize) {
    let (shapes, demands) = demands(count);
    let p = pack(&shapes, &demands).unwrap();
    eprintln!(
        "{count} services: {} GPUs, lower bound {}, gap {}, optimal {}, {:?}",
        p.gpus.len(),
        p.lower_bound,
        p.gpus.len() as u32 - p.lower_bound,
        p.optimal,
        p.method
    );
    bencher.bench(|| pack(&shapes, &demands));
}
