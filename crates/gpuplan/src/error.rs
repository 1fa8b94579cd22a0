//! The CLI's error type and exit codes.

use std::fmt;

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: the input is valid but nothing is feasible (does not fit, no
/// plan); also an internal error (a bug, such as a non-finite number about to
/// be printed), whose message starts with `internal error:`.
pub const EXIT_INFEASIBLE: i32 = 1;
/// Exit code: bad input (unknown names, malformed files, out-of-range values).
pub const EXIT_BAD_INPUT: i32 = 2;

/// Everything that stops a command.
#[derive(Debug)]
pub enum CliError {
    /// Bad input: the message names the file/flag, the field and what is expected.
    BadInput(String),
    /// Valid input, no feasible answer; the output has already been printed.
    Infeasible,
    /// Valid input, no feasible answer, and why (printed to stderr as is).
    NoAnswer(String),
    /// A bug caught before it reached the output (a NaN or infinity to print).
    Internal(String),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::BadInput(_) => EXIT_BAD_INPUT,
            CliError::Infeasible | CliError::NoAnswer(_) | CliError::Internal(_) => EXIT_INFEASIBLE,
        }
    }

    /// A bad-input error with a message.
    pub fn bad(msg: impl Into<String>) -> Self {
        CliError::BadInput(msg.into())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::BadInput(m) => write!(f, "{m}"),
            CliError::Infeasible => write!(f, "no feasible answer"),
            CliError::NoAnswer(m) => write!(f, "{m}"),
            CliError::Internal(m) => write!(
                f,
                "internal error: {m} (a bug in gpuplan: please report it with the command line)"
            ),
        }
    }
}

impl From<gpuplan_catalog::CatalogError> for CliError {
    fn from(e: gpuplan_catalog::CatalogError) -> Self {
        CliError::BadInput(e.to_string())
    }
}

impl From<gpuplan_core::CoreError> for CliError {
    fn from(e: gpuplan_core::CoreError) -> Self {
        CliError::BadInput(e.to_string())
    }
}

impl From<gpuplan_app::AppError> for CliError {
    fn from(e: gpuplan_app::AppError) -> Self {
        match e.kind {
            gpuplan_app::ErrorKind::BadInput => CliError::BadInput(e.message),
            gpuplan_app::ErrorKind::Infeasible => CliError::NoAnswer(e.message),
            gpuplan_app::ErrorKind::Internal => CliError::Internal(e.message),
        }
    }
}

impl From<gpuplan_sim::SimError> for CliError {
    fn from(e: gpuplan_sim::SimError) -> Self {
        CliError::BadInput(e.to_string())
    }
}

/// Result alias of the CLI.
pub type CliResult<T = ()> = Result<T, CliError>;
