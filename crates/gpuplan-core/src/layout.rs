//! How a model is split across GPUs, and how its weights fall on each GPU.

use crate::error::{CoreError, Result};
use crate::limits;
use gpuplan_catalog::{ModelArch, Precision};
use serde::Serialize;

/// Tensor × pipeline parallel layout of one model replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Layout {
    /// Tensor-parallel degree (GPUs sharing each layer).
    pub tp: u32,
    /// Pipeline-parallel degree (stages of consecutive layers).
    pub pp: u32,
}

impl Layout {
    /// A single-GPU layout.
    pub const SINGLE: Layout = Layout { tp: 1, pp: 1 };

    /// GPUs in one replica. A layout that passed [`Layout::check`] has at
    /// most 1024 × 1024 GPUs, far inside `u32`.
    pub fn gpus(self) -> u32 {
        self.tp * self.pp
    }

    /// Checks the layout against the model: TP must divide the attention
    /// heads (and the KV heads, or be a multiple of them), PP must not exceed
    /// the layers; both lie in [`limits::TP`] and [`limits::PP`].
    pub fn check(self, model: &ModelArch) -> Result<()> {
        for (field, v, range) in [("tp", self.tp, limits::TP), ("pp", self.pp, limits::PP)] {
            if !range.contains(u64::from(v)) {
                return Err(CoreError::invalid(field, v.to_string(), range.describe()));
            }
        }
        let tp = u64::from(self.tp);
        if !model.num_attention_heads.is_multiple_of(tp) {
            return Err(CoreError::invalid(
                "tp",
                self.tp.to_string(),
                format!(
                    "a divisor of the model's {} attention heads ({})",
                    model.num_attention_heads,
                    divisors(model.num_attention_heads)
                ),
            ));
        }
        if model.mla.is_none()
            && !model.num_kv_heads.is_multiple_of(tp)
            && tp % model.num_kv_heads != 0
        {
            return Err(CoreError::invalid(
                "tp",
                self.tp.to_string(),
                format!(
                    "a divisor or multiple of the model's {} KV heads",
                    model.num_kv_heads
                ),
            ));
        }
        if u64::from(self.pp) > model.num_layers {
            return Err(CoreError::invalid(
                "pp",
                self.pp.to_string(),
                format!("at most the model's {} layers", model.num_layers),
            ));
        }
        Ok(())
    }

    /// Decoder layers on the most loaded pipeline stage.
    pub fn layers_per_stage(self, model: &ModelArch) -> u64 {
        model.num_layers.div_ceil(u64::from(self.pp))
    }

    /// KV heads each GPU holds: sharded by TP, replicated when TP exceeds them.
    pub fn kv_heads_per_gpu(self, model: &ModelArch) -> u64 {
        model.num_kv_heads.div_ceil(u64::from(self.tp)).max(1)
    }
}

fn divisors(n: u64) -> String {
    (1..=n.min(64))
        .filter(|d| n.is_multiple_of(*d))
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Bytes of weights on the most loaded GPU of a replica.
///
/// Linear layers (attention, FFN, experts) are stored at `precision`;
/// embeddings, LM head, norms, routers and position tables stay at 16 bits
/// (32 for fp32), as vLLM and TensorRT-LLM keep them. Layers split evenly
/// over pipeline stages; the first stage also holds the embedding (and the
/// encoder), the last the LM head (a tied head is duplicated there when
/// PP > 1); everything is sharded over TP.
pub fn weight_bytes_per_gpu(model: &ModelArch, layout: Layout, precision: Precision) -> f64 {
    let p = model.params();
    let linear_bytes = precision.bytes_per_element();
    let other_bytes = if precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    // Sums and products in f64, so no count can wrap (checked models stay
    // below 10^14 parameters, exact in f64).
    let f = |v: u64| v as f64;
    let layer_linear = f(p.attention) + f(p.dense_mlp) + f(p.routed_experts) + f(p.shared_experts);
    let layer_other = f(p.router) + f(p.norms);
    let per_layer =
        (layer_linear * linear_bytes + layer_other * other_bytes) / model.num_layers as f64;
    let stage_layers = layout.layers_per_stage(model) as f64;
    let tp = f64::from(layout.tp);
    let embedding = (f(p.embedding) + f(p.positions) + f(p.encoder)) * other_bytes;
    let head = if model.tie_word_embeddings {
        if layout.pp > 1 {
            f(model.vocab_size) * f(model.hidden_size) * other_bytes
        } else {
            0.0
        }
    } else {
        p.lm_head as f64 * other_bytes
    };
    let worst_stage = if layout.pp == 1 {
        per_layer * stage_layers + embedding + head
    } else {
        per_layer * stage_layers + embedding.max(head)
    };
    worst_stage / tp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::model;

    #[test]
    fn llama70b_bf16_weights() {
        let m = model("llama-3.1-70b");
        // 70,553,706,496 params · 2 bytes / 2^30 = 131.42 GiB
        let gib = weight_bytes_per_gpu(&m, Layout::SINGLE, Precision::Bf16) / GIB;
        assert!((gib - 131.42).abs() < 0.01, "{gib}");
        let tp2 = weight_bytes_per_gpu(&m, Layout { tp: 2, pp: 1 }, Precision::Bf16) / GIB;
        assert!((tp2 - 65.71).abs() < 0.01, "{tp2}");
    }

    #[test]
    fn tp_must_divide_heads() {
        let m = model("llama-3.1-70b");
        assert!(Layout { tp: 3, pp: 1 }.check(&m).is_err());
        assert!(Layout { tp: 8, pp: 1 }.check(&m).is_ok());
        assert!(
            Layout { tp: 16, pp: 1 }.check(&m).is_ok(),
            "16 = 2 x 8 kv heads"
        );
        assert!(Layout { tp: 1, pp: 81 }.check(&m).is_err());
    }

    #[test]
    fn degrees_outside_their_range_are_rejected_by_name() {
        let m = model("llama-3.1-8b");
        for (layout, field) in [
            (Layout { tp: 0, pp: 1 }, "`tp` = 0"),
            (Layout { tp: 1, pp: 0 }, "`pp` = 0"),
            (Layout { tp: 65536, pp: 1 }, "`tp` = 65536"),
            (Layout { tp: 1, pp: 65536 }, "`pp` = 65536"),
        ] {
            let e = layout.check(&m).unwrap_err().to_string();
            assert!(e.contains(field) && e.contains("1024"), "{e}");
        }
    }

    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
}
