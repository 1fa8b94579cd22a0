//! MLPerf Training's non-LLM benchmarks — BERT-Large pre-training, Stable
//! Diffusion v2 and FLUX.1-schnell — predicted from first principles with no
//! factor fitted on them (their time-to-train rows stay a held-out check):
//!
//! - work per sample counted layer by layer from the published shapes
//!   ([`crate::nonllm::forward`]); training runs the trained network forward
//!   and backward (3× its forward work: the backward computes input and weight
//!   gradients), frozen networks that run online forward only;
//! - GEMMs at the training GEMM efficiency fitted on the LLM throughput rows,
//!   scaled by the family's achieved share fitted on its inference rows
//!   (convolutions, GroupNorm, narrow heads: `data/nonllm_calibration.csv`);
//! - data-parallel gradient traffic over the reference fabric, hidden behind
//!   the compute as far as the LLM fit says it can be, and a sharded optimizer step;
//! - evaluation at the benchmark's interval, forward only.

use super::fabric::Fabric;
use super::factors::TrainingFactors;
use super::mlperf::Convergence;
use super::step::{dp_bandwidth, AttentionKernel, TrainingLayout};
use crate::calibration::Calibration;
use crate::engine::tensor_tflops;
use crate::nonllm::{family_efficiency, forward, Rates, Work};
use crate::training_memory::{PipelineSchedule, Recompute};
use crate::validate::Prediction;
use gpuplan_catalog::{
    BenchmarkRow, Catalog, ComponentKind, GpuSpec, NonLlmCatalog, NonLlmModel, Precision,
};

/// Gradient bytes per trained parameter in the data-parallel reduction: the
/// FP32 gradients of mixed-precision training (FP32 master weights under
/// autocast/AMP).
const GRAD_BYTES: f64 = 4.0;
/// Bytes per parameter of the 16-bit weights that sharded training gathers.
const WEIGHT_BYTES: f64 = 2.0;
/// Bytes the Adam/LAMB step reads and writes per trained parameter: FP32
/// master weight, gradient and two moments read (16) and written (12), the
/// 16-bit copy written (2).
const OPTIMIZER_BYTES: f64 = 30.0;

/// How one MLPerf Training non-LLM benchmark runs a sample.
#[derive(Debug, Clone, Copy)]
pub struct NonLlmBenchmark {
    /// Key as in `benchmark_datasets` (`training:bert`).
    pub key: &'static str,
    /// The catalog model (`data/models_nonllm.csv`).
    pub model: &'static str,
    /// The network that is trained.
    pub trained: ComponentKind,
    /// Frozen networks (component names) that run forward on every sample;
    /// the rest are precomputed offline (SD's VAE latents, FLUX's encoders).
    pub frozen_online: &'static [&'static str],
    /// Image side, pixels (diffusion).
    pub image_px: f64,
    /// Tokens per sample (encoders).
    pub seq: f64,
    /// Whether MLPerf's closed submissions train it in FP8 on GPUs with FP8
    /// tensor cores: NVIDIA's v5.1 FLUX configs load FP8 recipes
    /// (`conf/plugins/fp8/*.yaml`); its BERT configs run FP16 with loss
    /// scaling and no FP8 option (v4.0 `config_DGXH100_8x8x72x1.sh`).
    pub fp8_where_available: bool,
    /// Whether the weights are sharded inside a node (FSDP/HSDP): the
    /// reference FLUX trainer shards a node's GPUs and replicates across nodes.
    pub sharded: bool,
    /// What an evaluation runs per eval sample, in forward passes of the
    /// trained network (0: evaluation is not timed).
    pub eval_forwards_per_sample: f64,
    /// Samples between evaluations as a function of the global batch, where
    /// the rules give one (else `data/mlperf_training.csv`'s interval).
    pub eval_every: Option<fn(u64) -> f64>,
}

/// MLPerf BERT's evaluation interval: FLOOR(0.05·(230.23·GBS + 3,000,000),
/// 25,000) samples (MLPerf Training rules, BERT).
fn bert_eval_interval(global_batch: u64) -> f64 {
    let raw = 0.05 * (230.23 * global_batch as f64 + 3_000_000.0);
    ((raw / 25_000.0).floor() * 25_000.0).max(25_000.0)
}

