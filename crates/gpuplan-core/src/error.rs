//! Errors of the core crate. Infeasible plans are not errors: they come back
//! as typed rejections.

use gpuplan_catalog::CatalogError;

/// Bad input to a model or the search.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// An input value outside what the model accepts.
    #[error("invalid `{field}` = {value}: expected {expected}")]
    Invalid {
        /// The input field.
        field: String,
        /// The value given.
        value: String,
        /// What is allowed.
        expected: String,
    },
    /// A file that does not parse (syntax or types); the message names the
    /// line and the field where known.
    #[error("{file}: {message}")]
    Malformed {
        /// The file as the user named it.
        file: String,
        /// What is wrong, where.
        message: String,
        /// The field (`traffic.input_tokens`) when the error is inside one.
        field: Option<String>,
    },
    /// A catalog lookup or parse failed.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

impl CoreError {
    /// An invalid-input error.
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        CoreError::Invalid {
            field: field.into(),
            value: value.into(),
            expected: expected.into(),
        }
    }
}

impl CoreError {
    /// A malformed-file error.
    pub fn malformed(file: impl Into<String>, message: impl Into<String>) -> Self {
        CoreError::Malformed {
            file: file.into(),
            message: message.into(),
            field: None,
        }
    }

    /// A malformed-file error inside `field` (a dotted path).
    pub fn malformed_at(
        file: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        CoreError::Malformed {
            file: file.into(),
            message: message.into(),
            field: Some(field.into()),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;
