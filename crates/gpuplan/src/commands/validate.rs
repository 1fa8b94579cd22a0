//! `gpuplan validate`: predicted vs measured on a benchmark file.

use super::{check_finite, opt, print_json, table};
use crate::cli::{KindArg, ValidateCmd};
use crate::error::{CliError, CliResult};
use crate::load;
use gpuplan_catalog::{parse_benchmarks, BenchmarkKind, BenchmarkRow, Catalog};
use gpuplan_core::mlperf_inference::{
    bundled_input_lengths, fit_family_factors, fit_input_lengths,
};
use gpuplan_core::nonllm::{bundled_factors, fit_nonllm_factors};
use gpuplan_core::{
    cross_validate, fit_calibration_report, fit_engine_factors, fit_training_calibration,
    summarize_by, validate_all, validate_with, ErrorSummary,
};

/// Writes a fitted table where `path` says (nothing when `None`).
fn write_table(path: &Option<std::path::PathBuf>, csv: &str, json: bool) -> CliResult<()> {
    let Some(path) = path else {
        return Ok(());
    };
    std::fs::write(path, csv)
        .map_err(|e| CliError::bad(format!("{}: cannot write: {e}", path.display())))?;
    if !json {
        println!("Wrote {}.", path.display());
    }
    Ok(())
}

/// The benchmark file's rows that `--kind` and `--engine` keep, with the file's name.
fn selected_rows(cmd: &ValidateCmd) -> CliResult<(String, Vec<BenchmarkRow>)> {
    let (name, text) = match &cmd.benchmarks {
        Some(p) => (p.display().to_string(), load::read(p)?),
        None => {
            let set = cmd.set.bundled();
            if !set.fit_allowed() && (cmd.fit || cmd.cv.is_some()) {
                return Err(CliError::bad(
                    "--set holdout: the held-out rows are never fitted on; \
                     expected --fit and --cv only with --set dev, --set mlperf or --benchmarks",
                ));
            }
            let (name, text) = set.source();
            (name.to_string(), text.to_string())
        }
    };
    let mut rows = parse_benchmarks(&name, &text)?;
    if let Some(kind) = cmd.kind {
        let k = match kind {
            KindArg::Inference => BenchmarkKind::Inference,
            KindArg::Training => BenchmarkKind::Training,
            KindArg::Memory => BenchmarkKind::Memory,
        };
        rows.retain(|r| r.kind == k);
    }
    if let Some(engine) = cmd.engine {
        // ROCm vLLM counts as vLLM.
        let column = |r: &BenchmarkRow| match r.engine.as_str() {
            "rocm-vllm" => "vllm".to_string(),
            other => other.to_string(),
        };
        rows.retain(|r| r.kind == BenchmarkKind::Inference && column(r) == engine.as_str());
    }
    Ok((name, rows))
}

pub fn run(catalog: &Catalog, cmd: ValidateCmd) -> CliResult {
    let (name, rows) = selected_rows(&cmd)?;
    let mut cal = load::calibration(cmd.calibration.as_deref())?;
    if let Some(split) = cmd.cv {
        let cv = cross_validate(catalog, &rows, &cal, split);
        if cmd.json {
            return print_json(&cv);
        }
        print_cross_validation(&cv, &name);
        return Ok(());
    }
    // The LLM efficiencies as given (before any refit): the MLPerf input
    // means are fitted against them, as the bundled file is.
    let given_cal = cal.clone();
    let mut training = load::training_factors(cmd.training_calibration.as_deref())?;
    if cmd.fit {
        training = fit_training_calibration(catalog, &rows, &cal, &training);
        write_table(
            &cmd.write_training_calibration,
            &training.table.to_csv(),
            cmd.json,
        )?;
    }
    let mut fit_report = None;
    if cmd.fit {
        let (fitted, report) = refit_llm(catalog, &rows, &cal, &training, &cmd, &name)?;
        cal = fitted;
        fit_report = Some(report);
    }
    if cmd.simulate {
        return super::validate_simulate::run(
            catalog,
            &rows,
            &cal,
            &bundled_input_lengths(),
            cmd.sim_requests,
            cmd.json,
        );
    }
    let (nonllm, input_lengths) = if cmd.fit {
        let nonllm = fit_nonllm_factors(catalog, &rows, &cal, &bundled_factors());
        let lengths = fit_input_lengths(catalog, &rows, &given_cal, &bundled_input_lengths());
        write_table(&cmd.write_nonllm_calibration, &nonllm.to_csv(), cmd.json)?;
        write_table(&cmd.write_input_lengths, &lengths.to_csv(), cmd.json)?;
        (nonllm, lengths)
    } else {
        (bundled_factors(), bundled_input_lengths())
    };
    let mut report = validate_all(catalog, &rows, &cal, &training, &nonllm, &input_lengths);
    report.fit = fit_report;
    for by in &cmd.by {
        report
            .by
            .insert(by.as_str().to_string(), summarize_by(&report.rows, *by));
    }
    if cmd.fit && !cmd.json && !report.summary.by_family.is_empty() {
        print_factors("non-LLM factor", &nonllm);
        print_factors("MLPerf data-set input mean", &input_lengths);
    }
    if cmd.json {
        return print_json(&report);
    }
    check_finite(&report)?;
    if cmd.markdown {
        print_markdown(&report, &name);
        return Ok(());
    }
    if !cmd.by.is_empty() {
        print_segments(&report);
        return Ok(());
    }
    print_report(&report);
    Ok(())
}

