//! One module per verb.

mod catalog;
mod estimate;
mod estimate_nonllm;
mod estimate_training;
mod export;
mod fit;
mod fit_nonllm;
mod mig;
mod mig_fleet;
mod plan;
mod plan_nonllm;
mod plan_summary;
mod plan_training;
mod serve;
mod simulate;
mod validate;
mod validate_simulate;

use crate::cli::{Cli, Command};
use crate::error::{CliError, CliResult};
use crate::load;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> CliResult {
    let catalog = load::catalog(&cli.catalog)?;
    match cli.command {
        Command::Catalog(cmd) => catalog::run(&catalog, cmd),
        Command::Fit(cmd) => fit::run(&catalog, cmd),
        Command::Estimate(cmd) => estimate::run(&catalog, cmd),
        Command::Validate(cmd) => validate::run(&catalog, cmd),
        Command::Plan(cmd) => plan::run(&catalog, cmd),
        Command::Simulate(cmd) => simulate::run(&catalog, *cmd),
        Command::Mig(cmd) => mig::run(&catalog, cmd),
        Command::Serve(cmd) => serve::run(catalog, cmd),
    }
}

/// Terminal width the human output fits by default (`--wide` lifts it).
pub(crate) const TERMINAL_COLUMNS: u16 = 120;

/// A table with the CLI's house style, wrapped to fit [`TERMINAL_COLUMNS`].
pub(crate) fn table(header: &[&str]) -> comfy_table::Table {
    let mut t = wide_table(header);
    t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(TERMINAL_COLUMNS);
    t
}

/// A table with the CLI's house style that never wraps (for `--wide`).
pub(crate) fn wide_table(header: &[&str]) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Disabled)
        .set_header(header.iter().copied());
    t
}

/// `text` cut to at most `max` characters, ending in … when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Prints a value as pretty JSON.
/// Stops with an internal error (exit 1) when `value` holds a NaN or an
/// infinity: every report passes here before it is printed, as a table or JSON.
pub(crate) fn check_finite<T: serde::Serialize>(value: &T) -> CliResult {
    gpuplan_core::ensure_finite(value)
        .map_err(|field| CliError::Internal(format!("non-finite value in field {field}")))
}

/// Prints a value as pretty JSON (after [`check_finite`]: JSON would print NaN as `null`).
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> CliResult {
    check_finite(value)?;
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| crate::error::CliError::bad(format!("cannot encode JSON: {e}")))?;
    println!("{text}");
    Ok(())
}

/// Formats an optional number.
pub(crate) fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|x| format!("{x:.decimals$}"))
        .unwrap_or_else(|| "–".into())
}
