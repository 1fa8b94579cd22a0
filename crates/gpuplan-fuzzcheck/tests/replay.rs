//! Replays the checked-in seed corpus (`fuzz/seeds/<target>/`) and every
//! crash reproducer found by fuzzing (`fuzz/regressions/<target>/`) through
//! the same checks the fuzz targets run, on stable: CI keeps every bug the
//! fuzzer found fixed without nightly or cargo-fuzz.

use gpuplan_fuzzcheck::TARGETS;
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir` (none when it does not exist), sorted.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs one target's check on every file of `dir`, naming the file that fails.
fn replay(name: &str, check: gpuplan_fuzzcheck::Check, dir: &Path) -> usize {
    let files = inputs(dir);
    for f in &files {
        let data = std::fs::read(f).expect("a readable input");
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(
            outcome.is_ok(),
            "fuzz target `{name}` fails on {} (rerun: cargo fuzz run {name} {})",
            f.display(),
            f.display()
        );
    }
    files.len()
}

#[test]
fn every_target_has_seeds_and_passes_them() {
    for (name, check) in TARGETS {
        let n = replay(name, *check, &fuzz_dir().join("seeds").join(name));
        assert!(n > 0, "fuzz/seeds/{name}/ has no seed");
    }
}

#[test]
fn every_crash_found_by_fuzzing_stays_fixed() {
    let root = fuzz_dir().join("regressions");
    for dir in std::fs::read_dir(&root).expect("fuzz/regressions exists") {
        let dir = dir.expect("a readable entry").path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(
            TARGETS.iter().any(|(n, _)| *n == name),
            "fuzz/regressions/{name}/ names no fuzz target"
        );
    }
    let mut replayed = 0;
    for (name, check) in TARGETS {
        replayed += replay(name, *check, &root.join(name));
    }
    assert!(replayed > 0, "no regression replayed");
}
