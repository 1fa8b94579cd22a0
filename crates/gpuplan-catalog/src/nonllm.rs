//! Models other than decoder LLMs: text-to-image diffusion pipelines,
//! Whisper speech-to-text and BERT-style encoders (embeddings, rerankers,
//! question answering). Each model is a list of components (UNet, text
//! encoders, VAE; audio encoder and text decoder; one encoder) whose shapes
//! come from the published `config.json` files named in
//! `data/models_nonllm.csv` and `data/SOURCES.md`.
//!
//! ```
//! use gpuplan_catalog::{NonLlmCatalog, NonLlmFamily};
//! let catalog = NonLlmCatalog::embedded().unwrap();
//! let sdxl = catalog.model("sdxl").unwrap();
//! assert_eq!(sdxl.id, "sdxl-base-1.0");
//! assert_eq!(sdxl.family, NonLlmFamily::Diffusion);
//! assert_eq!(sdxl.components.len(), 4);
//! ```

use crate::catalog::normalize;
use crate::error::{CatalogError, Result};
use crate::limits::Count;
use crate::table::{DuplicateCheck, Row, Table};
use serde::Serialize;

/// The bundled model table (`data/models_nonllm.csv`).
pub const BUNDLED_NONLLM_MODELS: &str = include_str!("../../../data/models_nonllm.csv");
/// The bundled component table (`data/models_nonllm_components.csv`).
pub const BUNDLED_NONLLM_COMPONENTS: &str =
    include_str!("../../../data/models_nonllm_components.csv");

/// Width, channel count, vocabulary or position count of a component: 1 to 2^24.
const DIM: Count = Count::new(1, 1 << 24);
/// Layers or blocks of one component.
const LAYERS: Count = Count::new(1, 4096);

/// What kind of service a model is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NonLlmFamily {
    /// Text-to-image diffusion: denoiser steps, text encoders, VAE decode.
    Diffusion,
    /// Speech-to-text: audio encoder over 30 s windows, autoregressive decoder.
    Speech,
    /// A bidirectional encoder run once per input (embedding, reranking, QA).
    Encoder,
}

impl NonLlmFamily {
    /// The name used in files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            NonLlmFamily::Diffusion => "diffusion",
            NonLlmFamily::Speech => "speech",
            NonLlmFamily::Encoder => "encoder",
        }
    }
}

/// The network a component is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentKind {
    /// Stable Diffusion UNet (`UNet2DConditionModel`).
    Unet,
    /// FLUX multimodal diffusion transformer (double- then single-stream blocks).
    Mmdit,
    /// Bidirectional transformer encoder (BERT, CLIP text, T5 encoder).
    Encoder,
    /// `AutoencoderKL` (the decoder runs at inference; both halves are loaded).
    Vae,
    /// Whisper audio encoder (two convolutions over log-mel frames, transformer).
    WhisperEncoder,
    /// Whisper text decoder (self- and cross-attention, tied vocabulary head).
    WhisperDecoder,
}

/// Feed-forward form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FeedForward {
    /// Two matrices, `hidden → intermediate → hidden`.
    Gelu,
    /// GEGLU (diffusers UNet): `ch → 2·4ch`, then `4ch → ch`.
    Geglu,
    /// Gated (T5 v1.1): two input matrices and one output matrix.
    Gated,
}

/// One network of a pipeline; fields a kind does not use are 0 or empty.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Component {
    /// Component name as diffusers/transformers name the folder (`unet`, `text_encoder_2`).
    pub name: String,
    /// Which network.
    pub kind: ComponentKind,
    /// Transformer layers; for a UNet or VAE, resnet layers per block.
    pub layers: u64,
    /// Model width.
    pub hidden: u64,
    /// Attention heads.
    pub heads: u64,
    /// Feed-forward width.
    pub intermediate: u64,
    /// Vocabulary (token embedding rows).
    pub vocab: u64,
    /// Sequence length the component runs at (text tokens; Whisper encoder positions).
    pub positions: u64,
    /// Channels per resolution level (UNet, VAE); mel bins (Whisper encoder).
    pub channels: Vec<u64>,
    /// Transformer blocks per level (UNet; 0 = no attention) or double/single blocks (MMDiT).
    pub depths: Vec<u64>,
    /// Width of the text states attended to (UNet cross-attention, MMDiT text stream).
    pub cross_dim: u64,
    /// Latent channels (UNet in/out, VAE latent; packed channels for FLUX).
    pub latent_channels: u64,
    /// Width of the pooled/added conditioning (SDXL text_time, FLUX pooled projection).
    pub class_embed_dim: u64,
    /// Feed-forward form.
    pub feed_forward: FeedForward,
}

