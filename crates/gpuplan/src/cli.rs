//! Command-line definitions (clap derive); the doc comments are the help text.

use clap::{Args, Parser, Subcommand, ValueEnum};
use gpuplan_catalog::{AnomalyKind, Variant};
use gpuplan_core::limits::{self, Count, Span};
use gpuplan_core::Engine;
use std::path::PathBuf;

/// Parses `--variant`.
fn parse_variant(s: &str) -> Result<Variant, String> {
    s.parse()
}

/// Parses `--cv`: a fold count from 2 to 20, or `family`.
fn parse_split(s: &str) -> Result<gpuplan_core::Split, String> {
    if s.eq_ignore_ascii_case("family") {
        return Ok(gpuplan_core::Split::Family);
    }
    match s.parse::<u32>() {
        Ok(k) if (2..=20).contains(&k) => Ok(gpuplan_core::Split::Folds(k)),
        _ => Err(format!(
            "expected a fold count from 2 to 20, or `family`; got `{s}`"
        )),
    }
}

/// Parses one `--by` grouping.
fn parse_group_by(s: &str) -> Result<gpuplan_core::GroupBy, String> {
    match gpuplan_app::parse_groupings(s).map_err(|e| e.message)?[..] {
        [one] => Ok(one),
        _ => Err(format!("expected one grouping; got `{s}`")),
    }
}

/// Parses `--engine`.
fn parse_engine(s: &str) -> Result<Engine, String> {
    s.parse()
}

/// Parses `--kind` (snake_case or kebab-case).
fn parse_anomaly_kind(s: &str) -> Result<AnomalyKind, String> {
    s.parse()
}

/// A parser for a whole-number flag inside `range`. Negative numbers reach
/// it (the flags set `allow_negative_numbers`), so `--tp -1` is reported as
/// `invalid value '-1' for '--tp <TP>': expected a whole number from 1 to 1024`
/// rather than as an unexpected argument.
fn whole<T>(range: Count) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |text: &str| {
        text.trim()
            .parse::<u64>()
            .ok()
            .filter(|v| range.contains(*v))
            .and_then(|v| T::try_from(v).ok())
            .ok_or_else(|| format!("expected {}", range.describe()))
    }
}

/// A parser for a number flag inside `range` (finite; NaN and inf are rejected).
fn number(range: Span) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |text: &str| {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| range.contains(*v))
            .ok_or_else(|| format!("expected {}", range.describe()))
    }
}

/// Requests each service of a fleet is simulated with by default (`gpuplan mig`).
pub const DEFAULT_FLEET_VERIFY_REQUESTS: u64 = gpuplan_app::DEFAULT_FLEET_VERIFY_REQUESTS;
/// Plans `plan` simulates by default (`--verify`).
pub const DEFAULT_VERIFY_PLANS: usize = 5;
/// Requests per verification simulation by default.
pub const DEFAULT_VERIFY_REQUESTS: u64 = 20_000;
/// `plan --verify`: 0 (off) to 100 plans simulated.
const VERIFY_PLANS: Count = Count::new(0, 100);
/// `plan --verify-requests`: 1,000 (enough for a p99) to 10^7 requests.
const VERIFY_REQUESTS: Count = Count::new(1_000, 10_000_000);
/// `--top` and `--explain`: 1 to 100,000 plans.
const PLANS: Count = Count::new(1, 100_000);
/// `catalog offerings --limit`: 0 (= all) to 10^9 rows.
const ROWS: Count = Count::new(0, 1_000_000_000);

