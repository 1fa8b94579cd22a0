//! `gpuplan`: thin command-line front end over gpuplan-core.

mod cli;
mod commands;
mod error;
mod load;

use clap::Parser;
use error::{CliError, EXIT_OK};
use std::io::Write;

fn main() {
    let cli = cli::Cli::parse();
    let code = match commands::run(cli) {
        Ok(()) => EXIT_OK,
        Err(CliError::Infeasible) => error::EXIT_INFEASIBLE,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            e.exit_code()
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}
