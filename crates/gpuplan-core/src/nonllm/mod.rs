//! Image generation (diffusion), speech-to-text (Whisper) and encoder
//! (embedding, reranking, QA) services: work per request counted from the
//! published shapes (`work.rs`), timed through the same roofline, tensor
//! rates and calibrated efficiencies as the LLM engines (`cost.rs`).

mod cost;
mod estimate;
mod fit;
mod plan;
mod service;
mod sizing;
mod validate;
mod work;
mod workload;

pub use cost::{
    bundled_factors, eight_bit_share, family_efficiency, Rates, BUNDLED_NONLLM_CALIBRATION,
    EIGHT_BIT_FACTOR,
};
pub use estimate::{
    estimate_nonllm, BatchEstimate, NonLlmDoesNotFit, NonLlmEstimate, NonLlmEstimateOutcome,
};
pub use fit::{fit_nonllm_factors, nonllm_loss};
pub use plan::{launch_command, plan_nonllm, NonLlmPlan, NonLlmPlanReport, MAX_PLAN_GPUS};
pub use service::{BatchTime, NonLlmMemory, Request, Setup, MAX_BATCH, MEMORY_USABLE_SHARE};
pub use sizing::{default_unit, size, Sizing, SizingRow};
pub use validate::predict_nonllm;
pub use work::{forward, params, whisper_cross_kv, whisper_decode_step, Work};
pub use workload::{
    nonllm_model_of, parse_nonllm_workload, NonLlmWorkload, RawNonLlmWorkload, RawRequest,
    WHISPER_TOKENS_PER_AUDIO_S, WHISPER_WINDOW_S,
};

#[cfg(test)]
mod tests;
