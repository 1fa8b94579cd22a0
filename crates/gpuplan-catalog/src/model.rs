//! Model architectures (`data/models.csv`), parameter counting, the parametric
//! GPT id and the per-family structural rules.

use crate::catalog::normalize;
use crate::error::{CatalogError, Result};
use crate::limits::{self, Count};
use crate::table::{DuplicateCheck, Row, Table};
use serde::Serialize;

/// Feed-forward block type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MlpType {
    /// Gated SiLU: gate, up, down (3 matrices).
    Swiglu,
    /// Gated GELU: gate, up, down (3 matrices).
    Geglu,
    /// Plain GELU: up, down (2 matrices).
    Gelu,
}

impl MlpType {
    /// Weight matrices per FFN (3 for gated, 2 for plain).
    pub fn matrices(self) -> u64 {
        match self {
            MlpType::Swiglu | MlpType::Geglu => 3,
            MlpType::Gelu => 2,
        }
    }
}

/// Mixture-of-experts shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoeSpec {
    /// Routed experts per MoE layer.
    pub num_experts: u64,
    /// Routed experts each token uses (top-k).
    pub experts_per_token: u64,
    /// Always-active shared experts per MoE layer.
    pub num_shared_experts: u64,
    /// FFN width of one expert.
    pub expert_intermediate_size: u64,
    /// Leading layers that use a dense FFN instead (DeepSeek-V3: 3).
    pub first_dense_layers: u64,
}

/// Multi-head latent attention shape (DeepSeek-V2/V3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MlaSpec {
    /// Query low-rank width (0 = no query compression).
    pub q_lora_rank: u64,
    /// Compressed KV width, cached per token per layer.
    pub kv_lora_rank: u64,
    /// Decoupled RoPE key width, cached per token per layer.
    pub qk_rope_head_dim: u64,
    /// Non-RoPE part of the q/k head.
    pub qk_nope_head_dim: u64,
    /// Value head width.
    pub v_head_dim: u64,
}

/// Encoder stack of an encoder-decoder model (Whisper).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EncoderSpec {
    /// Encoder layers.
    pub layers: u64,
    /// Encoder positions (audio frames after the conv stem).
    pub positions: u64,
    /// Input mel bins of the conv stem.
    pub num_mel_bins: u64,
}

/// A transformer's architecture parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelArch {
    /// Short lowercase id, e.g. `llama-3.1-70b`.
    pub id: String,
    /// Hugging Face repo id, if any.
    pub hf_repo: Option<String>,
    /// Other names accepted on lookup.
    pub aliases: Vec<String>,
    /// HF architecture class (`LlamaForCausalLM` ...), decides the structural rules.
    pub architecture: String,
    /// Decoder layers.
    pub num_layers: u64,
    /// Model (residual) width.
    pub hidden_size: u64,
    /// Query heads.
    pub num_attention_heads: u64,
    /// Key/value heads (GQA); equals heads for MHA.
    pub num_kv_heads: u64,
    /// Width of one attention head (q/k).
    pub head_dim: u64,
    /// Dense FFN width.
    pub intermediate_size: u64,
    /// Vocabulary size (as padded in the checkpoint).
    pub vocab_size: u64,
    /// Whether the LM head shares the embedding matrix.
    pub tie_word_embeddings: bool,
    /// Maximum context length.
    pub max_position_embeddings: u64,
    /// FFN type.
    pub mlp_type: MlpType,
    /// MoE shape, if the model is a mixture of experts.
    pub moe: Option<MoeSpec>,
    /// MLA shape, if the model uses multi-head latent attention.
    pub mla: Option<MlaSpec>,
    /// Sliding attention window, if any.
    pub sliding_window: Option<u64>,
    /// Encoder stack, for encoder-decoder models.
    pub encoder: Option<EncoderSpec>,
    /// Parameter count as the source states it, billions (may be a rounded name).
    pub official_params_b: Option<f64>,
    /// Exact parameter count (safetensors total or the audited computed count).
    pub exact_params: Option<u64>,
    /// Where the shape comes from.
    pub source: String,
}

/// Per-family structural details that the shape fields do not carry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArchRules {
    /// LayerNorm (weight + bias) instead of RMSNorm (weight only).
    pub layer_norm: bool,
    /// Norms per decoder layer (2 usually, 4 for Gemma 2).
    pub norms_per_layer: u64,
    /// Bias on q/k/v projections.
    pub qkv_bias: bool,
    /// Bias on the attention output projection.
    pub o_bias: bool,
    /// Biases on the FFN matrices.
    pub mlp_bias: bool,
    /// Per-head RMSNorm on q and k (Qwen3).
    pub qk_norm: bool,
    /// Attention and FFN read the same residual (Falcon, GPT-J).
    pub parallel_block: bool,
    /// Learned absolute positions stored as a table of this many rows.
    pub learned_positions: u64,
    /// One learned sink logit per head (gpt-oss).
    pub attention_sinks: bool,
    /// Router has a bias (gpt-oss) or score-correction bias (DeepSeek-V3).
    pub router_bias: bool,
}

