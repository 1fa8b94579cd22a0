//! Image generation (diffusion), speech-to-text (Whisper) and encoder
//! (embedding, reranking, QA) services: work per request counted from the
//! published shapes ([`work`]), timed through the same roofline, tensor
//! rates and calibrated efficiencies as the LLM engines ([`cost`]).

mod cost;
mod fit;
mod service;
mod validate;
mod work;

pub use cost::{bundled_factors, family_efficiency, Rates, BUNDLED_NONLLM_CALIBRATION};
pub use fit::{fit_nonllm_factors, nonllm_loss};
pub use service::{BatchTime, NonLlmMemory, Request, Setup, MAX_BATCH, MEMORY_USABLE_SHARE};
pub use validate::predict_nonllm;
pub use work::{forward, params, whisper_cross_kv, whisper_decode_step, Work};

#[cfg(test)]
mod tests;
