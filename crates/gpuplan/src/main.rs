//! `gpuplan`: thin command-line front end over gpuplan-core.

mod cli;
mod commands;
mod error;
mod load;

use clap::Parser;
use error::{CliError, EXIT_OK};
use std::io::Write;

/// mimalloc instead of glibc malloc: the server plans on several threads with
/// large short-lived buffers, and glibc's per-thread arenas kept growing.
/// Wrapped in a counter of live heap bytes (one atomic add per allocation),
/// which `serve` reports in `/metrics`: it tells a leak (live bytes grow)
/// from allocator retention (live bytes flat, RSS not).
#[global_allocator]
static ALLOCATOR: cap::Cap<mimalloc::MiMalloc> = cap::Cap::new(mimalloc::MiMalloc, usize::MAX);

/// Bytes allocated on the heap and not yet freed, now.
pub(crate) fn heap_live_bytes() -> usize {
    ALLOCATOR.allocated()
}

fn main() {
    // A closed pipe (`gpuplan ... | head`) is not an error: stop quietly, as ripgrep does.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("Broken pipe") {
            std::process::exit(EXIT_OK);
        }
        default_hook(info);
    }));
    let cli = cli::Cli::parse();
    let code = match commands::run(cli) {
        Ok(()) => EXIT_OK,
        Err(CliError::Infeasible) => error::EXIT_INFEASIBLE,
        Err(CliError::NoAnswer(message)) => {
            let _ = writeln!(std::io::stderr(), "{message}");
            error::EXIT_INFEASIBLE
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            e.exit_code()
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}
