//! Builds a [`ModelArch`] from a Hugging Face `config.json`.

use crate::error::{CatalogError, CatalogErrorKind, Result};
use crate::limits::{self, Count};
use crate::model::{check_model, MlaSpec, MlpType, ModelArch, MoeSpec};
use serde_json::Value;

/// Model types the importer understands (`model_type` in config.json).
pub const SUPPORTED_MODEL_TYPES: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen2_moe",
    "qwen3_moe",
    "deepseek_v2",
    "deepseek_v3",
    "gemma2",
    "phi3",
    "starcoder2",
];

/// Reads the numbers of one config.json (an LLM's here, a diffusion,
/// speech or encoder network's in `nonllm_hf`): every number with its range
/// of `crate::limits`, and errors name the key as config.json writes it.
pub(crate) struct ConfigReader<'a> {
    /// The config's object (an LLM's under `text_config` for multimodal wrappers).
    pub(crate) cfg: &'a Value,
    pub(crate) file: &'a str,
}

impl ConfigReader<'_> {
    pub(crate) fn err(&self, field: &str, value: String, expected: &str) -> CatalogError {
        CatalogError::invalid(field, value, expected).in_file(self.file)
    }

    pub(crate) fn uint(&self, key: &str, range: Count) -> Result<Option<u64>> {
        match self.cfg.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => match x.as_u64() {
                Some(n) if range.contains(n) => Ok(Some(n)),
                _ => Err(self.err(key, x.to_string(), &range.describe())),
            },
        }
    }

    pub(crate) fn need(&self, key: &str, range: Count) -> Result<u64> {
        self.uint(key, range)?
            .ok_or_else(|| self.err(key, "(missing)".into(), &range.describe()))
    }

    fn width(&self, key: &str) -> Result<u64> {
        self.need(key, limits::MODEL_WIDTH)
    }

    fn experts(&self, key: &str) -> Result<u64> {
        self.need(key, limits::MODEL_EXPERTS)
    }
}

/// `range` from 0: a key whose 0 means "none".
fn or_zero(range: Count) -> Count {
    Count::new(0, range.max)
}

