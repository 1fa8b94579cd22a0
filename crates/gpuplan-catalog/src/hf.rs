//! Builds a [`ModelArch`] from a Hugging Face `config.json`.

use crate::error::{CatalogError, CatalogErrorKind, Result};
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
    let err = |field: &str, value: String, expected: &str| {
        CatalogError::invalid(field, value, expected).in_file(file)
    };
    let model_type = cfg
        .get("model_type")
        .or_else(|| v.get("model_type"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !SUPPORTED_MODEL_TYPES.contains(&model_type.as_str()) {
        return Err(err(
            "model_type",
            model_type,
            &format!("one of {}", SUPPORTED_MODEL_TYPES.join(", ")),
        ));
    }
    let uint = |key: &str| -> Result<Option<u64>> {
        match cfg.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .map(Some)
                .ok_or_else(|| err(key, x.to_string(), "a whole number >= 0")),
        }
    };
    let need = |key: &str| -> Result<u64> {
        match uint(key)? {
            Some(x) if x > 0 => Ok(x),
            Some(x) => Err(err(key, x.to_string(), "a whole number >= 1")),
            None => Err(err(key, "(missing)".into(), "a whole number >= 1")),
        }
    };
    let architecture = v
        .get("architectures")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{model_type} (HF config)"));

    let hidden = need("hidden_size")?;
    let heads = need("num_attention_heads")?;
    let kv_heads = uint("num_key_value_heads")?.unwrap_or(heads);
    let layers = need("num_hidden_layers")?;
    let vocab = need("vocab_size")?;

    let mla = if model_type.starts_with("deepseek") {
        Some(MlaSpec {
            q_lora_rank: uint("q_lora_rank")?.unwrap_or(0),
            kv_lora_rank: need("kv_lora_rank")?,
            qk_rope_head_dim: need("qk_rope_head_dim")?,
            qk_nope_head_dim: need("qk_nope_head_dim")?,
            v_head_dim: need("v_head_dim")?,
        })
    } else {
        None
    };
    let head_dim = match &mla {
        Some(m) => m.qk_nope_head_dim + m.qk_rope_head_dim,
        None => uint("head_dim")?.unwrap_or(hidden / heads),
    };

    let moe = match model_type.as_str() {
        "mixtral" => Some(MoeSpec {
            num_experts: need("num_local_experts")?,
            experts_per_token: need("num_experts_per_tok")?,
            num_shared_experts: 0,
            expert_intermediate_size: need("intermediate_size")?,
            first_dense_layers: 0,
        }),
        "qwen2_moe" | "qwen3_moe" => Some(MoeSpec {
            num_experts: need("num_experts")?,
            experts_per_token: need("num_experts_per_tok")?,
            num_shared_experts: u64::from(
                uint("shared_expert_intermediate_size")?.unwrap_or(0) > 0,
            ),
            expert_intermediate_size: need("moe_intermediate_size")?,
            first_dense_layers: 0,
        }),
        "deepseek_v2" | "deepseek_v3" => Some(MoeSpec {
            num_experts: need("n_routed_experts")?,
            experts_per_token: need("num_experts_per_tok")?,
            num_shared_experts: uint("n_shared_experts")?.unwrap_or(0),
            expert_intermediate_size: need("moe_intermediate_size")?,
            first_dense_layers: uint("first_k_dense_replace")?.unwrap_or(0),
        }),
        _ => None,
    };

    let tie_default = model_type == "gemma2";
    let tie = match cfg.get("tie_word_embeddings") {
        Some(Value::Bool(b)) => *b,
        None | Some(Value::Null) => tie_default,
        Some(x) => return Err(err("tie_word_embeddings", x.to_string(), "true or false")),
    };
    let act = cfg
        .get("hidden_act")
        .or_else(|| cfg.get("hidden_activation"))
        .and_then(Value::as_str)
        .unwrap_or("silu");
    let mlp_type = match model_type.as_str() {
        "starcoder2" => MlpType::Gelu,
        "gemma2" => MlpType::Geglu,
        _ if act.starts_with("gelu") => MlpType::Geglu,
        _ => MlpType::Swiglu,
    };
    let use_sliding = !matches!(cfg.get("use_sliding_window"), Some(Value::Bool(false)));
    let sliding_window = if use_sliding {
        uint("sliding_window")?
    } else {
        None
    };
    // MoE models whose dense FFN width is absent use the expert width.
    let intermediate = match uint("intermediate_size")? {
        Some(x) if x > 0 => x,
        _ => moe
            .as_ref()
            .map(|m| m.expert_intermediate_size)
            .ok_or_else(|| {
                err(
                    "intermediate_size",
                    "(missing)".into(),
                    "a whole number >= 1",
                )
            })?,
    };
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
        max_position_embeddings: uint("max_position_embeddings")?.unwrap_or(4096),
        mlp_type,
        moe,
        mla,
        sliding_window,
        encoder: None,
        official_params_b: None,
        exact_params: None,
        source: format!("imported from Hugging Face config {file}"),
    };
    check_model(&m).map_err(|(field, expected)| err(&field, "(config)".into(), &expected))?;
    Ok(m)
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
}