/// `--by`: the overall summary by kind, then one table per grouping.
fn print_segments(report: &gpuplan_core::ValidationReport) {
    println!("Summary by kind (|error| percentiles over predicted rows):");
    println!("{}", summary_table(report.summary.by_kind.iter()));
    for (by, groups) in &report.by {
        println!("By {by}:");
        println!("{}", summary_table(groups.iter()));
    }
}

/// The human report: every row, worst first, then the summaries.
fn print_report(report: &gpuplan_core::ValidationReport) {
    let mut t = table(&[
        "id",
        "model",
        "gpu",
        "setup",
        "metric",
        "measured",
        "predicted",
        "error %",
        "bound / why skipped",
    ]);
    for r in &report.rows {
        t.add_row(vec![
            r.id.clone(),
            r.model.clone(),
            r.gpu.clone(),
            r.setup.clone(),
            r.metric.clone(),
            format_value(r.measured),
            r.predicted.map(format_value).unwrap_or_else(|| "–".into()),
            r.error_pct
                .map(|e| format!("{e:+.1}"))
                .unwrap_or_else(|| "skipped".into()),
            r.bound
                .clone()
                .or_else(|| r.skipped.clone())
                .unwrap_or_default(),
        ]);
    }
    println!("{t}");
    println!("Summary by kind (|error| percentiles over predicted rows):");
    println!("{}", summary_table(report.summary.by_kind.iter()));
    println!("Summary by GPU:");
    println!("{}", summary_table(report.summary.by_gpu.iter()));
    if !report.summary.by_engine.is_empty() {
        println!("Inference rows by engine:");
        println!("{}", summary_table(report.summary.by_engine.iter()));
        println!("Inference rows by GPU family:");
        println!("{}", summary_table(report.summary.by_architecture.iter()));
    }
    if !report.summary.by_family.is_empty() {
        println!("Summary of non-LLM rows by family and scenario:");
        println!("{}", summary_table(report.summary.by_family.iter()));
    }
}

/// `--fit`: the LLM efficiencies refitted (TensorRT-LLM factors, CDNA3 on
/// its MLPerf rows, engine step times on their rows), written where asked,
/// with the before/after accuracy and the tables unless `--json`.
fn refit_llm(
    catalog: &Catalog,
    rows: &[BenchmarkRow],
    cal: &gpuplan_core::Calibration,
    training: &gpuplan_core::training::TrainingFactors,
    cmd: &ValidateCmd,
    name: &str,
) -> CliResult<(gpuplan_core::Calibration, gpuplan_core::FitReport)> {
    let before = validate_with(catalog, rows, cal, training);
    let report = fit_calibration_report(catalog, rows, cal);
    let mut fitted = report.calibration.clone();
    // CDNA3 (ROCm vLLM): on its MLPerf Offline rows, where the set has them.
    fitted = fit_family_factors(catalog, rows, &fitted, &bundled_input_lengths());
    // Engine step times (vLLM on NVIDIA), on their own rows.
    fitted = fit_engine_factors(catalog, rows, &fitted, &bundled_input_lengths());
    let after = validate_with(catalog, rows, &fitted, training);
    if let Some(path) = &cmd.write_calibration {
        std::fs::write(path, fitted.to_csv())
            .map_err(|e| CliError::bad(format!("{}: cannot write: {e}", path.display())))?;
        if !cmd.json {
            println!("Wrote {}.", path.display());
        }
    }
    if cmd.json {
        return Ok((fitted, report));
    }
    let inference = |r: &gpuplan_core::ValidationReport| {
        r.summary
            .by_kind
            .get("inference")
            .cloned()
            .unwrap_or_default()
    };
    let (b, a) = (inference(&before), inference(&after));
    println!(
        "Fitted on {} inference rows of {name}: median |error| {} → {}%, p90 {} → {}%.",
        a.n_predicted,
        opt(b.median_abs_pct_error, 1),
        opt(a.median_abs_pct_error, 1),
        opt(b.p90_abs_pct_error, 1),
        opt(a.p90_abs_pct_error, 1)
    );
    print_fit(&report, &fitted);
    print_factors("training factor", &training.table);
    Ok((fitted, report))
}