impl ModelArch {
    /// Structural rules of this model's family, from its architecture class.
    pub fn rules(&self) -> ArchRules {
        let base = ArchRules {
            layer_norm: false,
            norms_per_layer: 2,
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            qk_norm: false,
            parallel_block: false,
            learned_positions: 0,
            attention_sinks: false,
            router_bias: false,
        };
        let a = self.architecture.as_str();
        if a.starts_with("Qwen2") {
            ArchRules {
                qkv_bias: true,
                ..base
            }
        } else if a.starts_with("Qwen3") {
            ArchRules {
                qk_norm: true,
                ..base
            }
        } else if a.starts_with("Gemma2") || a.starts_with("Gemma3") {
            ArchRules {
                norms_per_layer: 4,
                ..base
            }
        } else if a.starts_with("GPTJ") {
            // One LayerNorm feeding attention and MLP in parallel; the MLP's
            // fc_in/fc_out carry biases, the attention projections none.
            ArchRules {
                layer_norm: true,
                norms_per_layer: 1,
                parallel_block: true,
                mlp_bias: true,
                ..base
            }
        } else if a.starts_with("Falcon") {
            ArchRules {
                layer_norm: true,
                parallel_block: true,
                ..base
            }
        } else if a.starts_with("Starcoder2") {
            ArchRules {
                layer_norm: true,
                qkv_bias: true,
                o_bias: true,
                mlp_bias: true,
                ..base
            }
        } else if a.starts_with("GptOss") {
            ArchRules {
                qkv_bias: true,
                o_bias: true,
                mlp_bias: true,
                attention_sinks: true,
                router_bias: true,
                ..base
            }
        } else if a.starts_with("Deepseek") {
            ArchRules {
                router_bias: true,
                ..base
            }
        } else if a.starts_with("GPT") || a.starts_with("Whisper") {
            // GPT-2/GPT-3/Megatron GPT and Whisper: LayerNorm with bias, biased
            // linears, learned positions.
            ArchRules {
                layer_norm: true,
                qkv_bias: true,
                o_bias: true,
                mlp_bias: true,
                learned_positions: self.max_position_embeddings,
                ..base
            }
        } else {
            base
        }
    }

    /// Whether this is a mixture-of-experts model.
    pub fn is_moe(&self) -> bool {
        self.moe.is_some()
    }

    /// Number of decoder layers whose FFN is a MoE block.
    pub fn moe_layers(&self) -> u64 {
        match &self.moe {
            Some(m) => self.num_layers.saturating_sub(m.first_dense_layers),
            None => 0,
        }
    }

    /// Parameter counts by component.
    pub fn params(&self) -> ParamBreakdown {
        count_params(self)
    }

    /// KV-cache elements stored per token per layer (K and V together).
    ///
    /// Standard/GQA attention: 2 · kv_heads · head_dim. MLA caches the
    /// compressed latent plus the decoupled RoPE key: kv_lora_rank + rope dim
    /// (DeepSeek-V2 paper, section 2.1.2).
    pub fn kv_elements_per_token_per_layer(&self) -> u64 {
        match &self.mla {
            Some(m) => m.kv_lora_rank + m.qk_rope_head_dim,
            None => 2 * self.num_kv_heads * self.head_dim,
        }
    }
}

/// Parameter counts of a model by component.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct ParamBreakdown {
    /// Token embedding table.
    pub embedding: u64,
    /// Output projection (0 when tied to the embedding).
    pub lm_head: u64,
    /// Learned position tables.
    pub positions: u64,
    /// Attention weights and biases, all decoder layers.
    pub attention: u64,
    /// Dense FFN weights and biases, all layers that have one.
    pub dense_mlp: u64,
    /// Routed expert weights, all layers.
    pub routed_experts: u64,
    /// Routed expert weights a single token uses (top-k), all layers.
    pub routed_experts_active: u64,
    /// Shared expert weights, all layers.
    pub shared_experts: u64,
    /// Router weights (and biases).
    pub router: u64,
    /// Norm weights and biases, sinks.
    pub norms: u64,
    /// Encoder stack (encoder-decoder models), incl. its conv stem and positions.
    pub encoder: u64,
}

impl ParamBreakdown {
    /// Every stored parameter.
    pub fn total(&self) -> u64 {
        self.embedding
            + self.lm_head
            + self.positions
            + self.attention
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.router
            + self.norms
            + self.encoder
    }

    /// Parameters one token touches in a forward pass (top-k experts only).
    pub fn active(&self) -> u64 {
        self.total() - self.routed_experts + self.routed_experts_active
    }

    /// Parameters in matrix multiplies per generated token (the `N` of 2·N
    /// FLOPs per token): active weights less the embedding lookup and
    /// position tables; the LM head counts (tied or not).
    pub fn active_matmul(&self, vocab_times_hidden: u64) -> u64 {
        self.attention
            + self.dense_mlp
            + self.routed_experts_active
            + self.shared_experts
            + self.router
            + vocab_times_hidden
    }

    /// Parameters of the decoder layers (everything but embeddings, head,
    /// positions, final norm and the encoder).
    pub fn layers(&self) -> u64 {
        self.attention
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.router
            + self.norms
    }
}