/// Parses `text` (the content of `file`) as a HF config and builds the
/// architecture, named `id`.
pub fn import_hf_config(file: &str, text: &str, id: &str) -> Result<ModelArch> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        CatalogError::new(CatalogErrorKind::Syntax(e.to_string()))
            .in_file(file)
            .at_line(e.line() as u64)
    })?;
    // Multimodal wrappers keep the language model under text_config.
    let cfg = v.get("text_config").filter(|t| t.is_object()).unwrap_or(&v);
    let r = ConfigReader { cfg, file };
    let model_type = cfg
        .get("model_type")
        .or_else(|| v.get("model_type"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !SUPPORTED_MODEL_TYPES.contains(&model_type.as_str()) {
        return Err(r.err(
            "model_type",
            model_type,
            &format!("one of {}", SUPPORTED_MODEL_TYPES.join(", ")),
        ));
    }
    let architecture = v
        .get("architectures")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{model_type} (HF config)"));

    let hidden = r.need("hidden_size", limits::MODEL_WIDTH)?;
    let heads = r.need("num_attention_heads", limits::MODEL_HEADS)?;
    let kv_heads = r
        .uint("num_key_value_heads", limits::MODEL_HEADS)?
        .unwrap_or(heads);
    let layers = r.need("num_hidden_layers", limits::MODEL_LAYERS)?;
    let vocab = r.need("vocab_size", limits::MODEL_VOCAB)?;
    let mla = read_mla(&r, &model_type)?;
    let head_dim = read_head_dim(&r, hidden, heads, mla.as_ref())?;
    let moe = read_moe(&r, &model_type)?;
    let tie = read_tie(&r, &model_type)?;
    let mlp_type = read_mlp_type(&r, &model_type);
    let use_sliding = !matches!(cfg.get("use_sliding_window"), Some(Value::Bool(false)));
    let sliding_window = if use_sliding {
        r.uint("sliding_window", limits::MODEL_CONTEXT)?
    } else {
        None
    };
    let intermediate = read_intermediate(&r, moe.as_ref())?;
    let m = ModelArch {
        id: id.to_ascii_lowercase(),
        hf_repo: v
            .get("_name_or_path")
            .and_then(Value::as_str)
            .filter(|s| s.contains('/'))
            .map(str::to_string),
        aliases: vec![],
        architecture,
        num_layers: layers,
        hidden_size: hidden,
        num_attention_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        intermediate_size: intermediate,
        vocab_size: vocab,
        tie_word_embeddings: tie,
        max_position_embeddings: r
            .uint("max_position_embeddings", limits::MODEL_CONTEXT)?
            .unwrap_or(4096),
        mlp_type,
        moe,
        mla,
        sliding_window,
        encoder: None,
        official_params_b: None,
        exact_params: None,
        source: format!("imported from Hugging Face config {file}"),
    };
    check_model(&m)
        .map_err(|(field, value, expected)| r.err(hf_key(&field, &model_type), value, &expected))?;
    Ok(m)
}

/// DeepSeek's multi-head latent attention, when the model type has it.
fn read_mla(r: &ConfigReader<'_>, model_type: &str) -> Result<Option<MlaSpec>> {
    if !model_type.starts_with("deepseek") {
        return Ok(None);
    }
    Ok(Some(MlaSpec {
        q_lora_rank: r
            .uint("q_lora_rank", or_zero(limits::MODEL_WIDTH))?
            .unwrap_or(0),
        kv_lora_rank: r.width("kv_lora_rank")?,
        qk_rope_head_dim: r.width("qk_rope_head_dim")?,
        qk_nope_head_dim: r.width("qk_nope_head_dim")?,
        v_head_dim: r.width("v_head_dim")?,
    }))
}

/// A head's width: MLA's query-key parts, `head_dim`, or hidden / heads.
fn read_head_dim(
    r: &ConfigReader<'_>,
    hidden: u64,
    heads: u64,
    mla: Option<&MlaSpec>,
) -> Result<u64> {
    if let Some(m) = mla {
        return Ok(m.qk_nope_head_dim + m.qk_rope_head_dim);
    }
    match r.uint("head_dim", limits::MODEL_WIDTH)? {
        Some(d) => Ok(d),
        None if hidden.is_multiple_of(heads) => Ok(hidden / heads),
        None => Err(r.err(
            "num_attention_heads",
            heads.to_string(),
            &format!(
                "a divisor of hidden_size ({hidden}) when head_dim is not given; \
                 set head_dim explicitly if the heads are not hidden_size / num_attention_heads wide"
            ),
        )),
    }
}

/// The experts of a mixture-of-experts model type, as each family names them.
fn read_moe(r: &ConfigReader<'_>, model_type: &str) -> Result<Option<MoeSpec>> {
    Ok(match model_type {
        "mixtral" => Some(MoeSpec {
            num_experts: r.experts("num_local_experts")?,
            experts_per_token: r.experts("num_experts_per_tok")?,
            num_shared_experts: 0,
            expert_intermediate_size: r.width("intermediate_size")?,
            first_dense_layers: 0,
        }),
        "qwen2_moe" | "qwen3_moe" => Some(MoeSpec {
            num_experts: r.experts("num_experts")?,
            experts_per_token: r.experts("num_experts_per_tok")?,
            num_shared_experts: u64::from(
                r.uint(
                    "shared_expert_intermediate_size",
                    or_zero(limits::MODEL_WIDTH),
                )?
                .unwrap_or(0)
                    > 0,
            ),
            expert_intermediate_size: r.width("moe_intermediate_size")?,
            first_dense_layers: 0,
        }),
        "deepseek_v2" | "deepseek_v3" => Some(MoeSpec {
            num_experts: r.experts("n_routed_experts")?,
            experts_per_token: r.experts("num_experts_per_tok")?,
            num_shared_experts: r
                .uint("n_shared_experts", limits::MODEL_SMALL_COUNT)?
                .unwrap_or(0),
            expert_intermediate_size: r.width("moe_intermediate_size")?,
            first_dense_layers: r
                .uint("first_k_dense_replace", limits::MODEL_SMALL_COUNT)?
                .unwrap_or(0),
        }),
        _ => None,
    })
}

/// `tie_word_embeddings`, defaulting as the model type does (Gemma 2 ties).
fn read_tie(r: &ConfigReader<'_>, model_type: &str) -> Result<bool> {
    match r.cfg.get("tie_word_embeddings") {
        Some(Value::Bool(b)) => Ok(*b),
        None | Some(Value::Null) => Ok(model_type == "gemma2"),
        Some(x) => Err(r.err("tie_word_embeddings", x.to_string(), "true or false")),
    }
}

/// The FFN's form from the model type and its activation.
fn read_mlp_type(r: &ConfigReader<'_>, model_type: &str) -> MlpType {
    let act = r
        .cfg
        .get("hidden_act")
        .or_else(|| r.cfg.get("hidden_activation"))
        .and_then(Value::as_str)
        .unwrap_or("silu");
    match model_type {
        "starcoder2" => MlpType::Gelu,
        "gemma2" => MlpType::Geglu,
        _ if act.starts_with("gelu") => MlpType::Geglu,
        _ => MlpType::Swiglu,
    }
}

/// The dense FFN width; MoE models whose dense width is absent use the
/// expert width.
fn read_intermediate(r: &ConfigReader<'_>, moe: Option<&MoeSpec>) -> Result<u64> {
    match r.uint("intermediate_size", or_zero(limits::MODEL_WIDTH))? {
        Some(x) if x > 0 => Ok(x),
        _ => moe.map(|m| m.expert_intermediate_size).ok_or_else(|| {
            r.err(
                "intermediate_size",
                "(missing)".into(),
                &limits::MODEL_WIDTH.describe(),
            )
        }),
    }
}

/// The config.json key of a [`ModelArch`] field, so errors name what the user wrote.
fn hf_key<'a>(field: &'a str, model_type: &str) -> &'a str {
    match field {
        "num_layers" => "num_hidden_layers",
        "num_kv_heads" => "num_key_value_heads",
        "num_experts" => match model_type {
            "mixtral" => "num_local_experts",
            "deepseek_v2" | "deepseek_v3" => "n_routed_experts",
            _ => "num_experts",
        },
        "experts_per_token" => "num_experts_per_tok",
        "first_dense_layers" => "first_k_dense_replace",
        "moe_intermediate_size" if model_type == "mixtral" => "intermediate_size",
        "shape" => "hidden_size, num_hidden_layers, intermediate_size, vocab_size (together)",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_unsupported_and_malformed() {
        let e = import_hf_config("c.json", r#"{"model_type":"bert"}"#, "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("model_type") && e.contains("c.json"), "{e}");
        let e = import_hf_config("c.json", "{ not json", "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("malformed") && e.contains("line 1"), "{e}");
        let e = import_hf_config(
            "c.json",
            r#"{"model_type":"llama","hidden_size":4096,"num_attention_heads":32,"vocab_size":1}"#,
            "x",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("num_hidden_layers"), "{e}");
    }

    fn llama(extra: &str) -> String {
        let base = r#""model_type":"llama","hidden_size":4096,"num_attention_heads":32,"num_hidden_layers":32,"vocab_size":128256,"intermediate_size":14336"#;
        format!("{{{base}{extra}}}")
    }

    #[test]
    fn errors_name_the_hf_key_and_value() {
        let e = import_hf_config("c.json", &llama(r#","num_key_value_heads":0"#), "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`num_key_value_heads`") && e.contains("`0`"),
            "{e}"
        );
        let e = import_hf_config("c.json", &llama(r#","num_key_value_heads":5"#), "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`num_key_value_heads`") && e.contains("`5`") && e.contains("divisor"),
            "{e}"
        );
        let e = import_hf_config("c.json", &llama(r#","head_dim":4611686018427387904"#), "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`head_dim`") && e.contains("4611686018427387904") && e.contains("1048576"),
            "{e}"
        );
        let e = import_hf_config(
            "c.json",
            &llama("").replace("4096", "18446744073709551615"),
            "x",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`hidden_size`"), "{e}");
    }

    #[test]
    fn hidden_not_divisible_by_heads_needs_an_explicit_head_dim() {
        let cfg = llama("").replace("\"num_attention_heads\":32", "\"num_attention_heads\":3");
        let e = import_hf_config("c.json", &cfg, "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("num_attention_heads") && e.contains("head_dim"),
            "{e}"
        );
        let with = cfg.replace("}", ",\"head_dim\":128,\"num_key_value_heads\":1}");
        let m = import_hf_config("c.json", &with, "x").unwrap();
        assert_eq!(m.head_dim, 128);
    }
}
