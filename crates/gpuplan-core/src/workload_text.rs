//! Workload files as text: TOML or JSON into a [`RawWorkload`], with errors
//! that name the file, the line and the field path as the user wrote it
//! (`traffic.requests_per_s`) and what it takes in words. The CLI reads the
//! file; this module only parses text (the core does no I/O), so the fuzz
//! targets reach the same code the CLI runs.

use crate::error::{CoreError, Result};
use crate::workload::RawWorkload;

/// The syntax of a workload file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadFormat {
    /// TOML (`*.toml`, the default).
    Toml,
    /// JSON (`*.json`).
    Json,
}

/// Parses a workload file as written; `name` (its path) starts every error.
/// Type errors name the line and the field path as the user wrote it
/// (`traffic.requests_per_s`) and what it takes in words.
///
/// ```
/// use gpuplan_core::{parse_workload, WorkloadFormat};
/// let e = parse_workload("w.toml", "kind = 1", WorkloadFormat::Toml).unwrap_err();
/// assert!(e.to_string().starts_with("w.toml: line 1"), "{e}");
/// ```
pub fn parse_workload(name: &str, text: &str, format: WorkloadFormat) -> Result<RawWorkload> {
    parse_document(name, text, format)
}

/// The `kind` a workload file declares, when it parses as a table with a
/// string `kind` (None otherwise: the full parse then reports the error).
pub fn workload_kind(text: &str, format: WorkloadFormat) -> Option<String> {
    match format {
        WorkloadFormat::Json => serde_json::from_str::<serde_json::Value>(text)
            .ok()?
            .get("kind")?
            .as_str()
            .map(str::to_string),
        WorkloadFormat::Toml => toml::from_str::<toml::Table>(text)
            .ok()?
            .get("kind")?
            .as_str()
            .map(str::to_string),
    }
}

/// The dotted field a parse error is in: its path, and for serde's
/// "missing field `x`" the missing field below it.
fn blamed_field(path: &str, msg: &str) -> Option<String> {
    let path = if path == "." { "" } else { path };
    let missing = msg
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());
    match (path.is_empty(), missing) {
        (true, None) => None,
        (true, Some(m)) => Some(m.to_string()),
        (false, None) => Some(path.to_string()),
        (false, Some(m)) => Some(format!("{path}.{m}")),
    }
}

/// Parses any workload document type with the same located, worded errors
/// as [`parse_workload`].
pub fn parse_document<T: serde::de::DeserializeOwned>(
    name: &str,
    text: &str,
    format: WorkloadFormat,
) -> Result<T> {
    let located = |line: Option<usize>, path: &serde_path_to_error::Path, msg: &str| {
        let line = line.map(|l| format!("line {l}: ")).unwrap_or_default();
        let path = path.to_string();
        let field = if path == "." || path.is_empty() || msg.contains(&format!("`{path}`")) {
            String::new()
        } else {
            format!("field `{path}`: ")
        };
        let message = format!("{line}{field}{}", in_words(msg));
        match blamed_field(&path, msg) {
            Some(f) => CoreError::malformed_at(name, f, message),
            None => CoreError::malformed(name, message),
        }
    };
    if format == WorkloadFormat::Json {
        let mut de = serde_json::Deserializer::from_str(text);
        let raw = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| located(Some(e.inner().line()), e.path(), &e.inner().to_string()))?;
        de.end()
            .map_err(|e| CoreError::malformed(name, format!("line {}: {e}", e.line())))?;
        Ok(raw)
    } else {
        let line_of = |e: &toml::de::Error| e.span().map(|s| line_at(text, s.start));
        let de = toml::Deserializer::parse(text).map_err(|e| {
            let mut line = line_of(&e)
                .map(|l| format!("line {l}: "))
                .unwrap_or_default();
            let mut msg = e.message().trim_end().to_string();
            // toml says "duplicate key" without the key, with a span on the
            // first occurrence: name the key and the line of the repeat.
            if msg == "duplicate key" {
                if let Some((first, repeat, key)) = e.span().and_then(|s| duplicate(text, s)) {
                    line = format!("line {repeat}: ");
                    msg = format!("duplicate key `{key}` (first set on line {first})");
                }
            }
            CoreError::malformed(name, format!("{line}{msg}"))
        })?;
        serde_path_to_error::deserialize(de)
            .map_err(|e| located(line_of(e.inner()), e.path(), e.inner().message().trim_end()))
    }
}