/// Parameter counts by component in `u128`: products of in-range fields
/// (see [`crate::limits`]) cannot overflow it, so [`check_model`] can compare
/// the exact total with [`limits::MAX_MODEL_PARAMS`] before anything narrows it.
#[derive(Debug, Clone, Copy, Default)]
struct WideParams {
    embedding: u128,
    lm_head: u128,
    positions: u128,
    attention: u128,
    dense_mlp: u128,
    routed_experts: u128,
    routed_experts_active: u128,
    shared_experts: u128,
    router: u128,
    norms: u128,
    encoder: u128,
}

impl WideParams {
    fn total(&self) -> u128 {
        self.embedding
            + self.lm_head
            + self.positions
            + self.attention
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.router
            + self.norms
            + self.encoder
    }

    /// The counts as `u64`. Every model the catalog accepts passed
    /// [`check_model`], whose total is at most 10^14, so no field is cut; a
    /// hand-built unchecked shape beyond `u64` reads as `u64::MAX`.
    fn narrow(&self) -> ParamBreakdown {
        let n = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
        ParamBreakdown {
            embedding: n(self.embedding),
            lm_head: n(self.lm_head),
            positions: n(self.positions),
            attention: n(self.attention),
            dense_mlp: n(self.dense_mlp),
            routed_experts: n(self.routed_experts),
            routed_experts_active: n(self.routed_experts_active),
            shared_experts: n(self.shared_experts),
            router: n(self.router),
            norms: n(self.norms),
            encoder: n(self.encoder),
        }
    }
}

/// Counts parameters from the shape fields and the family rules.
fn count_params(m: &ModelArch) -> ParamBreakdown {
    count_params_wide(m).narrow()
}

/// [`count_params`] in `u128`.
fn count_params_wide(m: &ModelArch) -> WideParams {
    let r = m.rules();
    let w = u128::from;
    let h = w(m.hidden_size);
    let layers = w(m.num_layers);
    let norm_size = if r.layer_norm { 2 * h } else { h };
    let attn_per_layer = attention_params_per_layer(m, &r);
    let vocab = w(m.vocab_size);
    let mut out = WideParams {
        embedding: vocab * h,
        lm_head: if m.tie_word_embeddings { 0 } else { vocab * h },
        positions: w(r.learned_positions) * h,
        attention: attn_per_layer * layers,
        ..WideParams::default()
    };
    let dense_layers = layers - w(m.moe_layers());
    out.dense_mlp = ffn_params(m, &r, w(m.intermediate_size)) * dense_layers;
    add_moe_params(&mut out, m, &r);
    // Norms: per layer, plus the final norm; MLA adds its two latent norms
    // (counted in attention above).
    let norms_per_layer = w(if r.parallel_block {
        2
    } else {
        r.norms_per_layer
    });
    let whisper = m.architecture.starts_with("Whisper");
    let cross_attention_norm = if whisper { norm_size } else { 0 };
    out.norms = (norms_per_layer * norm_size + cross_attention_norm) * layers + norm_size;
    if whisper {
        // Decoder cross-attention (same shape as self-attention) lives in the layers.
        out.attention += attn_per_layer * layers;
        out.encoder = encoder_params(m, &r, attn_per_layer, norm_size);
    }
    out
}

/// Attention parameters of one layer: latent (MLA) or q, k, v, o
/// projections with the family's biases, norms and sinks.
fn attention_params_per_layer(m: &ModelArch, r: &ArchRules) -> u128 {
    let w = u128::from;
    let h = w(m.hidden_size);
    let heads = w(m.num_attention_heads);
    let head_dim = w(m.head_dim);
    let q_width = heads * head_dim;
    let kv_width = w(m.num_kv_heads) * head_dim;
    let per_layer = match &m.mla {
        Some(a) => {
            // MLA (DeepSeek-V3): q_a (h→q_lora) + q_a_norm + q_b (q_lora→heads·(nope+rope));
            // kv_a (h→kv_lora+rope) + kv_a_norm + kv_b (kv_lora→heads·(nope+v)); o (heads·v→h).
            let (q_lora, kv_lora) = (w(a.q_lora_rank), w(a.kv_lora_rank));
            let (rope, nope, v) = (
                w(a.qk_rope_head_dim),
                w(a.qk_nope_head_dim),
                w(a.v_head_dim),
            );
            let qk = nope + rope;
            let q = if q_lora > 0 {
                h * q_lora + q_lora + q_lora * heads * qk
            } else {
                h * heads * qk
            };
            let kv = h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v);
            let o = heads * v * h;
            q + kv + o
        }
        None => {
            // q, k, v, o projections: h·q + 2·h·kv + q·h.
            let mut p = h * q_width + 2 * h * kv_width + q_width * h;
            if r.qkv_bias {
                p += q_width + 2 * kv_width;
            }
            if r.o_bias {
                p += h;
            }
            if r.qk_norm {
                p += 2 * head_dim;
            }
            if r.attention_sinks {
                p += heads;
            }
            p
        }
    };
    // Whisper's k_proj has no bias.
    if m.architecture.starts_with("Whisper") {
        per_layer - kv_width
    } else {
        per_layer
    }
}