/// A non-LLM model: its family, task and components.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NonLlmModel {
    /// Canonical id.
    pub id: String,
    /// Family.
    pub family: NonLlmFamily,
    /// Task (`text-to-image`, `speech-to-text`, `embedding`, `rerank`, `question-answering`).
    pub task: String,
    /// Hugging Face repository.
    pub hf_repo: String,
    /// Other names it is looked up by.
    pub aliases: Vec<String>,
    /// Default image side in pixels (diffusion) or window seconds (speech).
    pub default_resolution: Option<u64>,
    /// Default text length in tokens.
    pub default_seq_len: Option<u64>,
    /// Where the shapes come from.
    pub source: String,
    /// Components in pipeline order.
    pub components: Vec<Component>,
}

impl NonLlmModel {
    /// The first component of a kind.
    pub fn component(&self, kind: ComponentKind) -> Option<&Component> {
        self.components.iter().find(|c| c.kind == kind)
    }
}

/// The non-LLM models, looked up by id, alias or Hugging Face repo.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NonLlmCatalog {
    models: Vec<NonLlmModel>,
}

impl NonLlmCatalog {
    /// The bundled tables.
    pub fn embedded() -> Result<NonLlmCatalog> {
        NonLlmCatalog::parse(
            "data/models_nonllm.csv",
            BUNDLED_NONLLM_MODELS,
            "data/models_nonllm_components.csv",
            BUNDLED_NONLLM_COMPONENTS,
        )
    }

    /// Parses the model and component tables; errors name file, line and field.
    pub fn parse(
        models_file: &str,
        models_text: &str,
        components_file: &str,
        components_text: &str,
    ) -> Result<NonLlmCatalog> {
        let mut models = parse_models(models_file, models_text)?;
        let table = Table::parse(components_file, components_text)?;
        table.require(&["model", "component", "kind"])?;
        for row in table.rows() {
            let model_id = row.string("model")?;
            let component = parse_component(&row)?;
            let Some(model) = models.iter_mut().find(|m| m.id == model_id) else {
                return Err(row.error(CatalogError::invalid(
                    "model",
                    &model_id,
                    format!("a model id of {models_file}"),
                )));
            };
            model.components.push(component);
        }
        if let Some(m) = models.iter().find(|m| m.components.is_empty()) {
            return Err(CatalogError::invalid(
                "model",
                &m.id,
                "a model with at least one component row",
            )
            .in_file(components_file));
        }
        Ok(NonLlmCatalog { models })
    }

    /// Every model, in file order.
    pub fn models(&self) -> &[NonLlmModel] {
        &self.models
    }

    /// A model by id, alias or Hugging Face repo (case and `_`/space folded).
    pub fn model(&self, name: &str) -> Option<&NonLlmModel> {
        let key = normalize(name);
        self.models.iter().find(|m| {
            normalize(&m.id) == key
                || normalize(&m.hf_repo) == key
                || m.aliases.iter().any(|a| normalize(a) == key)
        })
    }
}

fn parse_models(file: &str, text: &str) -> Result<Vec<NonLlmModel>> {
    let table = Table::parse(file, text)?;
    table.require(&["id", "family", "task", "hf_repo", "source"])?;
    let mut dups = DuplicateCheck::new();
    let mut out = Vec::new();
    for row in table.rows() {
        let id = row.string("id")?;
        dups.check_name(&row, "id", &id)?;
        let family = match row.text("family") {
            "diffusion" => NonLlmFamily::Diffusion,
            "speech" => NonLlmFamily::Speech,
            "encoder" => NonLlmFamily::Encoder,
            other => {
                return Err(row.error(CatalogError::invalid(
                    "family",
                    other,
                    "diffusion, speech or encoder",
                )))
            }
        };
        out.push(NonLlmModel {
            id,
            family,
            task: row.string("task")?,
            hf_repo: row.string("hf_repo")?,
            aliases: row
                .text("aliases")
                .split(';')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(String::from)
                .collect(),
            default_resolution: row.opt_count("default_resolution", DIM)?,
            default_seq_len: row.opt_count("default_seq_len", DIM)?,
            source: row.string("source")?,
            components: Vec::new(),
        });
    }
    Ok(out)
}

/// A `/`-separated list of whole numbers (`320/640/1280`).
fn list(row: &Row<'_>, column: &str, range: Count) -> Result<Vec<u64>> {
    let text = row.text(column);
    if text.is_empty() {
        return Ok(Vec::new());
    }
    text.split('/')
        .map(|v| match v.trim().parse::<u64>() {
            Ok(n) if range.contains(n) => Ok(n),
            _ => Err(row.error(CatalogError::invalid(
                column,
                text,
                format!("numbers separated by `/`, each {}", range.describe()),
            ))),
        })
        .collect()
}

