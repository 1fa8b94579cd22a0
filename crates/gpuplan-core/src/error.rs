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

/// Result alias of this crate.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;