/// Plan cloud GPU deployments for AI workloads: which GPU, how many, split how,
/// quantised how, where, and at what latency and cost.
///
/// Exit codes: 0 ok; 1 nothing feasible (does not fit / no plan), or an
/// internal error (a bug: the message starts with `internal error:`); 2 bad
/// input (a file, field or flag out of its range, named in the message).
// `term_width = 0`: help keeps its source line breaks. Without it, a
// workspace build that unifies clap's `wrap_help` feature (divan, a
// benchmark dependency, turns it on) rewraps the `Examples:` lines at 100
// columns and splits a command in two.
#[derive(Debug, Parser)]
#[command(name = "gpuplan", version, propagate_version = true, term_width = 0)]
pub struct Cli {
    #[command(flatten)]
    pub catalog: CatalogArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Where the catalog comes from: the bundled tables, extended or overridden by user files.
#[derive(Debug, Args, Clone, Default)]
pub struct CatalogArgs {
    /// Directory with any of gpus.csv, gpu_aliases.csv, mig_profiles.csv,
    /// cloud_offerings.csv, regions.csv, models.csv: their rows extend the
    /// bundled tables and replace rows with the same key.
    #[arg(long, global = true, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    /// A cloud_offerings.csv that extends/overrides the bundled offerings.
    #[arg(long, global = true, value_name = "FILE")]
    pub offerings: Option<PathBuf>,
    /// A models.csv that extends/overrides the bundled models. A row whose
    /// id, alias or HF repo names a bundled model replaces that model.
    #[arg(long, global = true, value_name = "FILE")]
    pub models: Option<PathBuf>,
    /// A gpus.csv that extends/overrides the bundled GPU specs.
    #[arg(long, global = true, value_name = "FILE")]
    pub gpus: Option<PathBuf>,
    /// An upstream SkyPilot catalog `vms.csv`; its rows replace the bundled
    /// offerings of `--skypilot-provider`.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        requires = "skypilot_provider"
    )]
    pub skypilot_vms: Option<PathBuf>,
    /// The provider the `--skypilot-vms` file describes (aws, gcp, azure, ...).
    #[arg(
        long,
        global = true,
        value_name = "PROVIDER",
        requires = "skypilot_vms",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    pub skypilot_provider: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List catalog tables: GPUs, cloud offerings, models.
    ///
    /// Examples:
    ///   gpuplan catalog gpus
    ///   gpuplan catalog offerings --gpu H100 --provider aws --region 'us-*'
    ///   gpuplan catalog offerings --unresolved
    ///   gpuplan catalog models --json
    ///   gpuplan catalog anomalies --provider gcp --kind region_price_outlier
    #[command(verbatim_doc_comment)]
    Catalog(CatalogCmd),
    /// Does a model fit on a GPU? Per-GPU memory for inference or training.
    ///
    /// Examples:
    ///   gpuplan fit --model llama-3.1-70b --gpu H100 --count 2 --tp 2
    ///   gpuplan fit --model llama-3.1-70b --gpu H100 --precision fp8 --json
    ///   gpuplan fit --training --model llama-3.1-8b --gpu H100 --count 8 --dp 8 --zero 3 \
    ///       --micro-batch 1 --seq-len 8192 --recompute selective
    ///   gpuplan fit --training --model llama-3.1-70b --gpu A100-80GB --method qlora --lora-rank 16 \
    ///      --seq-len 4096 --recompute full
    #[command(verbatim_doc_comment)]
    Fit(FitCmd),
    /// Predict serving performance of one replica: TTFT, TPOT, throughput.
    ///
    /// Examples:
    ///   gpuplan estimate --model llama-3.1-8b --gpu H100 --precision fp8 \
    ///       --input-len 1000 --output-len 1000
    ///   gpuplan estimate --model llama-3.1-70b --gpu H100 --count 4 --tp 4 --precision bf16 \
    ///       --input-len 2000 --output-len 300 --concurrency 32 --json
    ///   gpuplan estimate --training --model llama-3.1-70b --gpu H100 --count 64 --tp 8 --dp 8 \
    ///       --zero 1 --micro-batch 1 --micro-batches 16 --seq-len 8192 --recompute full --precision fp8
    ///   gpuplan estimate --model sdxl-base-1.0 --gpu L40S --precision fp8 --steps 30 --concurrency 4
    ///   gpuplan estimate --model whisper-large-v3 --gpu L4 --precision fp16 --audio-seconds 20
    #[command(verbatim_doc_comment)]
    Estimate(EstimateCmd),
    /// Find the cheapest deployments that meet a workload's SLOs, across clouds.
    ///
    /// Examples:
    ///   gpuplan plan examples/chat-70b.toml
    ///   gpuplan plan examples/eu-residency.toml --top 5 --json
    ///   gpuplan plan examples/chat-70b.toml --explain 1
    ///   gpuplan plan examples/chat-70b.toml --export k8s
    ///   gpuplan plan examples/rag-long-context.toml --export skypilot --plan 2
    #[command(verbatim_doc_comment)]
    Plan(PlanCmd),
    /// Replay a plan in the discrete-event simulator: the p99s it promises
    /// against simulated percentiles, goodput and throughput.
    ///
    /// Simulates plan N of `gpuplan plan WORKLOAD` at the workload's peak
    /// rate: its replicas run vLLM V1's continuous batching (chunked
    /// prefill, paged KV cache, preemption by recompute), each step costing
    /// what the performance model says for that step's mix.
    ///
    /// Examples:
    ///   gpuplan simulate examples/code-completion.toml --requests 20000
    ///   gpuplan simulate examples/chat-70b.toml --plan 2 --duration 300 --seed 7 --json
    ///   gpuplan simulate examples/eu-residency.toml --requests 10000 --router round-robin
    ///   gpuplan simulate examples/chat-70b.toml --rate-curve diurnal --autoscale --duration 21600
    ///   gpuplan simulate examples/chat-70b.toml --gpu H100 --tp 4 --precision fp8 --replicas 3 --requests 5000
    #[command(verbatim_doc_comment)]
    Simulate(Box<SimulateCmd>),
    /// Compare predictions with published measurements, worst rows first.
    ///
    /// Examples:
    ///   gpuplan validate                       # the bundled development set
    ///   gpuplan validate --benchmarks my.csv --kind inference --json
    ///   gpuplan validate --fit --write-calibration data/calibration.csv
    ///   gpuplan validate --set mlperf --kind inference --by source,scenario
    ///   gpuplan validate --set mlperf --kind inference --simulate --sim-requests 2000
    #[command(verbatim_doc_comment)]
    Validate(ValidateCmd),
    /// Share GPUs between services with NVIDIA MIG: a GPU's valid layouts, or a
    /// fleet of services packed onto MIG slices at the least cost.
    ///
    /// Every service is then simulated in its slices at its peak; services
    /// that miss an SLO are re-sized with more headroom and the fleet packed
    /// again (`--no-verify` skips it).
    ///
    /// Examples:
    ///   gpuplan mig examples/fleets/fleet-12.toml --gpu H200
    ///   gpuplan mig examples/fleets/fleet-12.toml --gpu H100 --json --verify-requests 2000
    ///   gpuplan mig examples/fleets/fleet-12.toml --gpu H100 --export mig-parted
    ///   gpuplan mig examples/fleets/fleet-12.toml --gpu A100-80GB --no-verify --export k8s
    ///   gpuplan mig layouts --gpu A100-80GB
    ///   gpuplan mig layouts --gpu H100 --check 3g.40gb@4,2g.20gb@2,1g.10gb@0 --json
    #[command(verbatim_doc_comment)]
    Mig(MigCmd),
    /// Serve the planner over HTTP: a JSON API under /v1 (the same documents
    /// as `--json`), an OpenAPI document at /openapi.json, metrics at
    /// /metrics, and a web page at /.
    ///
    /// Binds to loopback unless told otherwise. Stops gracefully on SIGTERM
    /// or Ctrl-C. The catalog flags (--catalog, --offerings, ...) apply at start.
    ///
    /// Examples:
    ///   gpuplan serve                            # then open http://127.0.0.1:8080/
    ///   gpuplan serve --addr 0.0.0.0:9000 --max-concurrent 4
    ///   curl -s localhost:8080/v1/plan -H 'Content-Type: application/toml' --data-binary @examples/chat-70b.toml
    #[command(verbatim_doc_comment)]
    Serve(ServeCmd),
}

