//! Planning a non-LLM service over the catalog: for each offering that
//! passes the constraints and each precision, the requests per second one GPU
//! sustains within the SLO ([`Setup::server_throughput`]), the GPUs and
//! instances the peak needs, and the price; ranked by USD per hour, with the
//! launch command of the serving stack the prediction assumed.

use super::cost::bundled_factors;
use super::service::{BatchTime, Request, Setup};
use super::workload::NonLlmWorkload;
use crate::calibration::Calibration;
use crate::plan::{RejectReason, Rejection};
use gpuplan_catalog::{Catalog, GpuSpec, NonLlmFamily, NonLlmModel, Offering, Precision};
use serde::Serialize;
use std::collections::BTreeMap;

/// Most GPUs one plan may use (beyond any single service's fleet).
pub const MAX_PLAN_GPUS: f64 = 100_000.0;

/// One ranked deployment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NonLlmPlan {
    /// Rank, 1 = cheapest.
    pub rank: usize,
    /// Provider.
    pub provider: String,
    /// Region.
    pub region: String,
    /// Instance type.
    pub instance_type: String,
    /// GPU.
    pub gpu: String,
    /// GPUs per instance.
    pub gpus_per_instance: u32,
    /// Instances to buy.
    pub instances: u64,
    /// GPUs serving (one replica each).
    pub replicas: u64,
    /// Weight precision of the main network.
    pub precision: Precision,
    /// Batch each GPU runs.
    pub batch: u64,
    /// Requests per second one GPU sustains within the SLO, at the utilisation cap.
    pub requests_per_s_per_gpu: f64,
    /// Time of one batch, ms.
    pub batch_ms: f64,
    /// Where the batch time goes, ms per part.
    pub batch_parts_ms: Vec<(String, f64)>,
    /// Memory of one replica, GiB.
    pub memory_gib: f64,
    /// USD per hour, whole deployment.
    pub usd_per_hour: f64,
    /// Spot price used.
    pub spot: bool,
    /// Launch command of the serving stack assumed.
    pub launch: String,
}

/// The plans and why the others were rejected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NonLlmPlanReport {
    /// Workload name.
    pub workload: String,
    /// Model id.
    pub model: String,
    /// Family.
    pub family: NonLlmFamily,
    /// Cheapest first, one per provider × instance type × precision.
    pub plans: Vec<NonLlmPlan>,
    /// Rejected candidates by reason, with one example each.
    pub rejected: BTreeMap<RejectReason, Rejection>,
}

/// A replica's capacity on a GPU at a precision, or why it has none.
type Capacity = Result<(f64, BatchTime, f64), (RejectReason, String)>;

/// Plans `w` over every offering of the catalog; `top` plans are kept.
pub fn plan_nonllm(
    catalog: &Catalog,
    w: &NonLlmWorkload,
    cal: &Calibration,
    top: usize,
) -> NonLlmPlanReport {
    let factors = bundled_factors();
    let mut rejected = crate::plan::Rejections::default();
    let offerings = crate::plan::passing_offerings(catalog, &w.constraints, &mut rejected);
    // One capacity per GPU × precision, shared by its offerings.
    let mut capacity: BTreeMap<(String, Precision), Capacity> = BTreeMap::new();
    let mut plans: Vec<NonLlmPlan> = Vec::new();
    for c in &offerings {
        for &precision in &w.precisions {
            let cap = capacity
                .entry((c.gpu.name.clone(), precision))
                .or_insert_with(|| replica_capacity(w, c.gpu, precision, cal, &factors))
                .clone();
            match cap
                .and_then(|cap| price(w, c.offering, c.gpu, c.gpus_per_instance, precision, cap))
            {
                Ok(p) => plans.push(p),
                Err((reason, example)) => rejected.add(reason, 1, None, || example),
            }
        }
    }
    plans.sort_by(|a, b| {
        a.usd_per_hour
            .total_cmp(&b.usd_per_hour)
            .then(a.region.cmp(&b.region))
    });
    let mut seen = std::collections::BTreeSet::new();
    plans.retain(|p| seen.insert((p.provider.clone(), p.instance_type.clone(), p.precision)));
    plans.truncate(top);
    for (i, p) in plans.iter_mut().enumerate() {
        p.rank = i + 1;
    }
    NonLlmPlanReport {
        workload: w.name.clone(),
        model: w.model.id.clone(),
        family: w.model.family,
        plans,
        rejected: rejected.into_map(),
    }
}

/// Requests per second one GPU sustains (within the p99 bound when there is
/// one, at the utilisation cap), its batch and memory.
fn replica_capacity(
    w: &NonLlmWorkload,
    gpu: &GpuSpec,
    precision: Precision,
    cal: &Calibration,
    factors: &Calibration,
) -> Capacity {
    let setup = Setup {
        model: &w.model,
        gpu,
        precision,
        cal,
        factors,
    };
    let units = w.units_per_request as f64;
    let unsupported = |why: String| {
        (
            RejectReason::PrecisionUnsupported,
            format!("{} {precision}: {why}", gpu.name),
        )
    };
    setup.batch_time(&w.unit, 1).map_err(unsupported)?;
    let memory = setup.memory(&w.unit, 1);
    if !memory.fits {
        return Err((
            RejectReason::DoesNotFit,
            format!(
                "{} {precision}: needs {:.1} GiB, has {:.1}",
                gpu.name, memory.total_gib, memory.usable_gib
            ),
        ));
    }
    let (units_per_s, t) = match w.latency_ms_p99 {
        // A request's units are served together: its windows or sequences
        // share the bound, so each unit gets the request's bound.
        Some(ms) => setup
            .server_throughput(&w.unit, 1, ms / 1000.0)
            .map_err(|why| (RejectReason::E2eSlo, why))?,
        None => setup
            .max_throughput(&w.unit)
            .map_err(|why| (RejectReason::DoesNotFit, why))?,
    };
    let memory_gib = setup.memory(&w.unit, t.batch).total_gib;
    Ok((
        units_per_s / units * w.constraints.max_utilization,
        t,
        memory_gib,
    ))
}

