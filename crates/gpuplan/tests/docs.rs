//! The README and `--help` cannot go stale (issue 7):
//! - every `<!-- generated: gpuplan … -->` section of the README is exactly
//!   what that command prints today (refresh all of them with
//!   `GPUPLAN_BLESS=1 cargo test -p gpuplan --test docs`);
//! - every command the README and the `--help` examples show runs, and exits 0;
//! - `rust-version` in Cargo.toml covers what the locked dependencies need.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn gpuplan_in(dir: &Path, args: &[String]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .args(args)
        // Help text wraps at the terminal width: keep example lines whole.
        .env("COLUMNS", "500")
        .current_dir(dir)
        .output()
        .expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Splits a shell command line: single/double quotes, `#` comments, `\`
/// line continuations; expands `dir/*.ext` against the repository root.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, '\\') => {}
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words.into_iter().flat_map(expand_glob).collect()
}

/// `examples/*.toml` → the matching files, sorted; other words unchanged.
fn expand_glob(word: String) -> Vec<String> {
    let Some((dir, pattern)) = word.rsplit_once('/') else {
        return vec![word];
    };
    let Some(suffix) = pattern.strip_prefix('*') else {
        return vec![word];
    };
    let mut files: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(suffix))
        .map(|name| format!("{dir}/{name}"))
        .collect();
    files.sort();
    files
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

const OPEN: &str = "<!-- generated: gpuplan ";
const CLOSE: &str = "<!-- end generated -->";

/// The README's generated sections: (command words, start and end byte of the content).
fn generated_sections(text: &str) -> Vec<(Vec<String>, usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(OPEN) {
        let open = from + at;
        let header_end = open + text[open..].find("-->").expect("marker closes") + 3;
        let command = &text[open + OPEN.len()..header_end - 3];
        let start = header_end + 1;
        let end = start + text[start..].find(CLOSE).expect("generated section closes");
        out.push((shell_words(command), start, end));
        from = end + CLOSE.len();
    }
    out
}

#[test]
fn readme_generated_sections_are_what_the_tool_prints() {
    let text = readme();
    let sections = generated_sections(&text);
    assert!(
        sections.len() >= 2,
        "the README must generate its accuracy and examples tables"
    );
    let bless = std::env::var_os("GPUPLAN_BLESS").is_some();
    let mut updated = text.clone();
    let mut stale = Vec::new();
    // Replace from the end so earlier offsets stay valid.
    for (words, start, end) in sections.into_iter().rev() {
        let run = gpuplan_in(&root(), &words);
        assert_eq!(run.code, 0, "gpuplan {words:?}: {}", run.stderr);
        if text[start..end] != run.stdout {
            stale.push(words.join(" "));
            updated.replace_range(start..end, &run.stdout);
        }
    }
    if bless {
        std::fs::write(root().join("README.md"), updated).expect("write README.md");
    } else {
        assert!(
            stale.is_empty(),
            "README sections differ from what the tool prints: {stale:?}; refresh with \
             `GPUPLAN_BLESS=1 cargo test -p gpuplan --test docs`"
        );
    }
}

/// Commands the README shows: `cargo run --release -- …` lines of shell
/// blocks, and inline `gpuplan …` code.
fn readme_commands(text: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix("cargo run --release -- ") {
            commands.push(shell_words(rest));
        }
        for (i, piece) in line.split('`').enumerate() {
            if i % 2 == 1 {
                if let Some(rest) = piece.strip_prefix("gpuplan ") {
                    if rest.starts_with(|c: char| c.is_ascii_lowercase()) && !rest.contains('<') {
                        commands.push(shell_words(rest));
                    }
                }
            }
        }
    }
    commands
}

/// Commands in the `Examples:` part of each verb's `--help`, with `\`
/// continuations joined.
fn help_commands() -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    for verb in [
        "catalog", "fit", "estimate", "plan", "simulate", "validate", "mig", "serve",
    ] {
        let help = gpuplan_in(&root(), &[verb.to_string(), "--help".to_string()]);
        assert_eq!(help.code, 0);
        let mut pending = String::new();
        for line in help
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("Examples:"))
            .skip(1)
            .take_while(|l| !l.starts_with("Usage:"))
        {
            pending.push_str(line.trim());
            pending.push(' ');
            if line.trim_end().ends_with('\\') {
                continue;
            }
            if let Some(rest) = pending.trim().strip_prefix("gpuplan ") {
                commands.push(shell_words(rest));
            }
            pending.clear();
        }
    }
    commands
}

/// A scratch directory holding the files the documented commands name
/// (`examples/`, `my.csv`, a `data/` to write a calibration into).
fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpuplan-docs-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    for entry in std::fs::read_dir(root().join("examples")).unwrap() {
        let entry = entry.unwrap();
        if entry.path().is_dir() {
            if entry.file_name() == "training" {
                let sub = dir.join("examples").join("training");
                std::fs::create_dir_all(&sub).unwrap();
                for file in std::fs::read_dir(entry.path()).unwrap() {
                    let file = file.unwrap();
                    std::fs::copy(file.path(), sub.join(file.file_name())).unwrap();
                }
            }
            continue; // examples/exports/ (no documented command reads it)
        }
        std::fs::copy(entry.path(), dir.join("examples").join(entry.file_name())).unwrap();
    }
    std::fs::copy(
        root().join("data/benchmarks/benchmarks_dev.csv"),
        dir.join("my.csv"),
    )
    .unwrap();
    // examples/fleets/: `kind = "fleet"` workloads (`gpuplan mig`), kept out
    // of examples/*.toml, which `plan` reads as inference workloads.
    std::fs::create_dir_all(dir.join("examples/fleets")).unwrap();
    for entry in std::fs::read_dir(root().join("examples/fleets")).unwrap() {
        let entry = entry.unwrap();
        let to = dir.join("examples/fleets").join(entry.file_name());
        std::fs::copy(entry.path(), to).unwrap();
    }
    dir
}

#[test]
fn every_documented_command_runs() {
    let readme = readme_commands(&readme());
    assert!(readme.len() >= 7, "README commands found: {readme:?}");
    let help = help_commands();
    assert!(help.len() >= 12, "--help examples found: {help:?}");
    let dir = scratch_dir();
    let mut failures = Vec::new();
    // `serve` runs until stopped: tests/api.rs and scripts/browser-tests.sh
    // exercise it; here only its flags are checked to parse.
    for words in readme.iter().chain(&help) {
        if words.first().map(String::as_str) == Some("serve") {
            let mut help = words.clone();
            help.push("--help".into());
            let run = gpuplan_in(&dir, &help);
            if run.code != 0 {
                failures.push(format!("gpuplan {} → exit {}", help.join(" "), run.code));
            }
            continue;
        }
        let run = gpuplan_in(&dir, words);
        if run.code != 0 {
            failures.push(format!(
                "gpuplan {} → exit {}: {}",
                words.join(" "),
                run.code,
                run.stderr.lines().next().unwrap_or("")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rust_version_covers_the_locked_dependencies() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let declared = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_string())
        .expect("Cargo.toml declares rust-version");
    let metadata = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        metadata.status.success(),
        "{}",
        String::from_utf8_lossy(&metadata.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&metadata.stdout).unwrap();
    let version = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    let needed = value["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| {
            p["rust_version"]
                .as_str()
                .map(|v| (v.to_string(), p["name"].clone()))
        })
        .max_by_key(|(v, _)| version(v))
        .expect("some dependency declares a rust-version");
    assert!(
        version(&declared) >= version(&needed.0),
        "rust-version {declared} is below {} needed by {}",
        needed.0,
        needed.1
    );
    let readme = readme();
    assert!(
        readme.contains(&format!("Rust {declared}+")),
        "the README must state the same minimum Rust ({declared}+)"
    );
}