/// `gpuplan serve` settings.
#[derive(Debug, Args)]
pub struct ServeCmd {
    /// Address and port to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: std::net::SocketAddr,
    /// Largest request body, bytes (larger: 413).
    #[arg(long, default_value_t = 1 << 20, value_parser = whole::<usize>(BODY_BYTES))]
    pub body_limit: usize,
    /// Longest a request may take, seconds (longer: 504).
    #[arg(long, default_value_t = 30, value_parser = whole::<u64>(SECONDS))]
    pub timeout: u64,
    /// Plans computed at once (default: the CPU count); more requests wait, then get 503.
    #[arg(long, value_parser = whole::<usize>(CONCURRENCY))]
    pub max_concurrent: Option<usize>,
    /// Calibration table (default: the bundled data/calibration.csv).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
}

/// `serve --body-limit`: 1 KiB to 64 MiB.
const BODY_BYTES: Count = Count::new(1 << 10, 1 << 26);
/// `serve --timeout`: 1 s to 1 hour.
const SECONDS: Count = Count::new(1, 3600);
/// `serve --max-concurrent`: 1 to 1024.
const CONCURRENCY: Count = Count::new(1, 1024);

#[derive(Debug, Args)]
pub struct EstimateCmd {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub replica: ReplicaArgs,
    /// Prompt tokens per request (LLMs: required; encoders: tokens per
    /// sequence, default the model's).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u64>(limits::SEQUENCE_TOKENS))]
    pub input_len: Option<u64>,
    /// Generated tokens per request (LLMs: required).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u64>(limits::SEQUENCE_TOKENS))]
    pub output_len: Option<u64>,
    /// Image generation: denoising steps per image (default 30).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u64>(gpuplan_app::DENOISING_STEPS))]
    pub steps: Option<u64>,
    /// Image generation: image side in pixels, a multiple of 16 (default: the model's).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u64>(gpuplan_app::IMAGE_SIDE_PX))]
    pub resolution: Option<u64>,
    /// Image generation: no classifier-free guidance (one denoiser pass per step).
    #[arg(long)]
    pub no_guidance: bool,
    /// Speech-to-text: seconds of speech per request, up to one 30 s window (default 30).
    #[arg(long, allow_negative_numbers = true, value_parser = number(gpuplan_app::AUDIO_WINDOW_S))]
    pub audio_seconds: Option<f64>,
    /// Beam width (default 1, greedy): speech-to-text, and LLM beam search (TensorRT-LLM only).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u64>(gpuplan_app::BEAM_WIDTH))]
    pub beam: Option<u64>,
    /// One training step instead of serving: step time, tokens/s, MFU, where the time goes.
    #[arg(long, conflicts_with_all = ["input_len", "output_len", "concurrency", "steps", "resolution", "no_guidance", "audio_seconds", "beam"])]
    pub training: bool,
    #[command(flatten)]
    pub train: TrainingArgs,
    /// Training framework (sets fused kernels, attention kernels and comm overlap).
    #[arg(long, value_enum, default_value = "torchtitan")]
    pub framework: FrameworkArg,
    /// GPUs per node (training; default: 8, or --count when smaller).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u32>(limits::TP))]
    pub gpus_per_node: Option<u32>,
    /// Node network bandwidth, Gb/s (training; default 3200, an 8 × 400 Gb/s RDMA fabric).
    #[arg(long, default_value_t = 3200.0, allow_negative_numbers = true, value_parser = number(NETWORK_GBITS))]
    pub network_gbits: f64,
    /// Sequences in flight (default: the most the KV cache and --max-num-seqs allow).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u64>(limits::SEQUENCES))]
    pub concurrency: Option<u64>,
    /// Engine batch cap (vLLM --max-num-seqs).
    #[arg(long, default_value_t = 256, allow_negative_numbers = true, value_parser = whole::<u64>(limits::SEQUENCES))]
    pub max_num_seqs: u64,
    /// Engine tokens per iteration (vLLM --max-num-batched-tokens).
    #[arg(long, default_value_t = 8192, allow_negative_numbers = true, value_parser = whole::<u64>(limits::MAX_BATCHED_TOKENS))]
    pub max_batched_tokens: u64,
    /// Engine memory utilisation cap (vLLM --gpu-memory-utilization).
    #[arg(long, default_value_t = 0.90, allow_negative_numbers = true, value_parser = number(limits::MEMORY_UTILIZATION))]
    pub memory_utilization: f64,
    /// Calibration table (default: the bundled data/calibration.csv).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Training frameworks on the command line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum FrameworkArg {
    /// torchtitan (FSDP2, torch.compile, SDPA attention).
    Torchtitan,
    /// Megatron-LM (distributed optimizer, TE kernels, cuDNN attention).
    Megatron,
}

