//! The simulator's error type.

use thiserror::Error;

/// What stops a simulation before it starts.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum SimError {
    /// A setting is out of its range: the field, the value and what is expected.
    #[error("{field} = {value}: expected {expected}")]
    Invalid {
        /// The setting.
        field: String,
        /// Its value as given.
        value: String,
        /// What it takes, in words.
        expected: String,
    },
    /// A trace or rate-curve row cannot be read: file, 1-based line, field and what is expected.
    #[error("{file}: line {line}: {field}: {message}")]
    TraceRow {
        /// The trace's name (its path).
        file: String,
        /// 1-based line number.
        line: usize,
        /// The column, or `row` for the whole line.
        field: String,
        /// What is wrong and what is expected.
        message: String,
    },
    /// A trace without a single request.
    #[error("{file}: no requests (expected rows of timestamp_s,input_tokens,output_tokens)")]
    EmptyTrace {
        /// The trace's name (its path).
        file: String,
    },
}

impl SimError {
    /// An out-of-range setting.
    pub(crate) fn invalid(
        field: impl Into<String>,
        value: impl ToString,
        expected: impl Into<String>,
    ) -> Self {
        SimError::Invalid {
            field: field.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}
