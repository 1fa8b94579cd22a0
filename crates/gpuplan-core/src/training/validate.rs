//! Predicting published training measurements: per-GPU throughput rows
//! (tokens/s/GPU, TFLOP/s/GPU) at the layout the row states, and MLPerf
//! Training time-to-train rows at the fastest layout the search finds for
//! the submitted GPU count and global batch.

use super::fabric::Fabric;
use super::factors::TrainingFactors;
use super::mlperf::{Convergence, MLPERF_BENCHMARKS};
use super::nonllm::{nonllm_benchmark, predict_nonllm_time_to_train};
use super::search::{best_layout, Hardware, SearchSpace};
use super::step::{
    megatron_2021_flops_per_token, model_flops_per_token, step_time, AttentionKernel, StepTime,
    TrainingJob, TrainingLayout,
};
use crate::calibration::Calibration;
use crate::training_memory::{FineTuneMethod, Optimizer, PipelineSchedule, Recompute};
use crate::validate::Prediction;
use gpuplan_catalog::{BenchmarkRow, Catalog, GpuSpec, NonLlmCatalog, Precision};

/// Scale-out bandwidth per GPU of the reference systems published runs use
/// when a row does not state it, Gb/s: one HDR 200 Gb/s InfiniBand NIC per
/// A100 (DGX A100, Selene), one NDR 400 Gb/s NIC per GPU from Hopper on
/// (DGX H100/H200/B200, Eos, GB200 NVL72 compute trays).
fn reference_nic_gbits_per_gpu(gpu: &GpuSpec) -> f64 {
    match gpu.architecture.as_str() {
        "Ampere" | "Volta" => 200.0,
        _ => 400.0,
    }
}

/// GPUs per NVLink domain of the reference systems: 72 for GB200 NVL72, 8 otherwise.
fn reference_node_gpus(gpu: &GpuSpec, gpu_count: u64) -> u32 {
    let domain = if gpu.name.starts_with("GB200") || gpu.name.starts_with("GB300") {
        72
    } else {
        8
    };
    domain.min(gpu_count.max(1)) as u32
}

/// The fabric of the reference system a published run of `gpus` GPUs used.
fn reference_fabric(cal: &Calibration) -> impl Fn(&GpuSpec, u64) -> Fabric + '_ {
    move |gpu, gpus| {
        let node_gpus = reference_node_gpus(gpu, gpus);
        let nic = reference_nic_gbits_per_gpu(gpu);
        Fabric::new(gpu, node_gpus, true, nic * f64::from(node_gpus), false, cal)
    }
}

/// Predicts one training row (non-LLM benchmarks with the bundled
/// non-LLM family factors).
pub fn predict_training(
    catalog: &Catalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    factors: &TrainingFactors,
) -> Prediction {
    predict_training_all(
        catalog,
        row,
        cal,
        factors,
        &crate::nonllm::bundled_factors(),
    )
}

/// Predicts one training row with the given non-LLM family factors
/// (`data/nonllm_calibration.csv`), which the non-LLM benchmarks use.
pub fn predict_training_all(
    catalog: &Catalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    factors: &TrainingFactors,
    nonllm_factors: &Calibration,
) -> Prediction {
    match row.metric.as_str() {
        "time_to_train_min" if nonllm_benchmark(&row.dataset).is_some() => {
            let nonllm = NonLlmCatalog::embedded().map_err(|e| e.to_string())?;
            predict_nonllm_time_to_train(
                catalog,
                &nonllm,
                row,
                cal,
                factors,
                nonllm_factors,
                reference_fabric(cal),
            )
        }
        "time_to_train_min" => predict_time_to_train(catalog, row, cal, factors),
        "tokens_per_s_per_gpu" | "tflops_per_gpu" => predict_throughput(catalog, row, cal, factors),
        other => Err(format!("training metric `{other}` is not predicted")),
    }
}

