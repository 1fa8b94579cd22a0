//! Published checkpoints of the catalog's models (`data/checkpoints.csv`):
//! which Hugging Face repo holds a model's base or instruct weights at a
//! given precision, and in which on-disk format.

use crate::error::{CatalogError, Result};
use crate::gpu::Precision;
use crate::table::{DuplicateCheck, Origin, Table};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which release of a model: the pretrained base or the instruction-tuned (chat) one.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// The instruction-tuned (chat) release; what a service usually runs.
    #[default]
    Instruct,
    /// The pretrained base release.
    Base,
}

impl Variant {
    /// The lowercase name used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Instruct => "instruct",
            Variant::Base => "base",
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "instruct" => Ok(Variant::Instruct),
            "base" => Ok(Variant::Base),
            other => Err(format!(
                "unknown variant `{other}`: expected \"instruct\" or \"base\""
            )),
        }
    }
}

/// How a checkpoint's weights are stored; decides which kernel vLLM loads them with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckpointFormat {
    /// Unquantised 16-bit safetensors (BF16 or FP16); served at `--dtype auto`.
    Bf16,
    /// FP8 (E4M3) weights with per-tensor, per-channel or block scales
    /// (compressed-tensors, Meta's FBGEMM or DeepSeek's block-scaled FP8).
    Fp8,
    /// FP8 (E4M3) weights and activations quantised by NVIDIA ModelOpt
    /// (`hf_quant_config.json`, NVIDIA's `…-FP8` repos): the FP8 checkpoint
    /// TensorRT-LLM loads; vLLM runs it with the same FP8 kernels.
    ModeloptFp8,
    /// AWQ INT4 weights with group scales (AutoAWQ).
    Awq,
    /// GPTQ INT4 weights with group scales (AutoGPTQ / GPTQModel).
    Gptq,
    /// INT8 weights and INT8 activations (compressed-tensors `quantized.w8a8`).
    W8a8Int8,
    /// NVFP4 weights and activations (NVIDIA ModelOpt `…-FP4`).
    Nvfp4,
    /// MXFP4 expert weights (gpt-oss), the rest BF16.
    Mxfp4,
}

impl CheckpointFormat {
    /// Every format, in file order.
    pub const ALL: [CheckpointFormat; 8] = [
        CheckpointFormat::Bf16,
        CheckpointFormat::Fp8,
        CheckpointFormat::ModeloptFp8,
        CheckpointFormat::Awq,
        CheckpointFormat::Gptq,
        CheckpointFormat::W8a8Int8,
        CheckpointFormat::Nvfp4,
        CheckpointFormat::Mxfp4,
    ];

    /// The name used in `checkpoints.csv`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointFormat::Bf16 => "bf16",
            CheckpointFormat::Fp8 => "fp8",
            CheckpointFormat::ModeloptFp8 => "modelopt-fp8",
            CheckpointFormat::Awq => "awq",
            CheckpointFormat::Gptq => "gptq",
            CheckpointFormat::W8a8Int8 => "w8a8-int8",
            CheckpointFormat::Nvfp4 => "nvfp4",
            CheckpointFormat::Mxfp4 => "mxfp4",
        }
    }

    /// The gpuplan weight precision a checkpoint of this format is planned at.
    pub fn precision(self) -> Precision {
        match self {
            CheckpointFormat::Bf16 => Precision::Bf16,
            CheckpointFormat::Fp8 | CheckpointFormat::ModeloptFp8 => Precision::Fp8,
            CheckpointFormat::Awq | CheckpointFormat::Gptq => Precision::Int4,
            CheckpointFormat::W8a8Int8 => Precision::Int8,
            CheckpointFormat::Nvfp4 | CheckpointFormat::Mxfp4 => Precision::Fp4,
        }
    }
}

impl fmt::Display for CheckpointFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CheckpointFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.trim().to_ascii_lowercase();
        CheckpointFormat::ALL
            .into_iter()
            .find(|f| f.as_str() == lower)
            .ok_or_else(|| {
                format!(
                    "unknown checkpoint format `{lower}`: expected one of {}",
                    CheckpointFormat::ALL.map(|f| f.as_str()).join(", ")
                )
            })
    }
}

/// One published checkpoint of a catalog model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoint {
    /// Catalog model id (`models.csv` `id`).
    pub model: String,
    /// Base or instruct release.
    pub variant: Variant,
    /// Weight precision it is planned at.
    pub precision: Precision,
    /// Hugging Face repo id, as `vllm serve` takes it.
    pub repo: String,
    /// On-disk format.
    pub format: CheckpointFormat,
    /// Where the repo id was seen.
    pub source: String,
}