/// The non-LLM MLPerf Training benchmarks gpuplan predicts.
pub const NONLLM_BENCHMARKS: [NonLlmBenchmark; 3] = [
    // Phase-2 pre-training on Wikipedia, sequences of at most 512 tokens
    // (mlcommons/training language_model/tensorflow/bert). NVIDIA's
    // implementation strips the padding (`--unpad --unpad_fmha`, or packs up to
    // 3 sequences per row): 156,726,829 sequences carry 4.04e10 padding tokens
    // (its packed_data/README.md, training_results_v3.1), so a sequence holds
    // (512·156.7e6 − 4.04e10)/156.7e6 ≈ 254 real tokens on average. Evaluation:
    // masked-LM accuracy on 10,000 sequences, a forward pass each.
    NonLlmBenchmark {
        key: "bert",
        model: "bert-large-uncased",
        trained: ComponentKind::Encoder,
        frozen_online: &[],
        image_px: 0.0,
        seq: 254.0,
        fp8_where_available: false,
        sharded: false,
        eval_forwards_per_sample: 1.0,
        eval_every: Some(bert_eval_interval),
    },
    // UNet trained from scratch at 512×512 on precomputed 64×64×4 latents
    // ("moments"; mlcommons/training stable_diffusion/README.md); NVIDIA's
    // implementation precomputes the OpenCLIP text embeddings too, so only the
    // UNet runs. Its evaluation (FID/CLIP on 30,000 generated images) is done
    // offline and not timed (MLPerf Training rules).
    NonLlmBenchmark {
        key: "stable_diffusion",
        model: "sd-2-base",
        trained: ComponentKind::Unet,
        frozen_online: &[],
        image_px: 512.0,
        seq: 0.0,
        fp8_where_available: false,
        sharded: false,
        eval_forwards_per_sample: 0.0,
        eval_every: None,
    },
    // FLUX.1-schnell MMDiT at 256×256 (256 image + 256 T5 tokens) on
    // precomputed latents and text embeddings; evaluation: validation loss,
    // one forward per sample over 29,696 samples every 262,144
    // (mlcommons/training text_to_image/README.md).
    NonLlmBenchmark {
        key: "flux1",
        model: "flux.1-schnell",
        trained: ComponentKind::Mmdit,
        frozen_online: &[],
        image_px: 256.0,
        seq: 0.0,
        fp8_where_available: true,
        sharded: true,
        eval_forwards_per_sample: 1.0,
        eval_every: None,
    },
];

/// The benchmark of a data-set key (`training:bert` or `bert`).
pub fn nonllm_benchmark(key: &str) -> Option<&'static NonLlmBenchmark> {
    let key = key.strip_prefix("training:").unwrap_or(key);
    NONLLM_BENCHMARKS.iter().find(|b| b.key == key)
}

/// One training step of a non-LLM benchmark on one GPU, seconds by part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NonLlmStep {
    /// Forward and backward of the trained network, and frozen forwards.
    pub compute_s: f64,
    /// Data-parallel traffic not hidden behind the compute.
    pub comm_exposed_s: f64,
    /// The optimizer step (sharded over the data-parallel ranks).
    pub optimizer_s: f64,
    /// Samples per GPU per step.
    pub local_batch: f64,
}

impl NonLlmStep {
    /// The whole step.
    pub fn step_s(&self) -> f64 {
        self.compute_s + self.comm_exposed_s + self.optimizer_s
    }
}

/// The networks of a benchmark: the trained one's forward work per sample
/// and parameters, and the frozen online networks' work and parameters.
fn sample_work(
    bench: &NonLlmBenchmark,
    model: &NonLlmModel,
) -> Result<(Work, f64, Work, f64), String> {
    let trained = model
        .component(bench.trained)
        .ok_or_else(|| format!("{} has no {:?} component", model.id, bench.trained))?;
    let (trained_work, trained_params) = forward(trained, bench.image_px, bench.seq);
    let (mut frozen_work, mut frozen_params) = (Work::default(), 0.0);
    for name in bench.frozen_online {
        let c = model
            .components
            .iter()
            .find(|c| c.name == *name)
            .ok_or_else(|| format!("{} has no component `{name}`", model.id))?;
        let (w, p) = forward(c, bench.image_px, 0.0);
        frozen_work = frozen_work.plus(w);
        frozen_params += p;
    }
    Ok((trained_work, trained_params, frozen_work, frozen_params))
}

/// The GEMM precision a benchmark trains at on `gpu`.
pub fn training_precision(bench: &NonLlmBenchmark, gpu: &GpuSpec) -> Precision {
    if bench.fp8_where_available && gpu.fp8_tflops.is_some() {
        Precision::Fp8
    } else {
        Precision::Bf16
    }
}