/// Node network bandwidth a flag may state, Gb/s.
const NETWORK_GBITS: gpuplan_core::limits::Span = gpuplan_core::limits::Span::above(0.0, 1e5);

/// Benchmark kinds on the command line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum KindArg {
    Inference,
    Training,
    Memory,
}

#[derive(Debug, Args)]
pub struct ValidateCmd {
    /// Benchmark CSV (the format of data/benchmarks/benchmarks_dev.csv, described in data/SOURCES.md); default: the bundled development set.
    #[arg(long, value_name = "FILE")]
    pub benchmarks: Option<PathBuf>,
    /// Only rows of this kind.
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
    /// Only inference rows served by this engine (vllm includes ROCm vLLM):
    /// accuracy per engine.
    #[arg(long, value_parser = parse_engine)]
    pub engine: Option<Engine>,
    /// Accuracy per segment instead of per row: one summary table (JSON:
    /// `by.<grouping>`) for each grouping named, e.g. `--by source,precision`.
    /// Groupings: gpu, family, engine, source, precision, metric, model,
    /// scenario, kind.
    #[arg(long, value_name = "GROUPING", value_delimiter = ',', value_parser = parse_group_by, conflicts_with = "markdown")]
    pub by: Vec<gpuplan_core::GroupBy>,
    /// Cross-validate the LLM efficiency fit instead: `5` for 5 folds (each
    /// fold predicted with factors fitted on the others), `family` to hold
    /// out one GPU family at a time (what an uncalibrated family gets).
    #[arg(long, value_name = "K|family", value_parser = parse_split)]
    pub cv: Option<gpuplan_core::Split>,
    /// Calibration table (default: the bundled data/calibration.csv).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Refit the efficiency factors on the inference rows of the file (and
    /// the training factors on its training-throughput rows) and report the
    /// fitted tables (bounded coordinate descent on log error).
    #[arg(long)]
    pub fit: bool,
    /// With --fit: write the fitted factors to this CSV.
    #[arg(long, value_name = "FILE", requires = "fit")]
    pub write_calibration: Option<PathBuf>,
    /// Which bundled set without --benchmarks: `dev` (vendor perf tables,
    /// Megatron/torchtitan training), `mlperf` (benchmarks_dev_2.csv: MLPerf
    /// Inference/Training results and engine runs) or `holdout`
    /// (benchmarks_holdout.csv: published measurements no factor is fitted
    /// on; --fit and --cv refuse it).
    #[arg(long, value_enum, default_value = "dev", conflicts_with = "benchmarks")]
    pub set: SetArg,
    /// Training calibration table (default: the bundled data/training_calibration.csv).
    #[arg(long, value_name = "FILE")]
    pub training_calibration: Option<PathBuf>,
    /// With --fit: write the fitted training factors to this CSV.
    #[arg(long, value_name = "FILE", requires = "fit")]
    pub write_training_calibration: Option<PathBuf>,
    /// With --fit: write the fitted non-LLM factors (the MLPerf set's
    /// diffusion, speech and encoder rows) to this CSV.
    #[arg(long, value_name = "FILE", requires = "fit")]
    pub write_nonllm_calibration: Option<PathBuf>,
    /// With --fit: write the fitted MLPerf data-set mean input lengths to this CSV.
    #[arg(long, value_name = "FILE", requires = "fit")]
    pub write_input_lengths: Option<PathBuf>,
    /// Print the summaries and the worst rows as Markdown (for the README).
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also find the capacity of each MLPerf Server/Interactive LLM row by
    /// simulation (bisection on the Poisson rate) and print simulated vs
    /// analytical vs measured.
    #[arg(long, conflicts_with_all = ["markdown", "fit"])]
    pub simulate: bool,
    /// Requests per simulation with --simulate.
    #[arg(long, value_name = "N", default_value_t = 20_000, requires = "simulate", value_parser = clap::value_parser!(u64).range(1_000..=10_000_000))]
    pub sim_requests: u64,
}

/// Bundled benchmark sets.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SetArg {
    /// data/benchmarks/benchmarks_dev.csv.
    Dev,
    /// data/benchmarks/benchmarks_dev_2.csv.
    Mlperf,
    /// data/benchmarks/benchmarks_holdout.csv (never fitted on).
    Holdout,
}

impl SetArg {
    /// The bundled set this names.
    pub fn bundled(self) -> gpuplan_app::BenchmarkSet {
        match self {
            SetArg::Dev => gpuplan_app::BenchmarkSet::Dev,
            SetArg::Mlperf => gpuplan_app::BenchmarkSet::Mlperf,
            SetArg::Holdout => gpuplan_app::BenchmarkSet::Holdout,
        }
    }
}

#[derive(Debug, Args)]
pub struct CatalogCmd {
    #[command(subcommand)]
    pub table: CatalogTable,
}