/// One FFN of width `width`: gated = 3·h·w, plain = 2·h·w, plus biases.
fn ffn_params(m: &ModelArch, r: &ArchRules, width: u128) -> u128 {
    let h = u128::from(m.hidden_size);
    let matrices = u128::from(m.mlp_type.matrices());
    let mut p = matrices * h * width;
    if r.mlp_bias {
        p += (matrices - 1) * width + h;
    }
    p
}

/// The routed and shared experts and the router of a mixture of experts.
fn add_moe_params(out: &mut WideParams, m: &ModelArch, r: &ArchRules) {
    let Some(moe) = &m.moe else {
        return;
    };
    let w = u128::from;
    let moe_layers = w(m.moe_layers());
    let experts = w(moe.num_experts);
    let expert = ffn_params(m, r, w(moe.expert_intermediate_size));
    out.routed_experts = expert * experts * moe_layers;
    out.routed_experts_active = expert * w(moe.experts_per_token) * moe_layers;
    out.shared_experts = expert * w(moe.num_shared_experts) * moe_layers;
    let router_bias = if r.router_bias { experts } else { 0 };
    out.router = (w(m.hidden_size) * experts + router_bias) * moe_layers;
}

/// Whisper's audio encoder: conv1 (mel→h, k=3) and conv2 (h→h, k=3) with
/// biases; sinusoidal positions stored as a table; layers with
/// self-attention and FFN, 2 LayerNorms each; a final LayerNorm.
fn encoder_params(m: &ModelArch, r: &ArchRules, attn_per_layer: u128, norm_size: u128) -> u128 {
    let Some(enc) = &m.encoder else {
        return 0;
    };
    let w = u128::from;
    let h = w(m.hidden_size);
    let conv = w(enc.num_mel_bins) * h * 3 + h + h * h * 3 + h;
    let enc_layer = attn_per_layer + ffn_params(m, r, w(m.intermediate_size)) + 2 * norm_size;
    conv + w(enc.positions) * h + enc_layer * w(enc.layers) + norm_size
}

/// Parses the parametric GPT id `gpt-h<hidden>-l<layers>-a<heads>[-v<vocab>][-s<seq>]`
/// (standard MHA, FFN 4·hidden, GELU, learned positions, tied embeddings, as
/// Megatron-LM's GPT). Defaults: vocab 51200 (GPT-2 BPE padded as Megatron
/// does), sequence 2048.
pub fn parse_parametric_gpt(id: &str) -> Option<std::result::Result<ModelArch, String>> {
    let lower = id.trim().to_ascii_lowercase();
    let rest = lower.strip_prefix("gpt-h")?;
    Some(parametric_gpt(id, &lower, rest))
}

/// The sizes a parametric GPT id names.
struct GptSizes {
    hidden: u64,
    layers: u64,
    heads: u64,
    vocab: u64,
    seq: u64,
}

/// [`parse_parametric_gpt`] of an id that starts with `gpt-h`: `rest` is
/// what follows it in `lower`, the lowercased id.
fn parametric_gpt(id: &str, lower: &str, rest: &str) -> std::result::Result<ModelArch, String> {
    let GptSizes {
        hidden,
        layers,
        heads,
        vocab,
        seq,
    } = gpt_sizes(id, rest)?;
    if hidden % heads != 0 {
        return Err(format!(
            "parametric model id `{id}`: hidden {hidden} is not divisible by heads {heads}"
        ));
    }
    // The FFN is 4 × hidden, so hidden may be at most a quarter of the widest width.
    let Some(intermediate_size) = hidden
        .checked_mul(4)
        .filter(|w| limits::MODEL_WIDTH.contains(*w))
    else {
        return Err(format!(
            "parametric model id `{id}`: h (hidden) = {hidden}: expected a whole number from 1 to {} (the FFN is 4 × hidden)",
            limits::MODEL_WIDTH.max / 4
        ));
    };
    let m = ModelArch {
        id: lower.to_string(),
        hf_repo: None,
        aliases: vec![],
        architecture: "GPT (Megatron-LM)".to_string(),
        num_layers: layers,
        hidden_size: hidden,
        num_attention_heads: heads,
        num_kv_heads: heads,
        head_dim: hidden / heads,
        intermediate_size,
        vocab_size: vocab,
        tie_word_embeddings: true,
        max_position_embeddings: seq,
        mlp_type: MlpType::Gelu,
        moe: None,
        mla: None,
        sliding_window: None,
        encoder: None,
        official_params_b: None,
        exact_params: None,
        source: "parametric GPT id (Megatron-LM GPT: MHA, FFN 4h, GELU, learned positions, tied embeddings)".to_string(),
    };
    if let Err((field, value, expected)) = check_model(&m) {
        let part = match field.as_str() {
            "hidden_size" => "h (hidden)",
            "num_layers" => "l (layers)",
            "num_attention_heads" | "num_kv_heads" => "a (heads)",
            "vocab_size" => "v (vocab)",
            "max_position_embeddings" | "learned_positions" => "s (sequence)",
            _ => "shape",
        };
        return Err(format!(
            "parametric model id `{id}`: {part} = {value}: expected {expected}"
        ));
    }
    Ok(m)
}