/// The rates one GPU trains at: GEMMs and fused attention at `precision`'s
/// dense peak times the training GEMM / attention efficiencies, memory at
/// the calibrated bandwidth, all scaled by the family's achieved share.
fn training_rates(
    gpu: &GpuSpec,
    precision: Precision,
    cal: &Calibration,
    factors: &TrainingFactors,
    family_share: f64,
) -> Result<Rates, String> {
    let peak = tensor_tflops(gpu, precision).ok_or_else(|| {
        format!(
            "{} publishes no {precision} tensor throughput (gpus.csv)",
            gpu.name
        )
    })? * 1e12;
    Ok(Rates {
        gemm_flops_s: peak * factors.gemm_efficiency(gpu, precision),
        attention_flops_s: peak * factors.attention_efficiency(AttentionKernel::Cudnn),
        bytes_s: gpu.memory_bandwidth_gbps * 1e9 * cal.bandwidth_efficiency(gpu),
        weight_bytes: WEIGHT_BYTES,
        activation_bytes: 2.0,
        roof_p: cal.roofline_exponent(),
        family_eff: family_share,
    })
}

/// One step of `bench` at `global_batch` samples over `gpus` GPUs joined by `fabric`.
#[allow(clippy::too_many_arguments)]
pub fn nonllm_step(
    bench: &NonLlmBenchmark,
    model: &NonLlmModel,
    gpu: &GpuSpec,
    fabric: &Fabric,
    gpus: u64,
    global_batch: u64,
    cal: &Calibration,
    factors: &TrainingFactors,
    nonllm_factors: &Calibration,
) -> Result<NonLlmStep, String> {
    let (trained, trained_params, frozen, frozen_params) = sample_work(bench, model)?;
    let precision = training_precision(bench, gpu);
    let rates = training_rates(
        gpu,
        precision,
        cal,
        factors,
        family_efficiency(nonllm_factors, model.family),
    )?;
    let local_batch = global_batch as f64 / gpus.max(1) as f64;
    // Forward + backward (input and weight gradients) = 3 passes over the
    // trained network's GEMMs and activations; its weights are read each pass.
    let work = trained
        .times(3.0 * local_batch)
        .plus(frozen.times(local_batch));
    let compute_s = rates.time_s(&work, 3.0 * trained_params + frozen_params, 0.0);
    let dp = gpus.max(1) as f64;
    let share = (dp - 1.0) / dp;
    let layout = TrainingLayout {
        tp: 1,
        pp: 1,
        dp: gpus.max(1) as u32,
        zero: if bench.sharded { 3 } else { 1 },
        micro_batch: 1,
        micro_batches: 1,
        schedule: PipelineSchedule::OneFOneB,
        recompute: Recompute::None,
    };
    let dp_bytes_s = dp_bandwidth(&layout, fabric, factors);
    // Distributed optimizer: reduce-scatter the gradients, all-gather the
    // updated 16-bit weights; sharded weights are also gathered for the
    // forward and the backward.
    let mut bytes = share * trained_params * (GRAD_BYTES + WEIGHT_BYTES);
    if bench.sharded {
        bytes += share * trained_params * WEIGHT_BYTES;
    }
    let comm_s = bytes / dp_bytes_s;
    let comm_exposed_s = (comm_s - factors.dp_overlap() * compute_s).max(0.0);
    let optimizer_s = trained_params / dp * OPTIMIZER_BYTES / rates.bytes_s;
    Ok(NonLlmStep {
        compute_s,
        comm_exposed_s,
        optimizer_s,
        local_batch,
    })
}

