//! The example workloads shipped in the binary (the web page's starting
//! points): the repository's top-level `examples/*.toml`, the inference workloads the form edits.

use serde::Serialize;

/// Each example's name and TOML text.
pub const EXAMPLES: &[(&str, &str)] = &[
    ("chat-70b", include_str!("../../../examples/chat-70b.toml")),
    (
        "code-completion",
        include_str!("../../../examples/code-completion.toml"),
    ),
    (
        "rag-long-context",
        include_str!("../../../examples/rag-long-context.toml"),
    ),
    (
        "batch-summarization",
        include_str!("../../../examples/batch-summarization.toml"),
    ),
    (
        "eu-residency",
        include_str!("../../../examples/eu-residency.toml"),
    ),
    (
        "moe-mixtral",
        include_str!("../../../examples/moe-mixtral.toml"),
    ),
];

/// One example as the API lists it.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    /// File stem.
    pub name: &'static str,
    /// The workload as a JSON object (the TOML's structure).
    pub workload: serde_json::Value,
}

/// The examples as JSON objects (an example that does not parse is left out;
/// a test checks that every one parses).
pub fn examples() -> Vec<Example> {
    EXAMPLES
        .iter()
        .filter_map(|(name, text)| {
            toml::from_str::<serde_json::Value>(text)
                .ok()
                .map(|workload| Example { name, workload })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_is_listed_and_plans() {
        assert_eq!(examples().len(), EXAMPLES.len());
        let catalog = gpuplan_catalog::Catalog::embedded().unwrap();
        for (name, text) in EXAMPLES {
            let input = crate::WorkloadInput::from_request(
                text.to_string(),
                gpuplan_core::WorkloadFormat::Toml,
            );
            assert!(input.inference(&catalog).is_ok(), "{name}");
        }
    }

    #[test]
    fn every_inference_example_in_the_repository_is_bundled() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect();
        on_disk.sort();
        let mut bundled: Vec<String> = EXAMPLES.iter().map(|(n, _)| n.to_string()).collect();
        bundled.sort();
        assert_eq!(on_disk, bundled);
    }
}