/// The LLM fit: free factors against rows, the spread of the starts, and
/// each factor with its status and sensitivity (the meanings are in the
/// calibration table printed by `--write-calibration`).
fn print_fit(report: &gpuplan_core::FitReport, fitted: &gpuplan_core::Calibration) {
    let spread = match (
        report.start_losses.iter().copied().reduce(f64::min),
        report.start_losses.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) => format!("losses {lo:.4}–{hi:.4}"),
        _ => "no start predicted every row".to_string(),
    };
    println!(
        "{} free factors fitted on {} rows; {} starts ({spread}), kept start {} (loss {:.4}).",
        report.free_factors, report.rows, report.starts, report.chosen_start, report.loss
    );
    let mut t = table(&["factor", "value", "bounds", "fit", "loss +% at ±10%"]);
    for f in &report.factors {
        let dropped = !fitted.factors.iter().any(|c| c.name == f.name);
        let status = match f.status {
            gpuplan_core::FactorStatus::Fitted => "fitted",
            gpuplan_core::FactorStatus::AtLowerBound => "at lower bound",
            gpuplan_core::FactorStatus::AtUpperBound => "at upper bound",
            gpuplan_core::FactorStatus::Unconstrained if dropped => {
                "no row pins it: dropped, the family falls back"
            }
            gpuplan_core::FactorStatus::Unconstrained => "no row pins it: kept as given",
            gpuplan_core::FactorStatus::OtherFit => "other fit",
        };
        let status = if f.harness_only {
            format!("{status} (benchmark harness only)")
        } else {
            status.to_string()
        };
        t.add_row(vec![
            f.name.clone(),
            format!("{:.4}", f.value),
            format!("[{}, {}]", f.min, f.max),
            status,
            f.loss_rise_pct
                .map(|r| format!("{r:.2}"))
                .unwrap_or_else(|| "–".into()),
        ]);
    }
    println!("{t}");
}

/// `--cv`: held-out against training error, overall and per group, and the
/// worst held-out rows.
fn print_cross_validation(cv: &gpuplan_core::CrossValidation, name: &str) {
    let what = match cv.split {
        gpuplan_core::Split::Folds(k) => format!("{k}-fold cross-validation"),
        gpuplan_core::Split::Family => "one GPU family held out at a time".to_string(),
    };
    println!(
        "{what} of the LLM efficiency fit on {name}: {} rows, {} fitted factors.",
        cv.rows, cv.fitted_factors
    );
    let mut t = table(&["errors", "rows", "median |error|", "p90 |error|", "worst"]);
    for (label, s) in [
        ("held out", &cv.held_out),
        ("in sample (training)", &cv.in_sample),
    ] {
        t.add_row(vec![
            label.to_string(),
            s.n_predicted.to_string(),
            format!("{}%", opt(s.median_abs_pct_error, 1)),
            format!("{}%", opt(s.p90_abs_pct_error, 1)),
            format!("{}%", opt(s.max_abs_pct_error, 1)),
        ]);
    }
    println!("{t}");
    println!("Held out, by group:");
    println!("{}", summary_table(cv.by_group.iter()));
    let mut t = table(&["worst held-out rows", "group", "held out", "in sample"]);
    for d in cv.detail.iter().take(8) {
        t.add_row(vec![
            d.id.clone(),
            d.group.clone(),
            format!("{:+.1}%", d.error_pct),
            format!("{:+.1}%", d.in_sample_error_pct),
        ]);
    }
    println!("{t}");
}

fn print_factors(title: &str, cal: &gpuplan_core::Calibration) {
    let mut t = table(&[title, "value", "bounds", "meaning"]);
    for f in &cal.factors {
        t.add_row(vec![
            f.name.clone(),
            format!("{:.4}", f.value),
            format!("[{}, {}]", f.min, f.max),
            f.meaning.clone(),
        ]);
    }
    println!("{t}");
}

