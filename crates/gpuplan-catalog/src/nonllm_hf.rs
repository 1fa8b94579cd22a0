//! Builds a non-LLM model from a published config: a diffusers
//! `unet/config.json` (`UNet2DConditionModel`) or `transformer/config.json`
//! (`FluxTransformer2DModel`), or a transformers `config.json` of Whisper or
//! a BERT-style encoder. One config describes one network: an imported UNet
//! or FLUX transformer is costed without its text encoders and VAE.

use crate::error::{CatalogError, CatalogErrorKind, Result};
use crate::hf::ConfigReader;
use crate::limits::Count;
use crate::nonllm::{Component, ComponentKind, FeedForward, NonLlmFamily, NonLlmModel};
use serde_json::Value;

/// Encoder `model_type`s the importer reads as BERT-style encoders.
pub const ENCODER_MODEL_TYPES: &[&str] = &["bert", "roberta", "xlm-roberta"];

const DIM: Count = Count::new(1, 1 << 24);
const LAYERS: Count = Count::new(1, 4096);

/// The model a config describes, or None when it is not an image, speech or
/// encoder config (an LLM config, for the LLM importer). Errors name the file and key.
pub fn import_nonllm_config(file: &str, text: &str, id: &str) -> Result<Option<NonLlmModel>> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        CatalogError::new(CatalogErrorKind::Syntax(e.to_string()))
            .in_file(file)
            .at_line(e.line() as u64)
    })?;
    let class = v.get("_class_name").and_then(Value::as_str).unwrap_or("");
    let model_type = v.get("model_type").and_then(Value::as_str).unwrap_or("");
    let r = ConfigReader { cfg: &v, file };
    let (family, task, components) = match (class, model_type) {
        ("UNet2DConditionModel", _) => (NonLlmFamily::Diffusion, "text-to-image", vec![r.unet()?]),
        ("FluxTransformer2DModel", _) => {
            (NonLlmFamily::Diffusion, "text-to-image", vec![r.flux()?])
        }
        (_, "whisper") => (NonLlmFamily::Speech, "speech-to-text", r.whisper()?),
        (_, t) if ENCODER_MODEL_TYPES.contains(&t) => {
            (NonLlmFamily::Encoder, "embedding", vec![r.encoder()?])
        }
        _ => return Ok(None),
    };
    let default_resolution = match family {
        NonLlmFamily::Diffusion => Some(r.uint("sample_size", DIM)?.unwrap_or(128) * 8),
        _ => None,
    };
    Ok(Some(NonLlmModel {
        id: id.to_string(),
        family,
        task: task.to_string(),
        hf_repo: id.to_string(),
        aliases: Vec::new(),
        default_resolution,
        default_seq_len: None,
        source: format!("imported from {file}"),
        components,
    }))
}