fn parse_component(row: &Row<'_>) -> Result<Component> {
    let kind = match row.text("kind") {
        "unet" => ComponentKind::Unet,
        "mmdit" => ComponentKind::Mmdit,
        "encoder" => ComponentKind::Encoder,
        "vae" => ComponentKind::Vae,
        "whisper_encoder" => ComponentKind::WhisperEncoder,
        "whisper_decoder" => ComponentKind::WhisperDecoder,
        other => {
            return Err(row.error(CatalogError::invalid(
                "kind",
                other,
                "unet, mmdit, encoder, vae, whisper_encoder or whisper_decoder",
            )))
        }
    };
    let feed_forward = match row.text("mlp") {
        "" | "gelu" => FeedForward::Gelu,
        "geglu" => FeedForward::Geglu,
        "gated" => FeedForward::Gated,
        other => {
            return Err(row.error(CatalogError::invalid("mlp", other, "gelu, geglu or gated")))
        }
    };
    let n = |column: &str, range: Count| row.opt_count(column, range).map(|v| v.unwrap_or(0));
    let c = Component {
        name: row.string("component")?,
        kind,
        layers: n("layers", LAYERS)?,
        hidden: n("hidden", DIM)?,
        heads: n("heads", DIM)?,
        intermediate: n("intermediate", DIM)?,
        vocab: n("vocab", DIM)?,
        positions: n("positions", DIM)?,
        channels: list(row, "channels", DIM)?,
        depths: list(row, "depths", Count::new(0, 4096))?,
        cross_dim: n("cross_dim", DIM)?,
        latent_channels: n("latent_channels", DIM)?,
        class_embed_dim: n("class_embed_dim", DIM)?,
        feed_forward,
    };
    check_component(row, &c)?;
    Ok(c)
}

/// Every field the kind's cost model reads must be present and consistent.
fn check_component(row: &Row<'_>, c: &Component) -> Result<()> {
    let required: &[(&str, bool)] = match c.kind {
        ComponentKind::Unet => &[
            ("layers", c.layers > 0),
            ("channels", !c.channels.is_empty()),
            ("depths", c.depths.len() == c.channels.len()),
            ("cross_dim", c.cross_dim > 0),
            ("latent_channels", c.latent_channels > 0),
            ("positions", c.positions > 0),
        ],
        ComponentKind::Mmdit => &[
            ("hidden", c.hidden > 0),
            (
                "heads",
                c.heads > 0 && c.hidden.is_multiple_of(c.heads.max(1)),
            ),
            ("intermediate", c.intermediate > 0),
            ("depths", c.depths.len() == 2),
            ("cross_dim", c.cross_dim > 0),
            ("latent_channels", c.latent_channels > 0),
            ("positions", c.positions > 0),
        ],
        ComponentKind::Vae => &[
            ("layers", c.layers > 0),
            ("channels", !c.channels.is_empty()),
            ("latent_channels", c.latent_channels > 0),
        ],
        ComponentKind::Encoder | ComponentKind::WhisperDecoder => &[
            ("layers", c.layers > 0),
            ("hidden", c.hidden > 0),
            (
                "heads",
                c.heads > 0 && c.hidden.is_multiple_of(c.heads.max(1)),
            ),
            ("intermediate", c.intermediate > 0),
            ("vocab", c.vocab > 0),
            ("positions", c.positions > 0),
        ],
        ComponentKind::WhisperEncoder => &[
            ("layers", c.layers > 0),
            ("hidden", c.hidden > 0),
            (
                "heads",
                c.heads > 0 && c.hidden.is_multiple_of(c.heads.max(1)),
            ),
            ("intermediate", c.intermediate > 0),
            ("positions", c.positions > 0),
            ("channels", c.channels.len() == 1),
        ],
    };
    match required.iter().find(|(_, ok)| !ok) {
        None => Ok(()),
        Some((field, _)) => Err(row.error(CatalogError::invalid(
            field,
            row.text(field),
            format!(
                "a value a `{}` component needs (see data/SOURCES.md, non-LLM models)",
                row.text("kind")
            ),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_tables_parse_and_resolve_aliases() {
        let c = NonLlmCatalog::embedded().unwrap();
        assert_eq!(c.models().len(), 18);
        assert_eq!(
            c.model("openai/whisper-large-v3").unwrap().id,
            "whisper-large-v3"
        );
        assert_eq!(c.model("BGE_large").unwrap().id, "bge-large-en-v1.5");
        assert!(c.model("llama-3.1-8b").is_none());
    }

    #[test]
    fn a_missing_field_names_file_line_and_field() {
        let models = "id,family,task,hf_repo,source\nm,encoder,embedding,x/m,s\n";
        let comps = "model,component,kind,layers,hidden,heads,intermediate,vocab,positions\nm,encoder,encoder,2,64,4,256,,128\n";
        let err = NonLlmCatalog::parse("m.csv", models, "c.csv", comps)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("c.csv") && err.contains("line 2") && err.contains("`vocab`"),
            "{err}"
        );
        let bad_kind = "model,component,kind\nm,encoder,lstm\n";
        let err = NonLlmCatalog::parse("m.csv", models, "c.csv", bad_kind)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`kind`") && err.contains("lstm"), "{err}");
    }
}
