//! The command that launches a training plan's layout: `torchrun` with
//! torchtitan's or Megatron-LM's flags (their real names), or a torchtune
//! recipe for LoRA/QLoRA (torchtitan has no adapters).

use crate::training::{Framework, LayoutChoice, TrainingWorkload};
use crate::training_memory::{FineTuneMethod, PipelineSchedule, Recompute};
use gpuplan_catalog::Precision;

fn rendezvous(nodes: u64, gpus_per_node: u32) -> String {
    if nodes > 1 {
        format!(
            "torchrun --nnodes {nodes} --nproc_per_node {gpus_per_node} --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500"
        )
    } else {
        format!("torchrun --standalone --nproc_per_node {gpus_per_node}")
    }
}

/// How a plan is launched: the whole command, and its program part (what
/// follows the launcher and its rendezvous flags) for exports that supply
/// their own rendezvous (SkyPilot's node IPs, a Kubernetes Indexed Job).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Launch {
    /// `torchrun` or `tune run`.
    pub launcher: String,
    /// The module/script and its flags.
    pub program: String,
    /// The whole command for one node.
    pub command: String,
}

/// The launch of `choice` on `nodes` × `gpus_per_node` GPUs.
pub(crate) fn launch(
    w: &TrainingWorkload,
    choice: &LayoutChoice,
    nodes: u64,
    gpus_per_node: u32,
    precision: Precision,
) -> Launch {
    let command = command(w, choice, nodes, gpus_per_node, precision);
    let (launcher, program) = if let Some(rest) = command.strip_prefix("tune run ") {
        // `tune run [--nnodes N --nproc_per_node G] RECIPE ...`
        let program = match rest.strip_prefix("--nnodes ") {
            Some(flags) => flags.splitn(4, ' ').nth(3).unwrap_or_default().to_string(),
            None => rest.to_string(),
        };
        ("tune run".to_string(), program)
    } else {
        let rendezvous = rendezvous(nodes, gpus_per_node);
        let program = command
            .strip_prefix(&rendezvous)
            .unwrap_or(&command)
            .trim_start()
            .to_string();
        ("torchrun".to_string(), program)
    };
    Launch {
        launcher,
        program,
        command,
    }
}

/// The launch command for `choice` on `nodes` × `gpus_per_node` GPUs.
fn command(
    w: &TrainingWorkload,
    choice: &LayoutChoice,
    nodes: u64,
    gpus_per_node: u32,
    precision: Precision,
) -> String {
    let steps = (w.tokens / (w.global_batch as f64 * w.seq_len as f64)).ceil() as u64;
    if let FineTuneMethod::Lora { rank, .. } | FineTuneMethod::Qlora { rank, .. } = w.method {
        return torchtune(w, choice, nodes, gpus_per_node, rank, steps);
    }
    let launch = rendezvous(nodes, gpus_per_node);
    match w.framework {
        Framework::Torchtitan => torchtitan(w, choice, &launch, precision, steps),
        Framework::Megatron => megatron(w, choice, &launch, precision, steps),
    }
}

/// A torchtune LoRA/QLoRA recipe (torchtitan has no adapters).
fn torchtune(
    w: &TrainingWorkload,
    choice: &LayoutChoice,
    nodes: u64,
    gpus_per_node: u32,
    rank: u64,
    steps: u64,
) -> String {
    let l = &choice.layout;
    let single = nodes * u64::from(gpus_per_node) == 1;
    let recipe = if single {
        "lora_finetune_single_device"
    } else {
        "lora_finetune_distributed"
    };
    let launcher = if single {
        "tune run".to_string()
    } else {
        format!("tune run --nnodes {nodes} --nproc_per_node {gpus_per_node}")
    };
    let quant = if matches!(w.method, FineTuneMethod::Qlora { .. }) {
        " model.quantize_base=True"
    } else {
        ""
    };
    format!(
        "{launcher} {recipe} --config ${{TORCHTUNE_CONFIG:?the torchtune recipe config for {}}} model.lora_rank={rank}{quant} batch_size={} gradient_accumulation_steps={} tokenizer.max_seq_len={} enable_activation_checkpointing={} max_steps_per_epoch={steps}",
        w.model.id,
        l.micro_batch,
        l.micro_batches,
        w.seq_len,
        if l.recompute == Recompute::None { "False" } else { "True" }
    )
}

