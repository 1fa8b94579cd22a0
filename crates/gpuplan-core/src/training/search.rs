//! The fastest layout of a training job on a fixed number of GPUs: every
//! TP (inside a node) × PP × ZeRO stage × micro-batch × recomputation that
//! divides the global batch and fits in memory, timed by the step model.

use super::fabric::Fabric;
use super::factors::TrainingFactors;
use super::step::{step_time, StepTime, TrainingJob, TrainingLayout};
use crate::calibration::Calibration;
use crate::layout::Layout;
use crate::training_memory::{
    training_memory, FineTuneMethod, PipelineSchedule, Recompute, TrainingMemory,
    TrainingMemoryInput,
};
use gpuplan_catalog::GpuSpec;
use serde::Serialize;

/// The GPU and what connects it.
#[derive(Debug, Clone, Copy)]
pub struct Hardware<'a> {
    /// The GPU.
    pub gpu: &'a GpuSpec,
    /// Its node and network.
    pub fabric: &'a Fabric,
}

/// What the search may choose.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchSpace {
    /// Recomputation policies to try (`choose` = all three).
    pub recompute: Vec<Recompute>,
    /// ZeRO stages to try.
    pub zero: Vec<u8>,
    /// Largest micro-batch to try (sequences per GPU).
    pub max_micro_batch: u64,
    /// Compiled / fused loss (affects memory).
    pub fused_loss: bool,
}

impl Default for SearchSpace {
    fn default() -> Self {
        SearchSpace {
            recompute: vec![Recompute::None, Recompute::Selective, Recompute::Full],
            zero: vec![1, 3],
            max_micro_batch: 8,
            fused_loss: true,
        }
    }
}

/// A layout that fits, with its step time and memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutChoice {
    /// The split.
    pub layout: TrainingLayout,
    /// Its step time.
    pub step: StepTime,
    /// Peak memory of the most loaded GPU, GiB (allocator-reserved).
    pub peak_memory_gib: f64,
    /// GPU capacity, GiB.
    pub gpu_memory_gib: f64,
}

/// Why no layout was found for a GPU count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoLayout {
    /// Layouts tried.
    pub tried: usize,
    /// The smallest peak memory seen, GiB (None when no layout divided the batch).
    pub smallest_peak_gib: Option<f64>,
    /// GPU capacity, GiB.
    pub gpu_memory_gib: f64,
    /// In words.
    pub reason: String,
}

fn powers_of_two_dividing(n: u64, max: u64) -> impl Iterator<Item = u64> {
    (0..20)
        .map(|i| 1u64 << i)
        .take_while(move |v| *v <= max)
        .filter(move |v| n.is_multiple_of(*v))
}

/// The fastest layout of `job` on `gpus` GPUs (nodes of `fabric.gpus_per_node`)
/// at `global_batch` sequences per step.
pub fn best_layout(
    job: &TrainingJob<'_>,
    hw: Hardware<'_>,
    gpus: u64,
    global_batch: u64,
    space: &SearchSpace,
    cal: &Calibration,
    factors: &TrainingFactors,
) -> Result<LayoutChoice, NoLayout> {
    let mut search = LayoutSearch {
        best: None,
        tried: 0,
        smallest_peak: None,
        step_error: None,
        gpu_memory_gib: hw.gpu.memory_gib,
    };
    let node = u64::from(hw.fabric.gpus_per_node);
    for layout in candidate_layouts(job, gpus, node, global_batch, space) {
        search.consider(job, hw, layout, space, cal, factors);
    }
    search.finish(gpus, global_batch)
}

/// Every layout the search tries, in order: TP within a node and dividing
/// the heads, PP up to 64 stages, DP dividing the global batch, power-of-two
/// micro-batches (at least one per stage with PP), each ZeRO stage (at most
/// 1 with PP: frameworks keep whole stages gathered) and recompute policy.
fn candidate_layouts(
    job: &TrainingJob<'_>,
    gpus: u64,
    node: u64,
    global_batch: u64,
    space: &SearchSpace,
) -> Vec<TrainingLayout> {
    let m = job.model;
    let mut layouts = Vec::new();
    for tp in powers_of_two_dividing(gpus, node.min(gpus)) {
        if !m.num_attention_heads.is_multiple_of(tp) {
            continue;
        }
        for pp in powers_of_two_dividing(gpus / tp, m.num_layers.min(64)) {
            let dp = gpus / (tp * pp);
            if !global_batch.is_multiple_of(dp) {
                continue;
            }
            let per_rank = global_batch / dp;
            for mb in powers_of_two_dividing(per_rank, space.max_micro_batch) {
                let micro_batches = per_rank / mb;
                if pp > 1 && micro_batches < pp {
                    continue;
                }
                for &zero in &space.zero {
                    if pp > 1 && zero > 1 {
                        continue;
                    }
                    for &recompute in &space.recompute {
                        layouts.push(TrainingLayout {
                            tp: tp as u32,
                            pp: pp as u32,
                            dp: dp as u32,
                            zero,
                            micro_batch: mb,
                            micro_batches,
                            schedule: schedule_for(pp, micro_batches),
                            recompute,
                        });
                    }
                }
            }
        }
    }
    layouts
}