/// Predicts an MLPerf Training time-to-train row of a non-LLM benchmark, minutes.
pub fn predict_nonllm_time_to_train(
    catalog: &Catalog,
    nonllm: &NonLlmCatalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    factors: &TrainingFactors,
    nonllm_factors: &Calibration,
    fabric_of: impl Fn(&GpuSpec, u64) -> Fabric,
) -> Prediction {
    let bench = nonllm_benchmark(&row.dataset)
        .ok_or_else(|| format!("MLPerf benchmark `{}` is not modelled", row.dataset))?;
    let model = nonllm
        .model(bench.model)
        .ok_or_else(|| format!("model `{}` is not in the non-LLM catalog", bench.model))?;
    let gpu = catalog.gpu(&row.gpu).map_err(|e| e.to_string())?;
    let gpus = row.gpu_count.ok_or("row has no GPU count")?;
    let global = row.batch_or_concurrency.ok_or("row has no global batch")?;
    let convergence = Convergence::of(bench.key).ok_or("no convergence points")?;
    let samples = convergence.samples_at(global)?;
    let fabric = fabric_of(gpu, gpus);
    let step = nonllm_step(
        bench,
        model,
        gpu,
        &fabric,
        gpus,
        global,
        cal,
        factors,
        nonllm_factors,
    )?;
    let train_s = samples / global as f64 * step.step_s();
    // Evaluation: forward passes over the eval set at every interval, a
    // forward costing a third of a training sample's compute.
    let eval = match (bench.eval_every, convergence.eval) {
        (Some(interval), Some((_, eval_samples))) => Some((interval(global), eval_samples)),
        (_, table) => table,
    };
    let eval_s = match eval {
        Some((every, eval_samples)) if bench.eval_forwards_per_sample > 0.0 => {
            let evals = ((samples / every).floor() - convergence.evals_skipped).max(0.0);
            let per_sample = step.compute_s / step.local_batch / 3.0;
            evals * eval_samples * bench.eval_forwards_per_sample * per_sample / gpus as f64
        }
        _ => 0.0,
    };
    Ok((
        (train_s + eval_s) / 60.0,
        Some(format!(
            "DP{gpus} {:.0}/GPU {}; {samples:.0} samples; comm {:.0}%",
            step.local_batch,
            training_precision(bench, gpu),
            100.0 * step.comm_exposed_s / step.step_s()
        )),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::training::Fabric;

    fn bench(key: &str) -> &'static NonLlmBenchmark {
        nonllm_benchmark(key).unwrap()
    }

    #[test]
    fn bert_evaluates_at_the_rules_interval() {
        // FLOOR(0.05·(230.23·GBS + 3e6), 25,000): 152,947 → 150,000; 338,604 → 325,000.
        assert_eq!(bert_eval_interval(256), 150_000.0);
        assert_eq!(bert_eval_interval(16_384), 325_000.0);
        assert_eq!(nonllm_benchmark("training:bert").unwrap().key, "bert");
        assert!(nonllm_benchmark("llama31_8b").is_none());
    }

    #[test]
    fn every_benchmark_has_its_model_and_convergence_points() {
        let nonllm = NonLlmCatalog::embedded().unwrap();
        for b in &NONLLM_BENCHMARKS {
            let model = nonllm.model(b.model).expect(b.model);
            assert!(sample_work(b, model).is_ok(), "{}", b.key);
            let c = Convergence::of(b.key).expect(b.key);
            assert!(c.points.len() >= 3, "{}", b.key);
        }
    }

    /// Training a transformer encoder costs 6·N·L FLOPs per sequence of L
    /// tokens plus attention (Kaplan et al. 2020): the 3× forward holds.
    #[test]
    fn bert_training_work_is_six_flops_per_parameter_and_token() {
        let nonllm = NonLlmCatalog::embedded().unwrap();
        let b = bench("bert");
        let model = nonllm.model(b.model).unwrap();
        let (work, params, frozen, _) = sample_work(b, model).unwrap();
        assert_eq!(frozen.flops(), 0.0);
        let c = model.component(ComponentKind::Encoder).unwrap();
        let embeddings = (c.vocab + c.positions) as f64 * c.hidden as f64;
        let six_nl = 6.0 * (params - embeddings) * b.seq;
        let ratio = 3.0 * work.gemm_flops / six_nl;
        assert!((0.97..1.03).contains(&ratio), "{ratio}");
        // BERT-Large has ~335 M parameters (Devlin et al. 2019: 340 M).
        assert!((3.2e8..3.5e8).contains(&params), "{params}");
    }

    fn step(gpu: &str, gpus: u64, batch: u64, network_gbits: f64) -> NonLlmStep {
        let catalog = Catalog::embedded().unwrap();
        let nonllm = NonLlmCatalog::embedded().unwrap();
        let gpu = catalog.gpu(gpu).unwrap();
        let cal = Calibration::bundled();
        let b = bench("stable_diffusion");
        let fabric = Fabric::new(gpu, 8.min(gpus as u32), true, network_gbits, false, &cal);
        nonllm_step(
            b,
            nonllm.model(b.model).unwrap(),
            gpu,
            &fabric,
            gpus,
            batch,
            &cal,
            &TrainingFactors::bundled(),
            &crate::nonllm::bundled_factors(),
        )
        .unwrap()
    }

    #[test]
    fn more_gpus_shorten_the_step_and_a_faster_network_never_slows_it() {
        let one_node = step("H100", 8, 256, 3200.0);
        let four_nodes = step("H100", 32, 256, 3200.0);
        assert!(four_nodes.step_s() < one_node.step_s());
        assert_eq!(four_nodes.local_batch, 8.0);
        // A slow network exposes the gradient traffic; a fast one hides it.
        let slow = step("H100", 512, 1024, 100.0);
        let fast = step("H100", 512, 1024, 3200.0);
        assert!(slow.comm_exposed_s > fast.comm_exposed_s);
        assert!(fast.step_s() <= slow.step_s());
        // A faster GPU trains faster.
        assert!(step("B200", 8, 256, 3200.0).step_s() < one_node.step_s());
    }
}