/// 1-based line of byte `pos` in `text`.
fn line_at(text: &str, pos: usize) -> usize {
    text.get(..pos).unwrap_or(text).matches('\n').count() + 1
}

/// For a duplicate key whose repeat lies under `span`: the line of the
/// nearest earlier assignment (`key =` or `key.`), the line of the repeat,
/// and the key.
fn duplicate(text: &str, span: std::ops::Range<usize>) -> Option<(usize, usize, String)> {
    let key = text.get(span.clone())?.trim().to_string();
    let repeat = line_at(text, span.start);
    let before = &text[..span.start];
    // The nearest earlier assignment: the one in the same table.
    let first = before
        .rmatch_indices(key.as_str())
        .find(|(i, _)| {
            let after = before[i + key.len()..].trim_start();
            after.starts_with('=') || after.starts_with('.')
        })
        .map(|(i, _)| line_at(text, i))
        .unwrap_or(repeat);
    Some((first, repeat, key))
}

/// Rewrites serde's Rust type names into what a workload field takes, in words.
fn in_words(msg: &str) -> String {
    // serde_json appends " at line L column C"; the line is reported already.
    let msg = match msg.find(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    };
    let mut out = msg.to_string();
    for (rust, words) in [
        ("expected f64", "expected a number"),
        ("expected u64", "expected a whole number >= 0"),
        ("expected u32", "expected a whole number >= 0"),
        ("expected a sequence", "expected a list [...]"),
        ("expected a map", "expected a table"),
        ("expected a boolean", "expected true or false"),
        ("floating point `", "number `"),
        ("invalid type: integer", "invalid type: whole number"),
        ("invalid value: integer", "invalid value:"),
    ] {
        out = out.replace(rust, words);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str, json: bool) -> String {
        let format = if json {
            WorkloadFormat::Json
        } else {
            WorkloadFormat::Toml
        };
        match parse_workload("w", text, format) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        }
    }

    const BASE: &str = "kind = \"inference\"\n[model]\nid = \"llama-3.1-8b\"\n[traffic]\nrequests_per_s = 5\ninput_tokens = { mean = 500, p99 = 2000 }\noutput_tokens = { mean = 100, p99 = 400 }\n";

    #[test]
    fn type_errors_name_the_field_path_and_expect_words() {
        let e = err(
            &BASE.replace("requests_per_s = 5", "requests_per_s = \"20\""),
            false,
        );
        assert!(
            e.contains("line 5") && e.contains("`traffic.requests_per_s`"),
            "{e}"
        );
        assert!(e.contains("expected a number") && !e.contains("f64"), "{e}");
        let e = err(&format!("{BASE}[constraints]\nmin_replicas = -1\n"), false);
        assert!(
            e.contains("`constraints.min_replicas`") && e.contains(">= 0"),
            "{e}"
        );
        let e = err(&BASE.replace("{ mean = 500, p99 = 2000 }", "5"), false);
        assert!(
            e.contains("`traffic.input_tokens`") && e.contains("mean and p99, or histogram"),
            "{e}"
        );
        let json = r#"{"kind":"inference","model":{"id":"x"},"traffic":{"requests_per_s":"20","input_tokens":{"mean":5},"output_tokens":{"mean":5}}}"#;
        let e = err(json, true);
        assert!(
            e.contains("`traffic.requests_per_s`") && e.contains("expected a number"),
            "{e}"
        );
    }
}