/// The layout search so far: the fastest layout that fits, and what to say
/// when none does.
struct LayoutSearch {
    best: Option<LayoutChoice>,
    tried: usize,
    smallest_peak: Option<f64>,
    step_error: Option<String>,
    gpu_memory_gib: f64,
}

impl LayoutSearch {
    /// Sizes `layout`'s memory and, when it fits, times its step; keeps it
    /// when it is faster than the best so far (the first of equals).
    fn consider(
        &mut self,
        job: &TrainingJob<'_>,
        hw: Hardware<'_>,
        layout: TrainingLayout,
        space: &SearchSpace,
        cal: &Calibration,
        factors: &TrainingFactors,
    ) {
        self.tried += 1;
        let Ok(mem) = memory(job, hw.gpu, &layout, space) else {
            return;
        };
        self.gpu_memory_gib = mem.gpu_memory_gib;
        self.smallest_peak = Some(
            self.smallest_peak
                .map_or(mem.reserved_peak_gib, |s| s.min(mem.reserved_peak_gib)),
        );
        if !mem.fits {
            return;
        }
        let step = match step_time(job, &layout, hw.gpu, hw.fabric, cal, factors) {
            Ok(step) => step,
            Err(e) => {
                self.step_error.get_or_insert_with(|| e.to_string());
                return;
            }
        };
        if self
            .best
            .as_ref()
            .is_none_or(|b| step.step_s < b.step.step_s)
        {
            self.best = Some(LayoutChoice {
                layout,
                step,
                peak_memory_gib: mem.reserved_peak_gib,
                gpu_memory_gib: mem.gpu_memory_gib,
            });
        }
    }

    /// The fastest layout, or why there is none.
    fn finish(self, gpus: u64, global_batch: u64) -> Result<LayoutChoice, NoLayout> {
        let gpu_memory_gib = self.gpu_memory_gib;
        self.best.ok_or_else(|| NoLayout {
            tried: self.tried,
            smallest_peak_gib: self.smallest_peak,
            gpu_memory_gib,
            reason: match (self.step_error, self.smallest_peak) {
                (Some(why), _) => format!("layouts fit in memory but cannot be timed: {why}"),
                (None, Some(peak)) => format!(
                    "needs at least {peak:.1} GiB per GPU in its smallest layout, {gpu_memory_gib:.1} GiB usable"
                ),
                (None, None) => format!(
                    "no TP × PP × DP split of {gpus} GPUs divides the global batch of {global_batch} sequences"
                ),
            },
        })
    }
}

/// Interleaved 1F1B (2 chunks per rank) where the micro-batches divide evenly
/// over the stages, as Megatron and torchtitan require; plain 1F1B otherwise.
pub fn schedule_for(pp: u64, micro_batches: u64) -> PipelineSchedule {
    if pp > 1 && micro_batches.is_multiple_of(pp) {
        PipelineSchedule::Interleaved(2)
    } else {
        PipelineSchedule::OneFOneB
    }
}

/// The memory model for a layout.
pub fn memory(
    job: &TrainingJob<'_>,
    gpu: &GpuSpec,
    layout: &TrainingLayout,
    space: &SearchSpace,
) -> crate::error::Result<TrainingMemory> {
    training_memory(&TrainingMemoryInput {
        model: job.model,
        gpu,
        layout: Layout {
            tp: layout.tp,
            pp: layout.pp,
        },
        dp: layout.dp,
        zero: if matches!(job.method, FineTuneMethod::Full) {
            layout.zero
        } else {
            layout.zero.min(3)
        },
        micro_batch: layout.micro_batch,
        seq_len: job.seq_len,
        micro_batches: layout.micro_batches,
        schedule: layout.schedule,
        recompute: layout.recompute,
        precision: job.precision,
        method: job.method,
        optimizer: job.optimizer,
        fused_loss: space.fused_loss,
        async_tp: job.async_tp,
    })
}