/// The parts of `h<hidden>-l<layers>-a<heads>[-v<vocab>][-s<seq>]` (`rest`
/// after `gpt-h`): each a letter and a number above zero; vocab 51200 and
/// sequence 2048 by default.
fn gpt_sizes(id: &str, rest: &str) -> std::result::Result<GptSizes, String> {
    let (mut hidden, mut layers, mut heads) = (None, None, None);
    let (mut vocab, mut seq) = (51200u64, 2048u64);
    for (i, part) in std::iter::once(format!("h{rest}"))
        .flat_map(|s| s.split('-').map(str::to_string).collect::<Vec<_>>())
        .enumerate()
    {
        // The key is the first character, which may be any character (the id
        // is user text): split after it, never inside it.
        let key_len = part.chars().next().map_or(0, char::len_utf8);
        let (key, value) = part.split_at(key_len);
        let Ok(v) = value.parse::<u64>() else {
            return Err(format!(
                "parametric model id `{id}`: part {} `{part}` is not a letter followed by a number",
                i + 1
            ));
        };
        if v == 0 {
            return Err(format!("parametric model id `{id}`: `{part}` must be > 0"));
        }
        match key {
            "h" => hidden = Some(v),
            "l" => layers = Some(v),
            "a" => heads = Some(v),
            "v" => vocab = v,
            "s" => seq = v,
            _ => {
                return Err(format!(
                    "parametric model id `{id}`: unknown part `{part}`; expected gpt-h<hidden>-l<layers>-a<heads>[-v<vocab>][-s<seq>]"
                ))
            }
        }
    }
    let (Some(hidden), Some(layers), Some(heads)) = (hidden, layers, heads) else {
        return Err(format!(
            "parametric model id `{id}`: expected gpt-h<hidden>-l<layers>-a<heads>[-v<vocab>][-s<seq>]"
        ));
    };
    Ok(GptSizes {
        hidden,
        layers,
        heads,
        vocab,
        seq,
    })
}

/// Checks a model's shape: every field inside its range of [`crate::limits`],
/// the heads and experts consistent, and at most [`limits::MAX_MODEL_PARAMS`]
/// parameters in all. On failure returns the field (as `models.csv` names
/// it), the value and what is expected, in words.
pub fn check_model(m: &ModelArch) -> std::result::Result<(), (String, String, String)> {
    check_ranges(m)?;
    check_heads_and_experts(m)?;
    check_total_params(m)
}

/// What a failed check returns: the field, the value and what is expected.
type ShapeError = (String, String, String);

/// A failed check of `field`.
fn shape_error(
    field: &str,
    value: String,
    expected: String,
) -> std::result::Result<(), ShapeError> {
    Err((field.to_string(), value, expected))
}

/// Every field (and the optional parts' fields) inside its range of
/// [`crate::limits`].
fn check_ranges(m: &ModelArch) -> std::result::Result<(), ShapeError> {
    let mut ranges: Vec<(&str, u64, Count)> = vec![
        ("num_layers", m.num_layers, limits::MODEL_LAYERS),
        ("hidden_size", m.hidden_size, limits::MODEL_WIDTH),
        (
            "num_attention_heads",
            m.num_attention_heads,
            limits::MODEL_HEADS,
        ),
        ("num_kv_heads", m.num_kv_heads, limits::MODEL_HEADS),
        ("head_dim", m.head_dim, limits::MODEL_WIDTH),
        (
            "intermediate_size",
            m.intermediate_size,
            limits::MODEL_WIDTH,
        ),
        ("vocab_size", m.vocab_size, limits::MODEL_VOCAB),
        (
            "max_position_embeddings",
            m.max_position_embeddings,
            limits::MODEL_CONTEXT,
        ),
    ];
    if let Some(w) = m.sliding_window {
        ranges.push(("sliding_window", w, limits::MODEL_CONTEXT));
    }
    if let Some(moe) = &m.moe {
        ranges.extend([
            ("num_experts", moe.num_experts, limits::MODEL_EXPERTS),
            (
                "experts_per_token",
                moe.experts_per_token,
                limits::MODEL_EXPERTS,
            ),
            (
                "num_shared_experts",
                moe.num_shared_experts,
                limits::MODEL_SMALL_COUNT,
            ),
            (
                "moe_intermediate_size",
                moe.expert_intermediate_size,
                limits::MODEL_WIDTH,
            ),
            (
                "first_dense_layers",
                moe.first_dense_layers,
                limits::MODEL_SMALL_COUNT,
            ),
        ]);
    }
    if let Some(a) = &m.mla {
        let rank_or_zero = Count::new(0, limits::MODEL_WIDTH.max);
        ranges.extend([
            ("q_lora_rank", a.q_lora_rank, rank_or_zero),
            ("kv_lora_rank", a.kv_lora_rank, limits::MODEL_WIDTH),
            ("qk_rope_head_dim", a.qk_rope_head_dim, limits::MODEL_WIDTH),
            ("qk_nope_head_dim", a.qk_nope_head_dim, limits::MODEL_WIDTH),
            ("v_head_dim", a.v_head_dim, limits::MODEL_WIDTH),
        ]);
    }
    if let Some(e) = &m.encoder {
        ranges.extend([
            ("encoder_layers", e.layers, limits::MODEL_LAYERS),
            (
                "encoder_positions",
                e.positions,
                limits::MODEL_ENCODER_POSITIONS,
            ),
            ("num_mel_bins", e.num_mel_bins, limits::MODEL_WIDTH),
        ]);
    }
    for (field, v, range) in ranges {
        if !range.contains(v) {
            return shape_error(field, v.to_string(), range.describe());
        }
    }
    Ok(())
}