#[derive(Debug, Subcommand)]
pub enum CatalogTable {
    /// Accelerator specs.
    Gpus {
        /// Only GPUs whose name, vendor or architecture contains this text.
        #[arg(long)]
        filter: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Cloud offerings, cheapest first.
    Offerings {
        /// Only this GPU (any alias).
        #[arg(long)]
        gpu: Option<String>,
        /// Only this provider.
        #[arg(long)]
        provider: Option<String>,
        /// Only regions matching this glob (`eu-*`, `us-east-?`).
        #[arg(long)]
        region: Option<String>,
        /// List the accelerator names that have no GPU spec (left out of plans).
        #[arg(long)]
        unresolved: bool,
        /// At most this many rows (0 = all).
        #[arg(long, default_value_t = 50, allow_negative_numbers = true, value_parser = whole::<usize>(ROWS))]
        limit: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Price and offering rows that look wrong, and why: spot at or above
    /// on-demand, spot at a placeholder floor, per-GPU-hour or regional price
    /// outliers, providers whose regional availability is unknown, implausible
    /// instance shapes. Checked when the catalog loads, user files included.
    ///
    /// Examples:
    ///   gpuplan catalog anomalies
    ///   gpuplan catalog anomalies --provider runpod --kind spot_not_below_on_demand
    ///   gpuplan catalog anomalies --json
    ///   gpuplan catalog anomalies --summary
    #[command(verbatim_doc_comment)]
    Anomalies {
        /// Only this provider.
        #[arg(long)]
        provider: Option<String>,
        /// Only this kind: spot_not_below_on_demand, spot_at_floor,
        /// gpu_hour_price_outlier, region_price_outlier,
        /// region_availability_unknown, instance_shape_implausible.
        #[arg(long, value_parser = parse_anomaly_kind)]
        kind: Option<AnomalyKind>,
        /// Print JSON (full reasons) instead of a table.
        #[arg(long)]
        json: bool,
        /// One Markdown row per kind: count, meaning, an example (the README's table).
        #[arg(long, conflicts_with_all = ["json", "provider", "kind"])]
        summary: bool,
    },
    /// Provider regions: where each is and the `constraints.geo` codes it satisfies.
    Regions {
        /// Only this provider.
        #[arg(long)]
        provider: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Model architectures.
    Models {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Recomputation policy names on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RecomputeArg {
    None,
    Selective,
    Full,
}

/// Fine-tuning method names on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MethodArg {
    Full,
    Lora,
    Qlora,
}

/// Model selection shared by fit/estimate.
#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// Model id, alias, Hugging Face repo id, or gpt-h<hidden>-l<layers>-a<heads>[-v<vocab>][-s<seq>].
    #[arg(long, required_unless_present = "hf_config")]
    pub model: Option<String>,
    /// Build the model from a Hugging Face config.json instead.
    #[arg(long, value_name = "FILE")]
    pub hf_config: Option<PathBuf>,
}

/// GPU, split and precision of a replica, shared by fit and estimate.
#[derive(Debug, Args, Clone)]
pub struct ReplicaArgs {
    /// GPU name or alias (H100, A100-80GB, L40S ...).
    #[arg(long)]
    pub gpu: String,
    /// GPUs in total (default: tp × pp, and × dp for training).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u32>(limits::GPUS))]
    pub count: Option<u32>,
    /// Tensor-parallel degree (default: --count for inference, 1 for training).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u32>(limits::TP))]
    pub tp: Option<u32>,
    /// Pipeline-parallel degree.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = whole::<u32>(limits::PP))]
    pub pp: u32,
    /// Weight precision: bf16, fp16, fp8, int8, int4, fp4 (training: bf16 or fp8).
    #[arg(long, default_value = "bf16")]
    pub precision: String,
    /// KV-cache precision (default: fp8 with fp8/fp4 weights, else bf16).
    #[arg(long)]
    pub kv_precision: Option<String>,
    /// Which release to serve, as a workload's `model.variant`: instruct or base
    /// (inference; decides which published checkpoints can be served).
    #[arg(long, default_value = "instruct", value_parser = parse_variant)]
    pub variant: Variant,
    /// Serving engine (inference): vllm, sglang or trtllm. It sets the step
    /// time, the KV page size and what runs on the GPU.
    #[arg(long, default_value = "vllm", value_parser = parse_engine)]
    pub engine: Engine,
}

/// The training job and layout flags `fit --training` and `estimate --training` share.
#[derive(Debug, Args)]
pub struct TrainingArgs {
    /// Data-parallel degree (training).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u32>(limits::DP))]
    pub dp: Option<u32>,
    /// ZeRO stage over DP, 0–3 (3 = FSDP) (training).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = whole::<u8>(limits::ZERO_STAGE))]
    pub zero: u8,
    /// Sequences per micro-batch per GPU (training).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = whole::<u64>(limits::MICRO_BATCH))]
    pub micro_batch: u64,
    /// Micro-batches per step (default: pp) (training).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u64>(limits::MICRO_BATCHES))]
    pub micro_batches: Option<u64>,
    /// Sequence length (training).
    #[arg(long, default_value_t = 4096, allow_negative_numbers = true, value_parser = whole::<u64>(limits::SEQUENCE_TOKENS))]
    pub seq_len: u64,
    /// Activation recomputation (training).
    #[arg(long, value_enum, default_value = "none")]
    pub recompute: RecomputeArg,
    /// Full fine-tune, LoRA or QLoRA (training).
    #[arg(long, value_enum, default_value = "full")]
    pub method: MethodArg,
    /// LoRA rank (training with --method lora|qlora).
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = whole::<u64>(limits::LORA_RANK))]
    pub lora_rank: u64,
    /// Adapt attention matrices only (default: all linear layers).
    #[arg(long)]
    pub lora_attention_only: bool,
    /// 8-bit Adam instead of fp32 Adam states (training).
    #[arg(long)]
    pub adam_8bit: bool,
    /// Compiled/fused cross-entropy (no fp32 logits copies) (training).
    #[arg(long)]
    pub fused_loss: bool,
    /// Asynchronous tensor parallelism (training with --tp > 1): adds its
    /// all-gather workspace to memory.
    #[arg(long)]
    pub async_tp: bool,
}

#[derive(Debug, Args)]
pub struct FitCmd {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub replica: ReplicaArgs,
    /// Context length (prompt + output) each sequence needs, tokens.
    #[arg(long, default_value_t = 2048, allow_negative_numbers = true, value_parser = whole::<u64>(limits::SEQUENCE_TOKENS))]
    pub context: u64,
    /// Engine memory utilisation cap (vLLM --gpu-memory-utilization).
    #[arg(long, default_value_t = 0.90, allow_negative_numbers = true, value_parser = number(limits::MEMORY_UTILIZATION))]
    pub memory_utilization: f64,
    /// Engine max tokens per iteration (vLLM --max-num-batched-tokens).
    #[arg(long, default_value_t = 8192, allow_negative_numbers = true, value_parser = whole::<u64>(limits::MAX_BATCHED_TOKENS))]
    pub max_batched_tokens: u64,
    /// Training instead of inference.
    #[arg(long)]
    pub training: bool,
    #[command(flatten)]
    pub train: TrainingArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PlanCmd {
    /// Workload file (TOML, or JSON with a .json extension); see docs/workload.md.
    /// Several files only with `--summary`.
    #[arg(required = true, num_args = 1..)]
    pub workload: Vec<PathBuf>,
    /// One Markdown row per workload: its cheapest plan and why it wins (the README's examples table).
    #[arg(long, conflicts_with_all = ["json", "explain", "wide"])]
    pub summary: bool,
    /// Plans to show.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = whole::<usize>(PLANS))]
    pub top: usize,
    /// Show the full derivation of plan N and the vLLM settings that realise it.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole::<usize>(PLANS))]
    pub explain: Option<usize>,
    /// Show every column (price source date, $/1M tokens at peak, full names) without fitting 120 columns.
    #[arg(long)]
    pub wide: bool,
    /// Simulate the top K plans at their peak (discrete-event, vLLM scheduling) and move any whose
    /// simulated p99s miss the SLO below those that meet it; 0 skips the check.
    #[arg(long, value_name = "K", default_value_t = DEFAULT_VERIFY_PLANS, value_parser = whole::<usize>(VERIFY_PLANS))]
    pub verify: usize,
    /// Skip the simulation check (the same as --verify 0): analytical p99s only.
    #[arg(long, conflicts_with = "verify")]
    pub no_verify: bool,
    /// Requests per verification simulation.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_VERIFY_REQUESTS, value_parser = whole::<u64>(VERIFY_REQUESTS))]
    pub verify_requests: u64,
    /// Calibration table (default: the bundled data/calibration.csv).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Write plan N (`--plan`) as the files a deployment tool takes: k8s (Deployment or
    /// LeaderWorkerSet, Service, PodDisruptionBudget, HPA), skypilot (SkyServe task) or
    /// engine (the launch script of the plan's engine, with vLLM's config file or TensorRT-LLM's options file); printed, or written into `-o DIR`.
    #[arg(long, value_enum, value_name = "KIND", conflicts_with_all = ["summary", "json", "explain", "wide"])]
    pub export: Option<ExportArg>,
    /// With --export: the plan to export (1 = the cheapest that passes simulation).
    #[arg(long, value_name = "N", requires = "export", allow_negative_numbers = true, value_parser = whole::<usize>(PLANS))]
    pub plan: Option<usize>,
    /// Also write a self-contained HTML report (plans, Pareto chart, memory
    /// bars, latency-vs-load curves, rejections, derivations) to FILE.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["summary", "export", "explain"])]
    pub html: Option<PathBuf>,
    /// With --export: write the files into DIR (created if missing) and list them.
    #[arg(short = 'o', long = "output", value_name = "DIR", requires = "export")]
    pub output: Option<PathBuf>,
}

/// What `plan --export` writes.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ExportArg {
    /// Kubernetes manifests.
    K8s,
    /// A SkyPilot task with a SkyServe service.
    Skypilot,
    /// The vLLM launch script and config file.
    Engine,
}

use gpuplan_app::SIM_DURATION_S;
use gpuplan_app::SIM_REQUESTS;
use gpuplan_app::SIM_WARMUP;
/// `simulate --seed`: any 64-bit number.
const SIM_SEED: Count = Count::new(0, u64::MAX);

/// How `simulate` spreads arrivals over replicas.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum RouterArg {
    /// To the replica with the fewest requests waiting or running.
    LeastOutstanding,
    /// To each replica in turn.
    RoundRobin,
    /// To the replica with the smallest share of its KV cache in use.
    LeastKv,
}

