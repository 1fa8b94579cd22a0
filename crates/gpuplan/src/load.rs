//! Reading user files (the I/O edge): catalog overrides, models from HF configs.

use crate::cli::{CatalogArgs, ModelArgs};
use crate::error::{CliError, CliResult};
use gpuplan_catalog::{
    import_hf_config, import_skypilot_vms, Catalog, CatalogBuilder, ModelArch, TableKind,
};
use std::path::Path;

/// Reads a file, naming it in the error.
pub fn read(path: &Path) -> CliResult<String> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::bad(format!("{}: cannot read: {e}", path.display())))
}

/// The bundled catalog with the user's overrides applied.
pub fn catalog(args: &CatalogArgs) -> CliResult<Catalog> {
    let mut b = CatalogBuilder::embedded()?;
    if let Some(dir) = &args.catalog {
        if !dir.is_dir() {
            return Err(CliError::bad(format!(
                "--catalog {}: not a directory (expected a folder with any of gpus.csv, cloud_offerings.csv, models.csv ...)",
                dir.display()
            )));
        }
        let mut found = 0;
        for kind in TableKind::ALL {
            let path = dir.join(kind.file_name());
            if path.exists() {
                b.extend(kind, &path.display().to_string(), &read(&path)?)?;
                found += 1;
            }
        }
        if found == 0 {
            return Err(CliError::bad(format!(
                "--catalog {}: contains none of gpus.csv, gpu_aliases.csv, mig_profiles.csv, cloud_offerings.csv, regions.csv, models.csv, checkpoints.csv",
                dir.display()
            )));
        }
    }
    for (path, kind) in [
        (&args.gpus, TableKind::Gpus),
        (&args.offerings, TableKind::Offerings),
        (&args.models, TableKind::Models),
    ] {
        if let Some(path) = path {
            b.extend(kind, &path.display().to_string(), &read(path)?)?;
        }
    }
    if let (Some(path), Some(provider)) = (&args.skypilot_vms, &args.skypilot_provider) {
        let rows = import_skypilot_vms(&path.display().to_string(), &read(path)?, provider)?;
        b.replace_provider_offerings(provider, rows);
    }
    Ok(b.build()?)
}

/// The model named by `--model` or built from `--hf-config`.
pub fn model(catalog: &Catalog, args: &ModelArgs) -> CliResult<ModelArch> {
    match (&args.model, &args.hf_config) {
        (_, Some(path)) => {
            let id = path
                .parent()
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .unwrap_or("hf-model")
                .to_string();
            let id = args.model.clone().unwrap_or(id);
            Ok(import_hf_config(
                &path.display().to_string(),
                &read(path)?,
                &id,
            )?)
        }
        (Some(name), None) => Ok(catalog
            .model(name)
            .map_err(|e| CliError::bad(format!("--model: {e}")))?),
        (None, None) => Err(CliError::bad("--model or --hf-config is required")),
    }
}

/// The calibration table: the user's file or the bundled one.
pub fn calibration(path: Option<&Path>) -> CliResult<gpuplan_core::Calibration> {
    match path {
        Some(p) => gpuplan_core::Calibration::parse(&read(p)?)
            .map_err(|e| CliError::bad(format!("{}: {e}", p.display()))),
        None => Ok(gpuplan_core::Calibration::bundled()),
    }
}

/// Reads and validates a workload file, and keeps the shape as written
/// (the simulator samples token lengths from its histograms, which the
/// validated workload reduces to mean and p99).
pub fn workload_with_raw(
    catalog: &Catalog,
    path: &Path,
) -> CliResult<(gpuplan_core::InferenceWorkload, gpuplan_core::RawWorkload)> {
    let text = read(path)?;
    let name = path.display();
    let raw = parse_workload(
        &name.to_string(),
        &text,
        path.extension().and_then(|e| e.to_str()) == Some("json"),
    )?;
    let hf_model = match &raw.model.hf_config {
        Some(rel) => {
            let p = path.parent().unwrap_or(Path::new(".")).join(rel);
            let id = raw
                .model
                .id
                .clone()
                .unwrap_or_else(|| "hf-model".to_string());
            Some(import_hf_config(&p.display().to_string(), &read(&p)?, &id)?)
        }
        None => None,
    };
    let validated = raw
        .clone()
        .validate(catalog, hf_model)
        .map_err(|e| CliError::bad(format!("{name}: {e}")))?;
    Ok((validated, raw))
}

/// Parses a workload file as written. Type errors name the field path as the
/// user wrote it (`traffic.requests_per_s`) and what it takes in words.
fn parse_workload(name: &str, text: &str, json: bool) -> CliResult<gpuplan_core::RawWorkload> {
    let located = |line: Option<usize>, path: &serde_path_to_error::Path, msg: &str| {
        let line = line.map(|l| format!("line {l}: ")).unwrap_or_default();
        let path = path.to_string();
        let field = if path == "." || path.is_empty() || msg.contains(&format!("`{path}`")) {
            String::new()
        } else {
            format!("field `{path}`: ")
        };
        CliError::bad(format!("{name}: {line}{field}{}", in_words(msg)))
    };
    if json {
        let mut de = serde_json::Deserializer::from_str(text);
        let raw = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| located(Some(e.inner().line()), e.path(), &e.inner().to_string()))?;
        de.end()
            .map_err(|e| CliError::bad(format!("{name}: line {}: {e}", e.line())))?;
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
            CliError::bad(format!("{name}: {line}{msg}"))
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
        match parse_workload("w", text, json) {
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
