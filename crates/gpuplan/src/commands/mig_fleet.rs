//! `gpuplan mig FLEET`: a fleet of services packed onto MIG slices, with
//! the alternatives compared.

use super::{opt, print_json, table};
use crate::cli::{MigCmd, MigExportArg};
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::Catalog;
use gpuplan_core::FleetReport;
use std::path::Path;

pub fn run(catalog: &Catalog, cmd: &MigCmd, path: &Path) -> CliResult {
    load::expect_kind(path, "mig", &["fleet"])?;
    let cal = load::calibration(cmd.calibration.as_deref())?;
    let settings = gpuplan_app::FleetSettings {
        gpu: cmd.gpu.clone(),
        no_verify: cmd.no_verify,
        verify_requests: Some(cmd.verify_requests),
    };
    let input = gpuplan_app::WorkloadInput::from_file(path)?;
    let (report, missed) = gpuplan_app::fleet_plan(catalog, &cal, &input, &settings)?;
    if let Some(kind) = cmd.export {
        super::check_finite(&report)?;
        if report.feasible {
            let yaml = match kind {
                MigExportArg::MigParted => gpuplan_report::mig_parted(&report),
                MigExportArg::K8s => gpuplan_report::mig_k8s(&report, catalog),
            }
            .map_err(|e| CliError::Internal(e.to_string()))?;
            print!("{yaml}");
        }
    } else if cmd.json {
        print_json(&report)?;
    } else {
        super::check_finite(&report)?;
        print_report(&report);
        for n in &report.notes {
            println!("note: {n}");
        }
        if missed > 0 {
            println!("{missed} service(s) still miss an SLO in simulation (sim ✗): give them a larger profile or more instances");
        }
    }
    if report.feasible {
        Ok(())
    } else {
        if !cmd.json || cmd.export.is_some() {
            for r in &report.reasons {
                eprintln!("infeasible: {r}");
            }
        }
        Err(CliError::Infeasible)
    }
}

fn print_report(r: &FleetReport) {
    let Some(gpu) = &r.gpu else {
        println!("Fleet {}: no MIG plan.", r.fleet);
        return;
    };
    let bought = r
        .purchase
        .as_ref()
        .map(|b| {
            format!(
                " — {} × {} ({} {})",
                b.instances, b.instance_type, b.provider, b.region
            )
        })
        .unwrap_or_default();
    println!(
        "Fleet {}: {} services on {} × {gpu} (MIG), ${:.2}/h{bought}",
        r.fleet,
        r.services.len(),
        r.total_gpus,
        r.usd_per_hour
    );
    println!(
        "Lower bound {} GPUs, gap {} ({}); one whole GPU per service: {} GPUs, ${}/h",
        r.lower_bound_gpus,
        r.gap_gpus,
        if r.optimal {
            "optimal"
        } else {
            "heuristic, not proven optimal"
        },
        r.baseline_whole_gpu.total_gpus,
        opt(r.baseline_whole_gpu.usd_per_hour, 2)
    );
    print_gpus(r);
    print_services(r);
    print_alternatives(r);
}

fn print_gpus(r: &FleetReport) {
    let mut t = table(&["GPU", "layout: profile@start service"]);
    for (i, g) in r.gpus.iter().enumerate() {
        let cells: Vec<String> = g
            .layout
            .iter()
            .map(|s| format!("{}@{} {}", s.profile, s.start, s.services.join(",")))
            .collect();
        t.add_row(vec![(i + 1).to_string(), cells.join(" · ")]);
    }
    println!("{t}");
}

fn print_services(r: &FleetReport) {
    let mut t = table(&[
        "service",
        "model",
        "profile",
        "smallest",
        "prec",
        "inst",
        "req/s per inst (cap)",
        "TTFT p99 ms",
        "TPOT p99 ms",
        "sim",
    ]);
    for s in &r.services {
        let f = &s.fit;
        t.add_row(vec![
            s.name.clone(),
            s.model.clone(),
            s.profile.clone(),
            s.smallest_profile.clone(),
            f.precision.to_string(),
            f.instances.to_string(),
            format!(
                "{:.2} ({:.2})",
                f.load_requests_per_s, f.capacity_requests_per_s
            ),
            format!("{:.0}", f.ttft_p99_ms),
            format!("{:.1}", f.tpot_p99_ms),
            match &s.simulated {
                Some(t) if t.meets_slo => "✓".to_string(),
                Some(_) => "✗".to_string(),
                None => "–".to_string(),
            },
        ]);
    }
    println!("{t}");
}

fn print_alternatives(r: &FleetReport) {
    let mut t = table(&["alternative", "isolated", "GPUs", "$/h", "util", "notes"]);
    for a in &r.alternatives {
        t.add_row(vec![
            a.name.clone(),
            if a.isolated { "yes" } else { "NO" }.to_string(),
            format!("{:.2}", a.gpus),
            opt(a.usd_per_hour, 2),
            format!("{:.0}%", a.utilization * 100.0),
            a.notes.join("; "),
        ]);
    }
    println!("{t}");
}
