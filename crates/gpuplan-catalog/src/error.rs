//! Errors of the catalog crate: every message names the file, the line and the field.

use std::fmt;

/// An error met while loading or querying the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogError {
    /// What went wrong.
    pub kind: CatalogErrorKind,
    /// The file (or embedded table) the error was found in, if any.
    pub file: Option<String>,
    /// 1-based line in that file, if known.
    pub line: Option<u64>,
    /// The field (CSV column or JSON/TOML key), if known.
    pub field: Option<String>,
}

/// The kinds of catalog error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CatalogErrorKind {
    /// The file could not be read at all.
    Io(String),
    /// The file is not valid CSV/JSON (syntax).
    Syntax(String),
    /// A required column is missing from the header.
    MissingColumn,
    /// A value is present but not what the field expects.
    InvalidValue {
        /// The offending value as written.
        value: String,
        /// What the field expects, in words.
        expected: String,
    },
    /// The same identifier appears twice.
    Duplicate {
        /// The duplicated identifier.
        id: String,
        /// Line of the first occurrence.
        first_line: u64,
    },
    /// A name that the catalog does not know.
    Unknown {
        /// "GPU", "model", "provider", ...
        what: String,
        /// The name asked for.
        name: String,
        /// The closest known names.
        suggestions: Vec<String>,
    },
}

impl CatalogError {
    /// Builds an error with no location.
    pub fn new(kind: CatalogErrorKind) -> Self {
        CatalogError {
            kind,
            file: None,
            line: None,
            field: None,
        }
    }

    /// Adds the file name.
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Adds the line number (1-based).
    pub fn at_line(mut self, line: u64) -> Self {
        self.line = Some(line);
        self
    }

    /// Adds the field name.
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// An invalid-value error for `field`.
    pub fn invalid(field: &str, value: impl Into<String>, expected: impl Into<String>) -> Self {
        CatalogError::new(CatalogErrorKind::InvalidValue {
            value: value.into(),
            expected: expected.into(),
        })
        .field(field)
    }

    /// An unknown-name error with suggestions.
    pub fn unknown(what: &str, name: &str, suggestions: Vec<String>) -> Self {
        CatalogError::new(CatalogErrorKind::Unknown {
            what: what.to_string(),
            name: name.to_string(),
            suggestions,
        })
    }
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut location = Vec::new();
        if let Some(file) = &self.file {
            location.push(file.clone());
        }
        if let Some(line) = self.line {
            location.push(format!("line {line}"));
        }
        if let Some(field) = &self.field {
            location.push(format!("field `{field}`"));
        }
        if !location.is_empty() {
            write!(f, "{}: ", location.join(", "))?;
        }
        match &self.kind {
            CatalogErrorKind::Io(msg) => write!(f, "cannot read: {msg}"),
            CatalogErrorKind::Syntax(msg) => write!(f, "malformed: {msg}"),
            CatalogErrorKind::MissingColumn => write!(f, "missing column"),
            CatalogErrorKind::InvalidValue { value, expected } => {
                write!(f, "invalid value `{value}`: expected {expected}")
            }
            CatalogErrorKind::Duplicate { id, first_line } => {
                write!(
                    f,
                    "duplicate id `{id}` (first defined on line {first_line})"
                )
            }
            CatalogErrorKind::Unknown {
                what,
                name,
                suggestions,
            } => {
                write!(f, "unknown {what} `{name}`")?;
                if !suggestions.is_empty() {
                    write!(f, "; did you mean: {}?", suggestions.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CatalogError {}

/// Result alias of this crate.
pub type Result<T, E = CatalogError> = std::result::Result<T, E>;