/// The non-LLM section of `--markdown`: error by family and scenario, and the
/// fitted factors beside the rows they were fitted on.
fn print_family_markdown(report: &gpuplan_core::ValidationReport) {
    if report.summary.by_family.is_empty() {
        return;
    }
    print_group_markdown("family · scenario", &report.summary.by_family);
    let (mut predicted, mut llm) = (0, 0);
    for (f, s) in &report.summary.by_family {
        if f.starts_with("llm ") {
            llm += s.n_predicted;
        } else {
            predicted += s.n_predicted;
        }
    }
    println!(
        "Non-LLM rows: {predicted} predicted with {} fitted factors (`data/nonllm_calibration.csv`) on top of the LLM calibration.",
        bundled_factors().factors.len()
    );
    if llm > 0 {
        println!();
        println!(
            "MLPerf LLM rows (`llm` above): {llm} predicted with {} fitted data-set input means (`data/mlperf_input_lengths.csv`, fitted on the Offline rows; Server and Interactive rows are not fitted on).",
            bundled_input_lengths().factors.len()
        );
    }
    println!();
}

fn print_markdown(report: &gpuplan_core::ValidationReport, name: &str) {
    let file = name.rsplit('/').next().unwrap_or(name);
    println!(
        "| kind | rows predicted | skipped | median abs error | p90 abs error | within ±25% |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (k, s) in &report.summary.by_kind {
        println!(
            "| {k} | {} | {} | {}% | {}% | {} |",
            s.n_predicted,
            s.n_skipped,
            opt(s.median_abs_pct_error, 1),
            opt(s.p90_abs_pct_error, 1),
            s.within_25pct
                .map(|w| format!("{:.0}%", w * 100.0))
                .unwrap_or_else(|| "–".into())
        );
    }
    println!();
    print_family_markdown(report);
    println!("| GPU ({file}) | rows | median abs error | worst |");
    println!("|---|---:|---:|---:|");
    for (g, s) in &report.summary.by_gpu {
        if s.n_predicted == 0 {
            continue;
        }
        println!(
            "| {g} | {} | {}% | {}% |",
            s.n_predicted,
            opt(s.median_abs_pct_error, 1),
            opt(s.max_abs_pct_error, 1)
        );
    }
    println!();
    print_group_markdown("inference rows by engine", &report.summary.by_engine);
    print_group_markdown(
        "inference rows by GPU family",
        &report.summary.by_architecture,
    );
    println!("| worst rows | setup | metric | measured | predicted | error |");
    println!("|---|---|---|---:|---:|---:|");
    for r in report.rows.iter().filter(|r| r.error_pct.is_some()).take(8) {
        println!(
            "| {} {} {} | {} | {} | {} | {} | {:+.1}% |",
            r.id,
            r.model,
            r.gpu,
            r.setup,
            r.metric,
            format_value(r.measured),
            r.predicted.map(format_value).unwrap_or_default(),
            r.error_pct.unwrap_or(0.0)
        );
    }
}

/// One `--markdown` table of a grouping: rows predicted and skipped, median,
/// p90 and worst error.
fn print_group_markdown(
    title: &str,
    groups: &std::collections::BTreeMap<String, gpuplan_core::ErrorSummary>,
) {
    if groups.is_empty() {
        return;
    }
    println!("| {title} | rows predicted | skipped | median abs error | p90 abs error | worst |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (k, s) in groups {
        println!(
            "| {k} | {} | {} | {}% | {}% | {}% |",
            s.n_predicted,
            s.n_skipped,
            opt(s.median_abs_pct_error, 1),
            opt(s.p90_abs_pct_error, 1),
            opt(s.max_abs_pct_error, 1)
        );
    }
    println!();
}

fn format_value(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{v:.4e}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn summary_table<'a>(
    groups: impl Iterator<Item = (&'a String, &'a ErrorSummary)>,
) -> comfy_table::Table {
    let mut t = table(&[
        "group",
        "predicted",
        "skipped",
        "median |err| %",
        "p90 |err| %",
        "max |err| %",
        "within ±25%",
    ]);
    for (k, s) in groups {
        t.add_row(vec![
            k.clone(),
            s.n_predicted.to_string(),
            s.n_skipped.to_string(),
            opt(s.median_abs_pct_error, 1),
            opt(s.p90_abs_pct_error, 1),
            opt(s.max_abs_pct_error, 1),
            s.within_25pct
                .map(|w| format!("{:.0}%", w * 100.0))
                .unwrap_or_else(|| "–".into()),
        ]);
    }
    t
}
