//! Reading CSV tables with errors that name the file, line and field.

use crate::error::{CatalogError, CatalogErrorKind, Result};
use crate::limits::{Count, Span};
use std::collections::HashMap;

/// A parsed CSV table: header index plus rows, each with its 1-based line number.
pub(crate) struct Table {
    pub file: String,
    columns: HashMap<String, usize>,
    rows: Vec<(u64, csv::StringRecord)>,
}

/// One row of a [`Table`], with typed accessors.
pub(crate) struct Row<'a> {
    table: &'a Table,
    pub line: u64,
    record: &'a csv::StringRecord,
}

impl Table {
    /// Parses `text` (the content of `file`) as CSV with a header row.
    pub fn parse(file: &str, text: &str) -> Result<Table> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .from_reader(text.as_bytes());
        let headers = reader
            .headers()
            .map_err(|e| syntax_error(file, &e))?
            .clone();
        let columns = headers
            .iter()
            .enumerate()
            .map(|(i, h)| (h.trim().to_string(), i))
            .collect();
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|e| syntax_error(file, &e))?;
            let line = record.position().map(|p| p.line()).unwrap_or(0);
            if record.iter().all(|c| c.trim().is_empty()) {
                continue;
            }
            rows.push((line, record));
        }
        Ok(Table {
            file: file.to_string(),
            columns,
            rows,
        })
    }

    /// Fails unless every named column is present.
    pub fn require(&self, columns: &[&str]) -> Result<()> {
        for c in columns {
            if !self.columns.contains_key(*c) {
                return Err(CatalogError::new(CatalogErrorKind::MissingColumn)
                    .in_file(&self.file)
                    .at_line(1)
                    .field(*c));
            }
        }
        Ok(())
    }

    /// Iterates over the data rows.
    pub fn rows(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(move |(line, record)| Row {
            table: self,
            line: *line,
            record,
        })
    }
}

fn syntax_error(file: &str, e: &csv::Error) -> CatalogError {
    let line = e.position().map(|p| p.line());
    let mut err = CatalogError::new(CatalogErrorKind::Syntax(e.to_string())).in_file(file);
    if let Some(line) = line {
        err = err.at_line(line);
    }
    err
}

impl Row<'_> {
    fn locate(&self, err: CatalogError) -> CatalogError {
        err.in_file(&self.table.file).at_line(self.line)
    }

    /// The raw trimmed text of a column ("" when the column is absent).
    pub fn text(&self, column: &str) -> &str {
        self.table
            .columns
            .get(column)
            .and_then(|&i| self.record.get(i))
            .map(str::trim)
            .unwrap_or("")
    }

    /// A required non-empty string.
    pub fn string(&self, column: &str) -> Result<String> {
        let t = self.text(column);
        if t.is_empty() {
            return Err(self.locate(CatalogError::invalid(column, "", "a non-empty value")));
        }
        Ok(t.to_string())
    }

    /// An optional string (None when empty).
    pub fn opt_string(&self, column: &str) -> Option<String> {
        let t = self.text(column);
        (!t.is_empty()).then(|| t.to_string())
    }

    /// A required whole number inside `range`.
    pub fn count(&self, column: &str, range: Count) -> Result<u64> {
        let t = self.text(column);
        match t.parse::<u64>() {
            Ok(v) if range.contains(v) => Ok(v),
            _ => Err(self.locate(CatalogError::invalid(column, t, range.describe()))),
        }
    }

    /// An optional whole number inside `range` (None when the cell is empty).
    pub fn opt_count(&self, column: &str, range: Count) -> Result<Option<u64>> {
        if self.text(column).is_empty() {
            return Ok(None);
        }
        self.count(column, range).map(Some)
    }

    /// A required finite number inside `range`.
    pub fn span(&self, column: &str, range: Span) -> Result<f64> {
        let t = self.text(column);
        match t.parse::<f64>() {
            Ok(v) if range.contains(v) => Ok(v),
            _ => Err(self.locate(CatalogError::invalid(column, t, range.describe()))),
        }
    }

    /// An optional finite number inside `range` (None when the cell is empty).
    pub fn opt_span(&self, column: &str, range: Span) -> Result<Option<f64>> {
        if self.text(column).is_empty() {
            return Ok(None);
        }
        self.span(column, range).map(Some)
    }

    /// A boolean written `true`/`false` (empty = `default`).
    pub fn bool_or(&self, column: &str, default: bool) -> Result<bool> {
        match self.text(column).to_ascii_lowercase().as_str() {
            "" => Ok(default),
            "true" | "yes" | "1" => Ok(true),
            "false" | "no" | "0" => Ok(false),
            other => Err(self.locate(CatalogError::invalid(column, other, "true or false"))),
        }
    }

    /// Wraps an error raised while interpreting this row.
    pub fn error(&self, err: CatalogError) -> CatalogError {
        self.locate(err)
    }
}

/// Where a row came from: its file and 1-based line, kept with rows that are
/// checked only when the catalog is built (cross-references), so that those
/// errors name the row as precisely as the parse errors do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    pub file: String,
    pub line: u64,
}

impl Origin {
    /// The origin of `row`.
    pub fn of(row: &Row<'_>) -> Origin {
        Origin {
            file: row.table.file.clone(),
            line: row.line,
        }
    }

    /// Adds the file and line to `err`.
    pub fn locate(&self, err: CatalogError) -> CatalogError {
        err.in_file(&self.file).at_line(self.line)
    }
}

/// Rejects duplicate keys, naming both lines.
pub(crate) struct DuplicateCheck {
    seen: HashMap<String, u64>,
}

impl DuplicateCheck {
    pub fn new() -> Self {
        DuplicateCheck {
            seen: HashMap::new(),
        }
    }

    /// Records `key` (compared case-insensitively) seen on `row`.
    pub fn check(&mut self, row: &Row<'_>, field: &str, key: &str) -> Result<()> {
        self.check_key(row, field, key, key.to_ascii_lowercase())
    }

    /// Records a name looked up by the catalog's index (GPU, alias, model):
    /// compared as lookups compare it (`H100 SXM` = `h100_sxm`), shown as written.
    pub fn check_name(&mut self, row: &Row<'_>, field: &str, name: &str) -> Result<()> {
        self.check_key(row, field, name, crate::catalog::normalize(name))
    }

    fn check_key(&mut self, row: &Row<'_>, field: &str, key: &str, norm: String) -> Result<()> {
        if let Some(&first_line) = self.seen.get(&norm) {
            return Err(row.error(
                CatalogError::new(CatalogErrorKind::Duplicate {
                    id: key.to_string(),
                    first_line,
                })
                .field(field),
            ));
        }
        self.seen.insert(norm, row.line);
        Ok(())
    }
}