/// The deployment on one offering: GPUs for the peak (at least the minimum
/// replicas), whole instances, the price.
fn price(
    w: &NonLlmWorkload,
    o: &Offering,
    gpu: &GpuSpec,
    gpus_per_instance: u32,
    precision: Precision,
    (per_gpu, t, memory_gib): (f64, BatchTime, f64),
) -> Result<NonLlmPlan, (RejectReason, String)> {
    let gpus = (w.requests_per_s / per_gpu)
        .ceil()
        .max(f64::from(w.constraints.min_replicas));
    if !gpus.is_finite() || gpus > MAX_PLAN_GPUS {
        return Err((
            RejectReason::TooManyReplicas,
            format!("{}: {gpus} GPUs", gpu.name),
        ));
    }
    let instances = (gpus / f64::from(gpus_per_instance.max(1))).ceil();
    let spot_price = o.spot_price_per_hour.filter(|_| w.constraints.spot);
    let (hourly, spot) = match (o.price_per_hour, spot_price) {
        (Some(p), Some(s)) if s < p => (s, true),
        (Some(p), _) => (p, false),
        (None, Some(s)) => (s, true),
        (None, None) => {
            return Err((
                RejectReason::NoPrice,
                format!("{} {}", o.provider, o.instance_type),
            ))
        }
    };
    let usd_per_hour = instances * hourly;
    if let Some(max) = w.constraints.max_usd_per_hour {
        if usd_per_hour > max {
            return Err((
                RejectReason::OverBudget,
                format!(
                    "{} {} × {instances}: ${usd_per_hour:.2}/h > ${max}/h",
                    o.provider, o.instance_type
                ),
            ));
        }
    }
    Ok(NonLlmPlan {
        rank: 0,
        provider: o.provider.clone(),
        region: o.region.clone(),
        instance_type: o.instance_type.clone(),
        gpu: gpu.name.clone(),
        gpus_per_instance,
        instances: instances as u64,
        replicas: gpus as u64,
        precision,
        batch: t.batch,
        requests_per_s_per_gpu: per_gpu,
        batch_ms: t.total_s * 1e3,
        batch_parts_ms: t.parts.iter().map(|(n, s)| (n.clone(), s * 1e3)).collect(),
        memory_gib,
        usd_per_hour,
        spot,
        launch: launch_command(&w.model, gpu, &w.unit, precision, t.batch),
    })
}

/// The serving stack's command line with the settings the prediction assumed.
pub fn launch_command(
    model: &NonLlmModel,
    gpu: &GpuSpec,
    unit: &Request,
    precision: Precision,
    batch: u64,
) -> String {
    let dtype = if precision == Precision::Fp32 {
        "float32"
    } else {
        "float16"
    };
    match *unit {
        // NVIDIA's TensorRT diffusion pipelines (TensorRT/demo/Diffusion),
        // the engine the MLPerf SDXL submissions build on.
        Request::Image {
            resolution_px,
            steps,
            guidance,
        } => {
            let (script, version) = match model.id.as_str() {
                "sdxl-base-1.0" => ("demo_txt2img_xl.py", "xl-1.0"),
                "sd-1.5" => ("demo_txt2img.py", "1.5"),
                "sd-2-base" => ("demo_txt2img.py", "2.0-base"),
                "flux.1-dev" => ("demo_txt2img_flux.py", "flux.1-dev"),
                _ => ("demo_txt2img_flux.py", "flux.1-schnell"),
            };
            format!(
                "python3 {script} \"<prompt>\" --version {version} --height {resolution_px} \
                 --width {resolution_px} --denoising-steps {steps} --guidance-scale {} \
                 --batch-size {batch} --use-cuda-graph{}",
                if guidance { "5.0" } else { "0.0" },
                if precision == Precision::Fp8 {
                    " --fp8"
                } else {
                    ""
                },
            )
        }
        // vLLM's OpenAI-compatible transcription server.
        Request::Audio { .. } => format!(
            "vllm serve {} --dtype {dtype} --max-num-seqs {batch}",
            model.hf_repo
        ),
        // Hugging Face text-embeddings-inference, the image built for the GPU's architecture.
        Request::Text { seq_len } => format!(
            "docker run --gpus all -p 8080:80 ghcr.io/huggingface/text-embeddings-inference:{} \
             --model-id {} --dtype {dtype} --max-batch-tokens {}",
            tei_tag(gpu),
            model.hf_repo,
            (batch as f64 * seq_len).ceil().max(512.0) as u64
        ),
    }
}

/// The text-embeddings-inference 1.5 image tag for a GPU architecture (its
/// README: `turing-`, `86-` for sm86 Ampere, `89-` for Ada, `hopper-`; the
/// plain tag is sm80 Ampere and the default).
fn tei_tag(gpu: &GpuSpec) -> &'static str {
    let sm80 = ["A100", "A30", "A800"]
        .iter()
        .any(|p| gpu.name.starts_with(p));
    match crate::calibration::family(gpu) {
        "Turing" => "turing-1.5",
        "Ampere" if !sm80 => "86-1.5",
        "Ada" => "89-1.5",
        "Hopper" => "hopper-1.5",
        _ => "1.5",
    }
}
