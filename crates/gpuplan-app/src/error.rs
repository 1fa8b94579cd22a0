//! The façade's one error type: what every front end maps to its own
//! signal (the CLI to exit codes 1/2, the server to HTTP 400/422/500).

use serde::Serialize;
use std::fmt;

/// What kind of failure an [`AppError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Bad input: the message names the file or field and what is expected.
    BadInput,
    /// Valid input with no feasible answer (no plan, does not fit).
    Infeasible,
    /// A bug caught before it reached the output (a NaN about to be printed).
    Internal,
}

/// A failure of an operation, with the input field it concerns when known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppError {
    /// Bad input, infeasible or internal.
    pub kind: ErrorKind,
    /// The input field (`traffic.requests_per_s`, `gpu`), when one is to blame.
    pub field: Option<String>,
    /// What is wrong, for a person.
    pub message: String,
}

impl AppError {
    /// Bad input, naming no single field.
    pub fn bad(message: impl Into<String>) -> Self {
        AppError {
            kind: ErrorKind::BadInput,
            field: None,
            message: message.into(),
        }
    }

    /// Bad input in `field`.
    pub fn bad_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        AppError {
            kind: ErrorKind::BadInput,
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// No feasible answer.
    pub fn infeasible(message: impl Into<String>) -> Self {
        AppError {
            kind: ErrorKind::Infeasible,
            field: None,
            message: message.into(),
        }
    }

    /// A bug caught before it reached the output.
    pub fn internal(message: impl Into<String>) -> Self {
        AppError {
            kind: ErrorKind::Internal,
            field: None,
            message: message.into(),
        }
    }

    /// The same error with its message prefixed by where the input came from
    /// (`examples/chat.toml: ...`).
    pub fn in_source(mut self, source: &str) -> Self {
        if !self.message.starts_with(source) {
            self.message = format!("{source}: {}", self.message);
        }
        self
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::Internal => write!(
                f,
                "internal error: {} (a bug in gpuplan: please report it with the command line)",
                self.message
            ),
            _ => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for AppError {}

impl From<gpuplan_catalog::CatalogError> for AppError {
    fn from(e: gpuplan_catalog::CatalogError) -> Self {
        AppError {
            kind: ErrorKind::BadInput,
            field: e.field.clone(),
            message: e.to_string(),
        }
    }
}

impl From<gpuplan_core::CoreError> for AppError {
    fn from(e: gpuplan_core::CoreError) -> Self {
        let field = match &e {
            gpuplan_core::CoreError::Invalid { field, .. } => Some(field.clone()),
            gpuplan_core::CoreError::Malformed { field, .. } => field.clone(),
            gpuplan_core::CoreError::Catalog(c) => c.field.clone(),
            _ => None,
        };
        AppError {
            kind: ErrorKind::BadInput,
            field,
            message: e.to_string(),
        }
    }
}

impl From<gpuplan_sim::SimError> for AppError {
    fn from(e: gpuplan_sim::SimError) -> Self {
        AppError::bad(e.to_string())
    }
}

/// Result alias of the façade.
pub type AppResult<T> = Result<T, AppError>;