/// torchtitan's trainer with its `--parallelism.*` flags.
fn torchtitan(
    w: &TrainingWorkload,
    choice: &LayoutChoice,
    launch: &str,
    precision: Precision,
    steps: u64,
) -> String {
    let l = &choice.layout;
    let mut flags = format!(
        "{launch} -m torchtitan.train --job.config_file ${{TORCHTITAN_CONFIG:?the torchtitan train_config.toml for {}}} --training.seq_len {} --training.local_batch_size {} --training.global_batch_size {} --training.steps {steps} --parallelism.data_parallel_shard_degree {} --parallelism.tensor_parallel_degree {} --parallelism.pipeline_parallel_degree {} --activation_checkpoint.mode {} --compile.enable",
        w.model.id,
        w.seq_len,
        l.micro_batch * l.micro_batches,
        w.global_batch,
        if l.zero >= 3 { l.dp as i64 } else { 1 },
        l.tp,
        l.pp,
        l.recompute.as_str(),
    );
    if l.zero < 3 && l.dp > 1 {
        flags.push_str(&format!(
            " --parallelism.data_parallel_replicate_degree {}",
            l.dp
        ));
    }
    if l.pp > 1 {
        let schedule = match l.schedule {
            PipelineSchedule::Interleaved(_) => "Interleaved1F1B",
            PipelineSchedule::OneFOneB => "1F1B",
        };
        flags.push_str(&format!(
            " --parallelism.pipeline_parallel_schedule {schedule} --parallelism.pipeline_parallel_microbatch_size {}",
            l.micro_batch
        ));
    }
    if l.tp > 1 {
        flags.push_str(" --parallelism.enable_async_tensor_parallel");
    }
    if precision == Precision::Fp8 {
        flags.push_str(" --model.converters float8 --float8.enable_fsdp_float8_all_gather");
    }
    flags
}

/// Megatron-LM's `pretrain_gpt.py` with the model's shape and the layout.
fn megatron(
    w: &TrainingWorkload,
    choice: &LayoutChoice,
    launch: &str,
    precision: Precision,
    steps: u64,
) -> String {
    let l = &choice.layout;
    let m = &w.model;
    let mut flags = format!(
        "{launch} pretrain_gpt.py --num-layers {} --hidden-size {} --ffn-hidden-size {} --num-attention-heads {} --max-position-embeddings {} --tensor-model-parallel-size {} --pipeline-model-parallel-size {} --micro-batch-size {} --global-batch-size {} --seq-length {} --train-iters {steps} --bf16 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --use-flash-attn --data-path ${{DATA_PATH:?the Megatron data prefix}} --tokenizer-type HuggingFaceTokenizer --tokenizer-model {} --save ${{CHECKPOINT_DIR:?where checkpoints go}} --load ${{CHECKPOINT_DIR}}",
        m.num_layers,
        m.hidden_size,
        m.intermediate_size,
        m.num_attention_heads,
        m.max_position_embeddings,
        l.tp,
        l.pp,
        l.micro_batch,
        w.global_batch,
        w.seq_len,
        m.hf_repo.as_deref().unwrap_or("${TOKENIZER:?a Hugging Face tokenizer}")
    );
    if m.num_kv_heads != m.num_attention_heads {
        flags.push_str(&format!(
            " --group-query-attention --num-query-groups {}",
            m.num_kv_heads
        ));
    }
    if matches!(m.mlp_type, gpuplan_catalog::MlpType::Swiglu) {
        flags.push_str(" --swiglu --normalization RMSNorm --position-embedding-type rope --disable-bias-linear");
    }
    if !m.tie_word_embeddings {
        flags.push_str(" --untie-embeddings-and-output-weights");
    }
    if l.tp > 1 {
        flags.push_str(" --sequence-parallel --tp-comm-overlap");
    }
    if let PipelineSchedule::Interleaved(v) = l.schedule {
        if l.pp > 1 {
            let per_chunk = w.model.num_layers / (u64::from(l.pp) * u64::from(v));
            flags.push_str(&format!(
                " --num-layers-per-virtual-pipeline-stage {}",
                per_chunk.max(1)
            ));
        }
    }
    match l.recompute {
        Recompute::None => {}
        Recompute::Selective => flags.push_str(" --recompute-activations"),
        Recompute::Full => flags.push_str(
            " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
        ),
    }
    if precision == Precision::Fp8 {
        flags.push_str(" --fp8-format hybrid");
    }
    flags
}