impl Checkpoint {
    /// Whether the weights are stored quantised (anything but 16-bit).
    pub fn prequantized(&self) -> bool {
        self.format != CheckpointFormat::Bf16
    }
}

/// Parses `checkpoints.csv`; model ids are checked against the models when the catalog is built.
pub(crate) fn parse_checkpoints(file: &str, text: &str) -> Result<Vec<(Checkpoint, Origin)>> {
    let table = Table::parse(file, text)?;
    table.require(&["model", "variant", "precision", "repo", "format", "source"])?;
    let mut keys = DuplicateCheck::new();
    let mut out = Vec::new();
    for row in table.rows() {
        let model = row.string("model")?.to_ascii_lowercase();
        let variant_text = row.string("variant")?;
        let variant: Variant = variant_text
            .parse()
            .map_err(|e: String| row.error(CatalogError::invalid("variant", &variant_text, e)))?;
        let precision_text = row.string("precision")?;
        let precision: Precision = precision_text.parse().map_err(|e: String| {
            row.error(CatalogError::invalid("precision", &precision_text, e))
        })?;
        let format_text = row.string("format")?;
        let format: CheckpointFormat = format_text
            .parse()
            .map_err(|e: String| row.error(CatalogError::invalid("format", &format_text, e)))?;
        // A format stores one precision: an AWQ repo cannot be listed as FP8.
        if format.precision() != precision {
            return Err(row.error(CatalogError::invalid(
                "precision",
                &precision_text,
                format!(
                    "{} for a `{format}` checkpoint",
                    format.precision().as_str()
                ),
            )));
        }
        let repo = row.string("repo")?;
        // A repo id is `owner/name` with no spaces (the form `vllm serve` takes).
        let well_formed = repo.split('/').count() == 2
            && repo.split('/').all(|p| !p.is_empty())
            && !repo.contains(char::is_whitespace);
        if !well_formed {
            return Err(row.error(CatalogError::invalid(
                "repo",
                &repo,
                "a Hugging Face repo id `owner/name`",
            )));
        }
        // One repo per model, release and format; a precision may have several
        // formats (AWQ and GPTQ INT4), preferred in file order.
        keys.check(&row, "model", &format!("{model}/{variant}/{format}"))?;
        let checkpoint = Checkpoint {
            model,
            variant,
            precision,
            repo,
            format,
            source: row.string("source")?,
        };
        out.push((checkpoint, Origin::of(&row)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "model,variant,precision,repo,format,source\n";

    fn parse(rows: &str) -> Result<Vec<Checkpoint>> {
        parse_checkpoints("checkpoints.csv", &format!("{HEADER}{rows}"))
            .map(|rows| rows.into_iter().map(|(c, _)| c).collect())
    }

    #[test]
    fn parses_a_row() {
        let c = parse("llama-3.1-8b,instruct,int4,a/b-AWQ,awq,test\n").unwrap();
        assert_eq!(c[0].variant, Variant::Instruct);
        assert_eq!(c[0].format, CheckpointFormat::Awq);
        assert_eq!(c[0].precision, Precision::Int4);
        assert!(c[0].prequantized());
    }

    #[test]
    fn rejects_unknown_format_with_location() {
        let err = parse("m,instruct,int4,a/b,exl2,test\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("`format`"), "{err}");
        assert!(err.contains("awq"), "{err}");
    }

    #[test]
    fn rejects_a_format_at_the_wrong_precision() {
        let err = parse("m,instruct,fp8,a/b-AWQ,awq,test\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`precision`"), "{err}");
        assert!(err.contains("int4 for a `awq` checkpoint"), "{err}");
    }

    #[test]
    fn rejects_unknown_variant() {
        let err = parse("m,chat,bf16,a/b,bf16,test\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`variant`"), "{err}");
        assert!(err.contains("\"instruct\" or \"base\""), "{err}");
    }

    #[test]
    fn rejects_duplicate_keys() {
        let err = parse("m,base,bf16,a/b,bf16,t\nm,base,bf16,a/c,bf16,t\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("first defined on line 2"), "{err}");
    }

    #[test]
    fn allows_two_formats_of_one_precision() {
        let c = parse("m,instruct,int4,a/b-AWQ,awq,t\nm,instruct,int4,a/b-GPTQ,gptq,t\n").unwrap();
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn rejects_a_malformed_repo() {
        let err = parse("m,base,bf16,just-a-name,bf16,t\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`repo`"), "{err}");
    }
}