/// How the row's framework runs the job.
struct RowSetup {
    megatron: bool,
    megatron_2021: bool,
    zero: u8,
    fused: bool,
    async_tp: bool,
}

fn row_setup(row: &BenchmarkRow, pp: u32) -> RowSetup {
    let framework = row.framework.to_ascii_lowercase();
    let megatron = row.engine == "megatron" || framework.contains("megatron");
    let megatron_2021 = megatron && framework.contains("2021");
    // torchtitan's data parallelism is FSDP (data_parallel_shard_degree -1);
    // other stacks say so in their name.
    let fsdp = row.engine == "torchtitan" || framework.contains("fsdp");
    RowSetup {
        megatron,
        megatron_2021,
        // Megatron-Core: distributed optimizer (ZeRO-1); Megatron 2021: plain DDP;
        // FSDP frameworks shard everything unless pipelined.
        zero: if megatron_2021 {
            0
        } else if megatron || pp > 1 || !fsdp {
            1
        } else {
            3
        },
        // Megatron and Meta's trainer run fused kernels; torchtitan only when compiled.
        fused: megatron || row.compile == Some(true) || !framework.contains("torchtitan"),
        async_tp: row.async_tp == Some(true),
    }
}

fn predict_throughput(
    catalog: &Catalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    factors: &TrainingFactors,
) -> Prediction {
    let model = catalog.model(&row.model).map_err(|e| e.to_string())?;
    let gpu = catalog.gpu(&row.gpu).map_err(|e| e.to_string())?;
    let tp = row.tp.unwrap_or(1) as u32;
    let pp = row.pp.unwrap_or(1) as u32;
    let dp = row.dp.unwrap_or(1) as u32;
    let global = row.batch_or_concurrency.ok_or("row has no global batch")?;
    let seq_len = row.input_len.ok_or("row has no sequence length")?;
    let setup = row_setup(row, pp);
    let per_rank = global / u64::from(dp).max(1);
    // torchtitan splits a rank's local batch into PP micro-batches; Megatron runs micro-batch 1.
    let micro_batch = if setup.megatron {
        1
    } else {
        (per_rank / u64::from(pp)).max(1)
    };
    let layout = TrainingLayout {
        tp,
        pp,
        dp,
        zero: setup.zero,
        micro_batch,
        micro_batches: (per_rank / micro_batch).max(1),
        schedule: if row.pp_schedule.contains("interleaved") {
            PipelineSchedule::Interleaved(2)
        } else {
            PipelineSchedule::OneFOneB
        },
        recompute: match row.recompute.as_str() {
            "full" => Recompute::Full,
            "selective" => Recompute::Selective,
            _ => Recompute::None,
        },
    };
    let precision = match row.precision.to_ascii_lowercase() {
        p if p.starts_with("fp8") => Precision::Fp8,
        p if p.starts_with("fp16") => Precision::Fp16,
        _ => Precision::Bf16,
    };
    let job = TrainingJob {
        model: &model,
        method: FineTuneMethod::Full,
        optimizer: Optimizer::Adam,
        precision,
        seq_len,
        fused_kernels: setup.fused,
        async_tp: setup.async_tp,
        grad_reduce_bytes: 4.0,
        attention_kernel: if setup.megatron {
            AttentionKernel::Cudnn
        } else {
            AttentionKernel::Sdpa
        },
    };
    let gpus = u64::from(tp) * u64::from(pp) * u64::from(dp);
    let node_gpus = reference_node_gpus(gpu, gpus);
    let nic = row
        .network_gbps_per_gpu
        .unwrap_or_else(|| reference_nic_gbits_per_gpu(gpu));
    let fabric = Fabric::new(gpu, node_gpus, true, nic * f64::from(node_gpus), false, cal);
    let step = step_time(&job, &layout, gpu, &fabric, cal, factors).map_err(|e| e.to_string())?;
    let value = match row.metric.as_str() {
        "tokens_per_s_per_gpu" => step.tokens_per_s_per_gpu,
        _ if setup.megatron_2021 => {
            step.tokens_per_s_per_gpu * megatron_2021_flops_per_token(&model, seq_len) / 1e12
        }
        _ => {
            step.tokens_per_s_per_gpu * model_flops_per_token(&model, seq_len, FineTuneMethod::Full)
                / 1e12
        }
    };
    Ok((value, Some(where_time_goes(&step))))
}