/// The heads divide evenly into the KV heads (without latent attention)
/// and the experts per token and dense layers fit their totals.
fn check_heads_and_experts(m: &ModelArch) -> std::result::Result<(), ShapeError> {
    if m.mla.is_none() && !m.num_attention_heads.is_multiple_of(m.num_kv_heads) {
        return shape_error(
            "num_kv_heads",
            m.num_kv_heads.to_string(),
            format!(
                "a divisor of num_attention_heads ({})",
                m.num_attention_heads
            ),
        );
    }
    if let Some(moe) = &m.moe {
        if moe.experts_per_token > moe.num_experts {
            return shape_error(
                "experts_per_token",
                moe.experts_per_token.to_string(),
                format!("at most num_experts ({})", moe.num_experts),
            );
        }
        if moe.first_dense_layers > m.num_layers {
            return shape_error(
                "first_dense_layers",
                moe.first_dense_layers.to_string(),
                format!("at most num_layers ({})", m.num_layers),
            );
        }
    }
    Ok(())
}

/// At most [`limits::MAX_MODEL_PARAMS`] parameters in all.
fn check_total_params(m: &ModelArch) -> std::result::Result<(), ShapeError> {
    let total = count_params_wide(m).total();
    // u128 → f64 is exact enough for a bound of 10^14.
    if total as f64 > limits::MAX_MODEL_PARAMS {
        return shape_error(
            "shape",
            format!("{:.3e} parameters", total as f64),
            format!(
                "at most {:e} parameters (the fields multiply to an absurd model)",
                limits::MAX_MODEL_PARAMS
            ),
        );
    }
    Ok(())
}

pub(crate) fn parse_models(file: &str, text: &str) -> Result<Vec<ModelArch>> {
    let table = Table::parse(file, text)?;
    table.require(&[
        "id",
        "architecture",
        "num_layers",
        "hidden_size",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
        "source",
    ])?;
    // Every name a model is looked up by (id, alias, HF repo) names one model
    // of the file: a second row reusing a name would be shadowed on lookup.
    let mut dups = DuplicateCheck::new();
    let mut out = Vec::new();
    for row in table.rows() {
        let m = model_of_row(&row, &mut dups)?;
        if let Err((field, value, expected)) = check_model(&m) {
            return Err(row.error(CatalogError::invalid(&field, value, expected)));
        }
        check_lookup_names(&row, &mut dups, &m)?;
        out.push(m);
    }
    Ok(out)
}

/// One row of `models.csv` as a model (its id checked for duplicates;
/// the architecture itself is checked by [`check_model`]).
fn model_of_row(row: &Row<'_>, dups: &mut DuplicateCheck) -> Result<ModelArch> {
    let id = row.string("id")?.to_ascii_lowercase();
    dups.check_name(row, "id", &id)?;
    // The optional parts first, in the order their errors are reported.
    let mlp_type = mlp_type_of(row)?;
    let moe = moe_of(row)?;
    let mla = mla_of(row)?;
    let encoder = encoder_of(row)?;
    let width = |column: &str| row.count(column, limits::MODEL_WIDTH);
    Ok(ModelArch {
        hf_repo: row.opt_string("hf_repo"),
        aliases: row
            .text("aliases")
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        architecture: row.string("architecture")?,
        num_layers: row.count("num_layers", limits::MODEL_LAYERS)?,
        hidden_size: width("hidden_size")?,
        num_attention_heads: row.count("num_attention_heads", limits::MODEL_HEADS)?,
        num_kv_heads: row.count("num_kv_heads", limits::MODEL_HEADS)?,
        head_dim: width("head_dim")?,
        intermediate_size: width("intermediate_size")?,
        vocab_size: row.count("vocab_size", limits::MODEL_VOCAB)?,
        tie_word_embeddings: row.bool_or("tie_word_embeddings", false)?,
        max_position_embeddings: row
            .opt_count("max_position_embeddings", limits::MODEL_CONTEXT)?
            .unwrap_or(4096),
        mlp_type,
        moe,
        mla,
        sliding_window: row.opt_count("sliding_window", limits::MODEL_CONTEXT)?,
        encoder,
        official_params_b: row.opt_span("official_params", limits::MODEL_OFFICIAL_PARAMS_B)?,
        exact_params: row.opt_count(
            "exact_params",
            Count::new(1, limits::MAX_MODEL_PARAMS as u64),
        )?,
        source: row.string("source")?,
        id,
    })
}