#[derive(Debug, Args)]
pub struct SimulateCmd {
    /// Workload file (TOML, or JSON with a .json extension); see docs/workload.md.
    pub workload: PathBuf,
    /// Which plan of `gpuplan plan WORKLOAD` to simulate (1 = the cheapest).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = whole::<usize>(PLANS))]
    pub plan: usize,
    /// Simulate this deployment instead of a plan: --replicas replicas of this GPU serving the
    /// workload's model (with --count/--tp/--pp, --precision, --kv-precision, --variant).
    #[arg(long, value_name = "GPU")]
    pub gpu: Option<String>,
    /// GPUs per replica of the --gpu deployment (default: tp × pp).
    #[arg(long, requires = "gpu", allow_negative_numbers = true, value_parser = whole::<u32>(limits::GPUS))]
    pub count: Option<u32>,
    /// Tensor-parallel degree of the --gpu deployment (default: --count).
    #[arg(long, requires = "gpu", allow_negative_numbers = true, value_parser = whole::<u32>(limits::TP))]
    pub tp: Option<u32>,
    /// Pipeline-parallel degree of the --gpu deployment.
    #[arg(long, default_value_t = 1, requires = "gpu", allow_negative_numbers = true, value_parser = whole::<u32>(limits::PP))]
    pub pp: u32,
    /// Weight precision of the --gpu deployment: bf16, fp16, fp8, int8, int4, fp4.
    #[arg(long, default_value = "bf16", requires = "gpu")]
    pub precision: String,
    /// KV-cache precision of the --gpu deployment (default: fp8 with fp8/fp4 weights, else bf16).
    #[arg(long, requires = "gpu")]
    pub kv_precision: Option<String>,
    /// Replicas of the --gpu deployment.
    #[arg(long, default_value_t = 1, requires = "gpu", allow_negative_numbers = true, value_parser = whole::<u32>(SIM_REPLICAS))]
    pub replicas: u32,
    /// Batch cap of the --gpu deployment (vLLM --max-num-seqs).
    #[arg(long, default_value_t = 256, requires = "gpu", allow_negative_numbers = true, value_parser = whole::<u64>(limits::SEQUENCES))]
    pub max_num_seqs: u64,
    /// Token budget per step of the --gpu deployment (vLLM --max-num-batched-tokens).
    #[arg(long, default_value_t = 8192, requires = "gpu", allow_negative_numbers = true, value_parser = whole::<u64>(limits::MAX_BATCHED_TOKENS))]
    pub max_batched_tokens: u64,
    /// Memory utilisation cap of the --gpu deployment (vLLM --gpu-memory-utilization).
    #[arg(long, default_value_t = 0.90, requires = "gpu", allow_negative_numbers = true, value_parser = number(limits::MEMORY_UTILIZATION))]
    pub memory_utilization: f64,
    /// Price of the whole --gpu deployment, USD per hour (for the cost lines).
    #[arg(long, value_name = "USD", requires = "gpu", allow_negative_numbers = true, value_parser = number(SIM_PRICE))]
    pub usd_per_hour: Option<f64>,
    /// Requests to simulate (default 100000).
    #[arg(long, conflicts_with_all = ["duration", "trace"], allow_negative_numbers = true, value_parser = whole::<u64>(SIM_REQUESTS))]
    pub requests: Option<u64>,
    /// Simulate arrivals for this many seconds instead of a request count.
    #[arg(long, value_name = "S", conflicts_with = "trace", allow_negative_numbers = true, value_parser = number(SIM_DURATION_S))]
    pub duration: Option<f64>,
    /// Seed of the synthetic traffic (ChaCha8): the same seed gives the same result.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = whole::<u64>(SIM_SEED))]
    pub seed: u64,
    /// Share of the arrivals left out of the statistics while the replicas fill up.
    #[arg(long, value_name = "F", default_value_t = 0.1, allow_negative_numbers = true, value_parser = number(SIM_WARMUP))]
    pub warmup: f64,
    /// How arrivals are spread over the replicas.
    #[arg(long, value_enum, default_value = "least-outstanding")]
    pub router: RouterArg,
    /// Replay a trace (CSV rows of timestamp_s,input_tokens,output_tokens, sorted by time) instead of synthetic traffic.
    #[arg(long, value_name = "FILE.csv")]
    pub trace: Option<PathBuf>,
    /// Arrival rate over time instead of the constant peak: `diurnal` (a daily curve with the
    /// workload's peak and mean rates, peaking at 14:00; one day unless --duration/--requests) or a
    /// CSV of `time_s,requests_per_s` rows (each rate holds until the next row).
    #[arg(long, value_name = "diurnal|FILE.csv", conflicts_with = "trace")]
    pub rate_curve: Option<String>,
    /// Closed-loop clients instead of open arrivals: this many users, each sending a request,
    /// waiting for the answer and thinking --think-time before the next (a fixed-concurrency
    /// benchmark when --think-time is 0).
    #[arg(long, value_name = "N", conflicts_with_all = ["trace", "rate_curve"], allow_negative_numbers = true, value_parser = whole::<u32>(SIM_USERS))]
    pub users: Option<u32>,
    /// Mean think time of a closed-loop user (exponential), s.
    #[arg(long, value_name = "S", requires = "users", default_value_t = 0.0, allow_negative_numbers = true, value_parser = number(SIM_DELAY_S))]
    pub think_time: f64,
    /// Scale replicas with the load: target tracking on requests outstanding per replica (as a
    /// Kubernetes HPA on vLLM's running + waiting requests), from --min-replicas to --max-replicas.
    #[arg(long)]
    pub autoscale: bool,
    /// Fewest replicas (default: the workload's min_replicas).
    #[arg(long, requires = "autoscale", allow_negative_numbers = true, value_parser = whole::<u32>(SIM_REPLICAS))]
    pub min_replicas: Option<u32>,
    /// Most replicas (default: the plan's fleet, sized for the peak).
    #[arg(long, requires = "autoscale", allow_negative_numbers = true, value_parser = whole::<u32>(SIM_REPLICAS))]
    pub max_replicas: Option<u32>,
    /// Requests waiting or running per replica the autoscaler aims at (default: the plan's
    /// capacity at the SLO × its service time, Little's law).
    #[arg(long, value_name = "N", requires = "autoscale", allow_negative_numbers = true, value_parser = number(SIM_TARGET))]
    pub target_outstanding: Option<f64>,
    /// Seconds from a scale-up decision to the replica serving (default: node provisioning, image
    /// pull, weight load and engine warm-up; see docs/simulate.md).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = number(SIM_DELAY_S))]
    pub scale_up_delay: Option<f64>,
    /// Seconds after a scaling step before a scale-down (default 300, the HPA's stabilisation window).
    #[arg(long, value_name = "S", requires = "autoscale", allow_negative_numbers = true, value_parser = number(SIM_DELAY_S))]
    pub cooldown: Option<f64>,
    /// Replicas lost per replica-hour (spot preemptions, failures); a spot plan defaults to the
    /// workload's [pricing] spot_preemptions_per_hour.
    #[arg(long, value_name = "X", allow_negative_numbers = true, value_parser = number(SIM_LOSS_RATE))]
    pub failures_per_hour: Option<f64>,
    /// Seconds until a lost replica's replacement serves (default: the workload's
    /// spot_replacement_hours).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = number(SIM_DELAY_S))]
    pub replacement_delay: Option<f64>,
    /// A request that finds no replica up gives up after this many seconds (counted as timed out).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = number(SIM_TIMEOUT_S))]
    pub request_timeout: Option<f64>,
    /// Write a time series (replicas, queue, running, KV use, completions, p99 TTFT so far) as CSV.
    #[arg(long, value_name = "FILE.csv")]
    pub timeseries: Option<PathBuf>,
    /// Seconds between two time-series rows.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = number(SIM_SAMPLE_S))]
    pub sample_every: f64,
    /// Calibration table (default: the bundled data/calibration.csv).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `simulate --usd-per-hour`.
const SIM_PRICE: Span = Span::from(0.0, 1e7);
use gpuplan_app::SIM_DELAY_S;
use gpuplan_app::SIM_LOSS_RATE;
use gpuplan_app::SIM_REPLICAS;
use gpuplan_app::SIM_SAMPLE_S;
use gpuplan_app::SIM_TARGET;
use gpuplan_app::SIM_TIMEOUT_S;
use gpuplan_app::SIM_USERS;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn ranged_parsers_name_the_range_in_words() {
        let tp = whole::<u32>(limits::TP);
        assert_eq!(tp("8"), Ok(8));
        assert_eq!(
            tp("-1"),
            Err("expected a whole number from 1 to 1024".to_string())
        );
        assert!(tp("0").is_err());
        assert!(tp("65536").is_err());
        let u = number(limits::MEMORY_UTILIZATION);
        assert_eq!(u("0.9"), Ok(0.9));
        assert!(u("NaN").is_err());
        assert!(u("1.5").is_err());
    }
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct MigCmd {
    #[command(subcommand)]
    pub action: Option<MigAction>,
    /// Fleet workload file (`kind = "fleet"`, TOML, or JSON with a .json
    /// extension): services packed onto MIG slices; see docs/workload.md.
    #[arg(required = true, value_name = "FLEET")]
    pub fleet: Option<PathBuf>,
    /// Pack onto this GPU only (default: every MIG-capable GPU the
    /// constraints allow; the cheapest wins).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Calibration table (default: the bundled data/calibration.csv).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Skip the simulation of every service in its slices (analytical p99s only).
    #[arg(long)]
    pub no_verify: bool,
    /// Requests per service simulation.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_FLEET_VERIFY_REQUESTS, value_parser = whole::<u64>(VERIFY_REQUESTS))]
    pub verify_requests: u64,
    /// Print the plan as a file a deployment tool takes: mig-parted (the NVIDIA
    /// mig-parted config, one named config per node layout) or k8s (per service a
    /// Deployment requesting its MIG device, `nvidia.com/mig-3g.40gb`, and a Service).
    #[arg(long, value_enum, value_name = "KIND", conflicts_with = "json")]
    pub export: Option<MigExportArg>,
}

/// What `gpuplan mig FLEET --export` writes.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum MigExportArg {
    /// NVIDIA mig-parted config (YAML, schema v1).
    MigParted,
    /// Kubernetes Deployments and Services (device plugin, mixed strategy).
    K8s,
}

#[derive(Debug, Subcommand)]
pub enum MigAction {
    /// Every valid layout of one GPU's MIG slices (the full ones by default),
    /// or the check of one combination.
    Layouts(MigLayoutsCmd),
}

#[derive(Debug, Args)]
pub struct MigLayoutsCmd {
    /// The GPU (any name or alias the catalog knows, e.g. A100-80GB, H100).
    #[arg(long)]
    pub gpu: String,
    /// Check one combination instead, as profile@start items (start on the
    /// memory-slice axis as `nvidia-smi mig -lgipp` counts it), e.g.
    /// 3g.40gb@4,2g.20gb@2,1g.10gb@0,1g.10gb@1; exit 2 with the reasons when invalid.
    #[arg(long, value_name = "LAYOUT")]
    pub check: Option<String>,
    /// List partial layouts too (the count is always printed).
    #[arg(long)]
    pub partial: bool,
    /// Count and list the +me / +gfx / -me variants too (default: base profiles, as mig-parted).
    #[arg(long)]
    pub variants: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}
