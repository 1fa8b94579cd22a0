//! Training and fine-tuning: the step-time model, the fabric it runs on, its
//! fitted factors, and spot/failure resilience. The memory side is
//! `training_memory`; the search over layouts and offerings is
//! [`crate::plan_training`].

pub mod fabric;
pub mod factors;
pub mod step;

pub use fabric::{Fabric, UNSTATED_NETWORK_GBITS};
pub use factors::{TrainingFactors, BUNDLED_TRAINING_CALIBRATION};
pub use step::{
    megatron_2021_flops_per_token, model_flops_per_token, step_time, AttentionKernel, StepTime,
    TrainingJob, TrainingLayout,
};
pub mod search;
pub use search::{best_layout, schedule_for, Hardware, LayoutChoice, NoLayout, SearchSpace};
pub mod mlperf;
pub mod nonllm;
pub mod validate;
pub use validate::{predict_training, predict_training_all, where_time_goes};
pub mod egress;
pub mod resilience;
pub mod workload;
pub use egress::{data_move, DataMove};
pub use resilience::{
    expected_wall_time_s, resilience, spot_break_even_rate, young_daly_interval_s, Resilience,
    ResilienceInput, GPU_FAILURES_PER_GPU_HOUR,
};
pub use workload::{Framework, RawTrainingWorkload, TrainingWorkload};
