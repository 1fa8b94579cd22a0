//! `gpuplan mig layouts`: a GPU's MIG layouts and the check of one
//! combination; `gpuplan mig FLEET` is in [`super::mig_fleet`].

use super::{print_json, table};
use crate::cli::{MigAction, MigCmd, MigLayoutsCmd};
use crate::error::{CliError, CliResult};
use gpuplan_catalog::Catalog;
use gpuplan_core::{parse_placements, GpuLayout, LayoutViolation, MigGeometry, SliceProfile};
use serde::Serialize;

pub fn run(catalog: &Catalog, cmd: MigCmd) -> CliResult {
    match (&cmd.action, &cmd.fleet) {
        (Some(MigAction::Layouts(c)), _) => layouts(catalog, c),
        (None, Some(path)) => super::mig_fleet::run(catalog, &cmd, path),
        (None, None) => Err(CliError::bad(
            "mig: a FLEET file or `layouts` is required (see gpuplan mig --help)",
        )),
    }
}

/// One instance of a layout, as the JSON shows it.
#[derive(Serialize)]
struct InstanceRow {
    profile: String,
    start: u32,
}

/// One layout, as the JSON shows it.
#[derive(Serialize)]
struct LayoutRow {
    full: bool,
    compute_slices: u32,
    instances: Vec<InstanceRow>,
}

/// `mig layouts --json`.
#[derive(Serialize)]
struct LayoutsReport {
    gpu: String,
    compute_slices: u32,
    memory_slices: u32,
    profiles: Vec<SliceProfile>,
    variants_included: bool,
    /// Valid non-empty layouts, partial and full.
    layouts_total: usize,
    /// Layouts to which no further instance can be added.
    full_layouts: usize,
    /// Distinct profile combinations among the full layouts (what mig-parted configs name).
    full_profile_combinations: usize,
    layouts: Vec<LayoutRow>,
}

/// `mig layouts --check --json`.
#[derive(Serialize)]
struct CheckReport<'a> {
    gpu: &'a str,
    valid: bool,
    violations: Vec<LayoutViolation>,
}

fn layouts(catalog: &Catalog, cmd: &MigLayoutsCmd) -> CliResult {
    let g = MigGeometry::of(catalog, &cmd.gpu).map_err(|e| CliError::bad(format!("--gpu: {e}")))?;
    if let Some(text) = &cmd.check {
        return check(&g, text, cmd.json);
    }
    let variants = cmd.variants;
    let admit = |p: &SliceProfile| variants || p.base;
    let all = g.layouts(admit);
    let rows: Vec<(GpuLayout, bool)> = all
        .into_iter()
        .map(|l| {
            let full = g.is_full(&l, admit);
            (l, full)
        })
        .collect();
    let full_count = rows.iter().filter(|(_, f)| *f).count();
    let mut combos: Vec<String> = rows
        .iter()
        .filter(|(_, f)| *f)
        .map(|(l, _)| combination(&g, l))
        .collect();
    combos.sort();
    combos.dedup();
    let report = LayoutsReport {
        gpu: g.gpu.clone(),
        compute_slices: g.compute_slices,
        memory_slices: g.memory_slices,
        profiles: g.profiles.iter().filter(|p| admit(p)).cloned().collect(),
        variants_included: variants,
        layouts_total: rows.len(),
        full_layouts: full_count,
        full_profile_combinations: combos.len(),
        layouts: rows
            .iter()
            .filter(|(_, full)| *full || cmd.partial)
            .map(|(l, full)| layout_row(&g, l, *full))
            .collect(),
    };
    if cmd.json {
        return print_json(&report);
    }
    print_layouts(&g, &report);
    Ok(())
}

fn combination(g: &MigGeometry, l: &GpuLayout) -> String {
    let mut names: Vec<&str> = l
        .placements
        .iter()
        .map(|p| g.profiles[p.profile].name.as_str())
        .collect();
    names.sort();
    names.join(" + ")
}

fn layout_row(g: &MigGeometry, l: &GpuLayout, full: bool) -> LayoutRow {
    LayoutRow {
        full,
        // Compute slices the layout's instances take.
        compute_slices: l
            .placements
            .iter()
            .map(|p| g.profiles[p.profile].compute_slices)
            .sum(),
        instances: l
            .placements
            .iter()
            .map(|p| InstanceRow {
                profile: g.profiles[p.profile].name.clone(),
                start: p.start,
            })
            .collect(),
    }
}

fn print_layouts(g: &MigGeometry, r: &LayoutsReport) {
    let mut t = table(&["#", "layout (profile@start)", "compute", "full"]);
    for (i, row) in r.layouts.iter().enumerate() {
        let text: Vec<String> = row
            .instances
            .iter()
            .map(|x| format!("{}@{}", x.profile, x.start))
            .collect();
        t.add_row(vec![
            (i + 1).to_string(),
            text.join(" "),
            format!("{}/{}", row.compute_slices, g.compute_slices),
            if row.full { "yes" } else { "partial" }.to_string(),
        ]);
    }
    println!("{t}");
    println!(
        "{}: {} compute × {} memory slices; {} valid layouts, {} full ({} distinct profile combinations){}",
        r.gpu,
        r.compute_slices,
        r.memory_slices,
        r.layouts_total,
        r.full_layouts,
        r.full_profile_combinations,
        if r.variants_included {
            ", +me/+gfx/-me variants included"
        } else {
            ", base profiles"
        }
    );
}

fn check(g: &MigGeometry, text: &str, json: bool) -> CliResult {
    let instances = parse_placements("--check", text)?;
    let violations = match g.check(&instances) {
        Ok(_) => Vec::new(),
        Err(v) => v,
    };
    if json {
        print_json(&CheckReport {
            gpu: &g.gpu,
            valid: violations.is_empty(),
            violations: violations.clone(),
        })?;
    } else if violations.is_empty() {
        println!("{}: {text} is a valid layout", g.gpu);
    }
    if violations.is_empty() {
        return Ok(());
    }
    let reasons: Vec<String> = violations.iter().map(ToString::to_string).collect();
    Err(CliError::bad(format!(
        "--check {text}: not a valid {} layout: {}",
        g.gpu,
        reasons.join("; ")
    )))
}