impl ConfigReader<'_> {
    /// A number or a list of numbers (one per level), as `levels` values.
    fn per_level(&self, key: &str, levels: usize, default: u64) -> Result<Vec<u64>> {
        match self.cfg.get(key) {
            None | Some(Value::Null) => Ok(vec![default; levels]),
            Some(Value::Array(a)) if a.len() == levels => a
                .iter()
                .map(|x| {
                    x.as_u64()
                        .filter(|n| *n <= 4096)
                        .ok_or_else(|| self.err(key, x.to_string(), "whole numbers up to 4096"))
                })
                .collect(),
            Some(x) => match x.as_u64() {
                Some(n) if n <= 4096 => Ok(vec![n; levels]),
                _ => Err(self.err(
                    key,
                    x.to_string(),
                    &format!("a number or a list of {levels}"),
                )),
            },
        }
    }

    fn unet(&self) -> Result<Component> {
        let channels: Vec<u64> = match self.cfg.get("block_out_channels") {
            Some(Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|x| {
                    x.as_u64().filter(|n| DIM.contains(*n)).ok_or_else(|| {
                        self.err("block_out_channels", x.to_string(), &DIM.describe())
                    })
                })
                .collect::<Result<_>>()?,
            other => {
                return Err(self.err(
                    "block_out_channels",
                    format!("{other:?}"),
                    "a list of channel counts",
                ))
            }
        };
        let levels = channels.len();
        let layers = self.per_level("transformer_layers_per_block", levels, 1)?;
        // Levels whose down block has cross-attention carry transformers.
        let types: Vec<String> = match self.cfg.get("down_block_types") {
            Some(Value::Array(a)) if a.len() == levels => a
                .iter()
                .map(|t| t.as_str().unwrap_or("").to_string())
                .collect(),
            other => {
                return Err(self.err(
                    "down_block_types",
                    format!("{other:?}"),
                    &format!("a list of {levels} block types"),
                ))
            }
        };
        let depths = types
            .iter()
            .zip(&layers)
            .map(|(t, d)| {
                if t.starts_with("CrossAttn") {
                    (*d).max(1)
                } else {
                    0
                }
            })
            .collect();
        let cross = self.per_level("cross_attention_dim", levels, 0)?;
        Ok(Component {
            name: "unet".into(),
            kind: ComponentKind::Unet,
            layers: self.need("layers_per_block", LAYERS)?,
            hidden: 0,
            heads: 0,
            intermediate: 0,
            vocab: 0,
            positions: 77,
            channels,
            depths,
            cross_dim: cross
                .into_iter()
                .max()
                .filter(|c| *c > 0)
                .ok_or_else(|| self.err("cross_attention_dim", "missing".into(), "a width"))?,
            latent_channels: self.need("in_channels", DIM)?,
            class_embed_dim: self
                .uint("projection_class_embeddings_input_dim", DIM)?
                .unwrap_or(0),
            feed_forward: FeedForward::Geglu,
        })
    }

    fn flux(&self) -> Result<Component> {
        let heads = self.need("num_attention_heads", DIM)?;
        let head_dim = self.need("attention_head_dim", DIM)?;
        Ok(Component {
            name: "transformer".into(),
            kind: ComponentKind::Mmdit,
            layers: 0,
            hidden: heads * head_dim,
            heads,
            // FLUX's MLP ratio is 4 (Black Forest Labs' reference code).
            intermediate: 4 * heads * head_dim,
            vocab: 0,
            positions: 512,
            channels: Vec::new(),
            depths: vec![
                self.need("num_layers", LAYERS)?,
                self.need("num_single_layers", LAYERS)?,
            ],
            cross_dim: self.need("joint_attention_dim", DIM)?,
            latent_channels: self.need("in_channels", DIM)?,
            class_embed_dim: self.uint("pooled_projection_dim", DIM)?.unwrap_or(768),
            feed_forward: FeedForward::Gelu,
        })
    }

    fn whisper(&self) -> Result<Vec<Component>> {
        let d = self.need("d_model", DIM)?;
        let layer = |name: &str, kind, layers: &str, heads: &str, ffn: &str| -> Result<Component> {
            Ok(Component {
                name: name.into(),
                kind,
                layers: self.need(layers, LAYERS)?,
                hidden: d,
                heads: self.need(heads, DIM)?,
                intermediate: self.need(ffn, DIM)?,
                vocab: self.need("vocab_size", DIM)?,
                positions: 0,
                channels: Vec::new(),
                depths: Vec::new(),
                cross_dim: 0,
                latent_channels: 0,
                class_embed_dim: 0,
                feed_forward: FeedForward::Gelu,
            })
        };
        let mut enc = layer(
            "encoder",
            ComponentKind::WhisperEncoder,
            "encoder_layers",
            "encoder_attention_heads",
            "encoder_ffn_dim",
        )?;
        enc.positions = self.uint("max_source_positions", DIM)?.unwrap_or(1500);
        enc.channels = vec![self.need("num_mel_bins", DIM)?];
        // The vocabulary lives in the decoder (embedding and tied head).
        enc.vocab = 0;
        let mut dec = layer(
            "decoder",
            ComponentKind::WhisperDecoder,
            "decoder_layers",
            "decoder_attention_heads",
            "decoder_ffn_dim",
        )?;
        dec.positions = self.uint("max_target_positions", DIM)?.unwrap_or(448);
        Ok(vec![enc, dec])
    }

    fn encoder(&self) -> Result<Component> {
        let hidden = self.need("hidden_size", DIM)?;
        let heads = self.need("num_attention_heads", DIM)?;
        if !hidden.is_multiple_of(heads) {
            return Err(self.err(
                "num_attention_heads",
                heads.to_string(),
                "a divisor of hidden_size",
            ));
        }
        Ok(Component {
            name: "encoder".into(),
            kind: ComponentKind::Encoder,
            layers: self.need("num_hidden_layers", LAYERS)?,
            hidden,
            heads,
            intermediate: self.need("intermediate_size", DIM)?,
            vocab: self.need("vocab_size", DIM)?,
            positions: self.need("max_position_embeddings", DIM)?,
            channels: Vec::new(),
            depths: Vec::new(),
            cross_dim: 0,
            latent_channels: 0,
            class_embed_dim: 0,
            feed_forward: FeedForward::Gelu,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NonLlmCatalog;

    #[test]
    fn published_configs_import_as_the_bundled_shapes() {
        // The SD 2.x UNet config as diffusers publishes it (read in the corpus).
        let sd2 = r#"{"_class_name": "UNet2DConditionModel", "attention_head_dim": [5, 10, 20, 20],
            "block_out_channels": [320, 640, 1280, 1280], "cross_attention_dim": 1024,
            "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
            "in_channels": 4, "layers_per_block": 2, "out_channels": 4, "sample_size": 64}"#;
        let m = import_nonllm_config("unet/config.json", sd2, "my-sd2")
            .unwrap()
            .unwrap();
        let bundled = NonLlmCatalog::embedded().unwrap();
        let want = bundled
            .model("sd-2-base")
            .unwrap()
            .component(ComponentKind::Unet)
            .unwrap();
        let got = &m.components[0];
        assert_eq!(
            (&got.channels, &got.depths, got.cross_dim, got.layers),
            (&want.channels, &want.depths, want.cross_dim, want.layers)
        );
        assert_eq!(m.default_resolution, Some(512));
        let whisper = r#"{"model_type": "whisper", "d_model": 1280, "encoder_layers": 32, "decoder_layers": 4,
            "encoder_attention_heads": 20, "decoder_attention_heads": 20, "encoder_ffn_dim": 5120,
            "decoder_ffn_dim": 5120, "num_mel_bins": 128, "max_source_positions": 1500,
            "max_target_positions": 448, "vocab_size": 51866}"#;
        let m = import_nonllm_config("config.json", whisper, "turbo")
            .unwrap()
            .unwrap();
        let want = bundled.model("whisper-large-v3-turbo").unwrap();
        assert_eq!(m.components, want.components);
        let llama = r#"{"model_type": "llama", "hidden_size": 4096}"#;
        assert!(import_nonllm_config("c.json", llama, "l")
            .unwrap()
            .is_none());
        let bad = r#"{"model_type": "bert", "hidden_size": 1000, "num_attention_heads": 16}"#;
        let err = import_nonllm_config("c.json", bad, "b")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("c.json") && err.contains("num_attention_heads"),
            "{err}"
        );
    }
}