/// The two largest shares of the step: `gemm 71% · dp 9%`.
pub fn where_time_goes(step: &StepTime) -> String {
    let mut parts = [
        ("gemm", step.gemm_s),
        ("attention", step.attention_s),
        ("elementwise", step.elementwise_s),
        ("tp", step.tp_comm_s),
        ("pipeline", step.pipeline_s),
        ("dp", step.dp_comm_exposed_s),
        ("moe a2a", step.moe_all_to_all_s),
        ("optimizer", step.optimizer_s),
    ];
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
        .iter()
        .take(2)
        .map(|(name, s)| format!("{name} {:.0}%", 100.0 * s / step.step_s))
        .collect::<Vec<_>>()
        .join(" · ")
}

fn predict_time_to_train(
    catalog: &Catalog,
    row: &BenchmarkRow,
    cal: &Calibration,
    factors: &TrainingFactors,
) -> Prediction {
    let key = row
        .dataset
        .strip_prefix("training:")
        .unwrap_or(&row.dataset);
    let bench = MLPERF_BENCHMARKS.iter().find(|b| b.key == key).ok_or_else(|| {
        format!("MLPerf benchmark `{key}` is not an LLM (non-LLM training models are not modelled yet)")
    })?;
    let model = catalog.model(&row.model).map_err(|e| e.to_string())?;
    let gpu = catalog.gpu(&row.gpu).map_err(|e| e.to_string())?;
    let gpus = row.gpu_count.ok_or("row has no GPU count")?;
    let global = row.batch_or_concurrency.ok_or("row has no global batch")?;
    let convergence = Convergence::of(key).ok_or("no convergence points")?;
    let samples = convergence.samples_at(global).map_err(|e| e.to_string())?;
    // MLPerf closed submissions on GPUs with FP8 tensor cores train in FP8 (Transformer Engine).
    let precision = if gpu.fp8_tflops.is_some() {
        Precision::Fp8
    } else {
        Precision::Bf16
    };
    let job = TrainingJob {
        model: &model,
        method: bench.method,
        optimizer: Optimizer::Adam,
        precision,
        seq_len: bench.seq_len,
        fused_kernels: true,
        async_tp: true,
        grad_reduce_bytes: 4.0,
        attention_kernel: AttentionKernel::Cudnn,
    };
    let fabric = reference_fabric(cal)(gpu, gpus);
    let hw = Hardware {
        gpu,
        fabric: &fabric,
    };
    let choice = best_layout(
        &job,
        hw,
        gpus,
        global,
        &SearchSpace::default(),
        cal,
        factors,
    )
    .map_err(|e| format!("no layout: {}", e.reason))?;
    let tokens_per_s = choice.step.tokens_per_s;
    let train_s = samples * bench.seq_len as f64 / tokens_per_s;
    // Evaluation: forward passes over the eval set at every interval; a forward
    // costs what one of the step's GEMM passes costs.
    let eval_s = match convergence.eval {
        Some((every, eval_samples)) => {
            let passes = super::step::gemm_passes_of(&job, choice.layout.recompute);
            // Submissions skip the first evaluations (SKIP_EVALS).
            let evals = ((samples / every).floor() - convergence.evals_skipped).max(0.0);
            evals * eval_samples * bench.seq_len as f64 / (tokens_per_s * passes)
        }
        None => 0.0,
    };
    let l = &choice.layout;
    Ok((
        (train_s + eval_s) / 60.0,
        Some(format!(
            "TP{} PP{} DP{} mb{} {}; {:.0} samples",
            l.tp, l.pp, l.dp, l.micro_batch, precision, samples
        )),
    ))
}