/// The row's `mlp_type` (empty: SwiGLU).
fn mlp_type_of(row: &Row<'_>) -> Result<MlpType> {
    match row.text("mlp_type").to_ascii_lowercase().as_str() {
        "" | "swiglu" | "silu" => Ok(MlpType::Swiglu),
        "geglu" => Ok(MlpType::Geglu),
        "gelu" | "relu" => Ok(MlpType::Gelu),
        other => Err(row.error(CatalogError::invalid(
            "mlp_type",
            other,
            "swiglu, geglu or gelu",
        ))),
    }
}

/// The row's mixture of experts, when `num_experts` is above zero (the
/// experts' width defaults to `intermediate_size`).
fn moe_of(row: &Row<'_>) -> Result<Option<MoeSpec>> {
    let small = |column: &str| row.opt_count(column, limits::MODEL_SMALL_COUNT);
    match row.opt_count("num_experts", Count::new(0, limits::MODEL_EXPERTS.max))? {
        Some(n) if n > 0 => Ok(Some(MoeSpec {
            num_experts: n,
            experts_per_token: row.count("experts_per_token", limits::MODEL_EXPERTS)?,
            num_shared_experts: small("num_shared_experts")?.unwrap_or(0),
            expert_intermediate_size: match row
                .opt_count("moe_intermediate_size", limits::MODEL_WIDTH)?
            {
                Some(w) => w,
                None => row.count("intermediate_size", limits::MODEL_WIDTH)?,
            },
            first_dense_layers: small("first_dense_layers")?.unwrap_or(0),
        })),
        _ => Ok(None),
    }
}

/// The row's multi-head latent attention, when `kv_lora_rank` is above zero.
fn mla_of(row: &Row<'_>) -> Result<Option<MlaSpec>> {
    let width = |column: &str| row.count(column, limits::MODEL_WIDTH);
    let rank_or_zero = Count::new(0, limits::MODEL_WIDTH.max);
    match row.opt_count("kv_lora_rank", rank_or_zero)? {
        Some(k) if k > 0 => Ok(Some(MlaSpec {
            q_lora_rank: row.opt_count("q_lora_rank", rank_or_zero)?.unwrap_or(0),
            kv_lora_rank: k,
            qk_rope_head_dim: width("qk_rope_head_dim")?,
            qk_nope_head_dim: width("qk_nope_head_dim")?,
            v_head_dim: width("v_head_dim")?,
        })),
        _ => Ok(None),
    }
}

/// The row's audio encoder, when `encoder_layers` is above zero.
fn encoder_of(row: &Row<'_>) -> Result<Option<EncoderSpec>> {
    match row.opt_count("encoder_layers", Count::new(0, limits::MODEL_LAYERS.max))? {
        Some(l) if l > 0 => Ok(Some(EncoderSpec {
            layers: l,
            positions: row.count("encoder_positions", limits::MODEL_ENCODER_POSITIONS)?,
            num_mel_bins: row.count("num_mel_bins", limits::MODEL_WIDTH)?,
        })),
        _ => Ok(None),
    }
}

/// The model's aliases and HF repo must name no other row's model (one that
/// repeats the row's own id or another alias is harmless).
fn check_lookup_names(row: &Row<'_>, dups: &mut DuplicateCheck, m: &ModelArch) -> Result<()> {
    let mut own = std::collections::HashSet::from([normalize(&m.id)]);
    for alias in &m.aliases {
        if own.insert(normalize(alias)) {
            dups.check_name(row, "aliases", alias)?;
        }
    }
    if let Some(repo) = &m.hf_repo {
        if own.insert(normalize(repo)) {
            dups.check_name(row, "hf_repo", repo)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama2_7b() -> ModelArch {
        ModelArch {
            id: "t".into(),
            hf_repo: None,
            aliases: vec![],
            architecture: "LlamaForCausalLM".into(),
            num_layers: 32,
            hidden_size: 4096,
            num_attention_heads: 32,
            num_kv_heads: 32,
            head_dim: 128,
            intermediate_size: 11008,
            vocab_size: 32000,
            tie_word_embeddings: false,
            max_position_embeddings: 4096,
            mlp_type: MlpType::Swiglu,
            moe: None,
            mla: None,
            sliding_window: None,
            encoder: None,
            official_params_b: None,
            exact_params: None,
            source: String::new(),
        }
    }

    #[test]
    fn llama2_7b_count_by_hand() {
        // per layer: 4·4096² (attn) + 3·4096·11008 (SwiGLU) + 2·4096 (norms) = 202,383,360
        // 32 layers = 6,476,267,520; + embed and head 2·32000·4096 = 262,144,000; + final norm 4096
        assert_eq!(llama2_7b().params().total(), 6_738_415_616);
    }

    #[test]
    fn gqa_kv_elements() {
        let mut m = llama2_7b();
        m.num_kv_heads = 8;
        // 2 (K and V) · 8 heads · 128
        assert_eq!(m.kv_elements_per_token_per_layer(), 2048);
    }

    #[test]
    fn parametric_gpt_shape() {
        let m = parse_parametric_gpt("gpt-h2048-l24-a16-v131072")
            .unwrap()
            .unwrap();
        assert_eq!(m.hidden_size, 2048);
        assert_eq!(m.num_layers, 24);
        assert_eq!(m.head_dim, 128);
        assert_eq!(m.vocab_size, 131072);
        assert_eq!(m.intermediate_size, 8192);
        // per layer: 4h² + 4h (attn) + 8h² + 5h (MLP) + 4h (2 LayerNorms) = 12h² + 13h
        let h = 2048u64;
        let expect = 24 * (12 * h * h + 13 * h) + 131072 * h + 2048 * h + 2 * h;
        assert_eq!(m.params().total(), expect);
    }

    #[test]
    fn parametric_gpt_errors() {
        assert!(parse_parametric_gpt("llama").is_none());
        assert!(parse_parametric_gpt("gpt-h100-l2-a3").unwrap().is_err());
        assert!(parse_parametric_gpt("gpt-h128-l2").unwrap().is_err());
        assert!(parse_parametric_gpt("gpt-h128-lx-a2").unwrap().is_err());
        let e = parse_parametric_gpt("gpt-h18446744073709551615-l2-a1")
            .unwrap()
            .unwrap_err();
        assert!(e.contains("hidden") && e.contains("262144"), "{e}");
    }

    /// Every field is in range on its own, but the product is 5·10^16
    /// parameters: rejected instead of wrapping to a small count.
    #[test]
    fn absurd_products_are_rejected_not_wrapped() {
        let mut m = llama2_7b();
        m.hidden_size = limits::MODEL_WIDTH.max;
        m.intermediate_size = limits::MODEL_WIDTH.max;
        m.num_layers = limits::MODEL_LAYERS.max;
        let (field, value, _) = check_model(&m).unwrap_err();
        assert_eq!(field, "shape");
        assert!(value.ends_with("e16 parameters"), "{value}");
        let mut m = llama2_7b();
        m.vocab_size = u64::MAX;
        assert_eq!(check_model(&m).unwrap_err().0, "vocab_size");
        let mut m = llama2_7b();
        m.head_dim = 1 << 62;
        assert_eq!(check_model(&m).unwrap_err().0, "head_dim");
        assert!(check_model(&llama2_7b()).is_ok());
    }

    #[test]
    fn megatron_a100_sizes_match_paper() {
        // Narayanan et al. 2021 Table: 76.1B, 145.6B, 310.1B, 1008.0B parameters.
        for (id, billions) in [
            ("gpt-h10240-l60-a80-v51200", 76.1),
            ("gpt-h12288-l80-a96-v51200", 145.6),
            ("gpt-h16384-l96-a128-v51200", 310.1),
            ("gpt-h25600-l128-a160-v51200", 1008.0),
        ] {
            let m = parse_parametric_gpt(id).unwrap().unwrap();
            let got = m.params().total() as f64 / 1e9;
            assert!(
                (got / billions - 1.0).abs() < 0.005,
                "{id}: {got} vs {billions}"
            );
        }
    }

    /// Found by fuzzing (`parametric_model`): a part starting with a
    /// multi-byte character was split inside it (a panic); it is a clean error.
    #[test]
    fn parametric_ids_with_non_ascii_parts_are_errors() {
        for id in [
            "gpt-h4096-é5",
            "gpt-h4096-l32-a32-\u{1F600}",
            "gpt-hé",
            "gpt-h-",
            "gpt-h4096--l2",
        ] {
            match parse_parametric_gpt(id) {
                Some(Err(msg)) => assert!(msg.contains("parametric model id"), "{msg}"),
                other => panic!("{id}: {other:?}"),
            }
        }
        assert!(matches!(
            parse_parametric_gpt("gpt-h4096-l32-a32"),
            Some(Ok(_))
        ));
    }

    /// Found by fuzzing (`catalog_models`): two rows of one file sharing a
    /// name (id, alias or HF repo, compared as lookups compare them) were
    /// accepted, and lookups silently returned the first.
    #[test]
    fn a_name_shared_by_two_rows_of_one_file_is_rejected() {
        let header = "id,architecture,num_layers,hidden_size,num_attention_heads,num_kv_heads,head_dim,intermediate_size,vocab_size,source,aliases,hf_repo\n";
        let row = |id: &str, aliases: &str, repo: &str| {
            format!("{id},LlamaForCausalLM,2,256,4,4,64,512,1000,test,{aliases},{repo}\n")
        };
        for (second, field) in [
            (row("tiny-a", "", ""), "id"),
            (row("Tiny_A", "", ""), "id"),
            (row("tiny-b", "tiny-a", ""), "aliases"),
            (row("tiny-b", "", "org/tiny"), "hf_repo"),
            (row("tiny-alias", "", ""), "id"),
        ] {
            let text = format!(
                "{header}{}{second}",
                row("tiny-a", "tiny-alias;tiny-a", "org/tiny")
            );
            let e = parse_models("m.csv", &text).unwrap_err();
            assert_eq!(e.line, Some(3), "{second}: {e}");
            assert_eq!(e.field.as_deref(), Some(field), "{second}: {e}");
            assert!(e.to_string().contains("first defined on line 2"), "{e}");
        }
        // An alias repeating the row's own id is harmless.
        let text = format!(
            "{header}{}{}",
            row("tiny-a", "tiny-a;TINY-A", ""),
            row("tiny-b", "", "")
        );
        assert_eq!(parse_models("m.csv", &text).unwrap().len(), 2);
    }
}
