//! The `/v1` handlers: parse the request, run the façade on the blocking
//! pool, and answer with the JSON the CLI prints for the same input.

use crate::error::{json_ok, json_text, ApiError, ApiResult};
use crate::Shared;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use gpuplan_app::NonLlmEstimateRequest;
use gpuplan_app::{
    catalog, plan_document, BenchmarkSet, EstimateOutcome, EstimateRequest, ExportFormat,
    ExportedFile, FieldNames, FitRequest, PlanDocument, PlanSettings, WorkloadInput,
};
use gpuplan_catalog::BenchmarkKind;
use gpuplan_core::nonllm::NonLlmEstimateOutcome;
use gpuplan_core::WorkloadFormat;
use serde::{Deserialize, Serialize};

/// The request body as text; 413 past the limit, 400 when not UTF-8.
fn body_text(state: &Shared, body: Result<Bytes, BytesRejection>) -> Result<String, ApiError> {
    let bytes = body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!(
                    "request body: larger than the limit of {} bytes",
                    state.config.body_limit_bytes
                ),
            )
        } else {
            ApiError::new(r.status(), "bad_input", r.body_text())
        }
    })?;
    String::from_utf8(bytes.to_vec())
        .map_err(|_| ApiError::bad_field("body", "request body: expected UTF-8 text"))
}

/// The workload syntax from `Content-Type`: JSON (default) or TOML.
fn workload_syntax(headers: &HeaderMap) -> Result<WorkloadFormat, ApiError> {
    let value = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let mime = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "application/json" | "" => Ok(WorkloadFormat::Json),
        "application/toml" | "text/toml" | "text/x-toml" => Ok(WorkloadFormat::Toml),
        other => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("Content-Type `{other}`: expected application/json or application/toml"),
        )),
    }
}

/// The query parameters, or 400 naming what is wrong.
fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(v)| v).map_err(|r| {
        let mut e = ApiError::new(StatusCode::BAD_REQUEST, "bad_input", r.body_text());
        e.body.error.field = Some("query".into());
        e
    })
}

/// A JSON body parsed into `T`, or 400 naming the field.
fn json_body<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let message = format!("request body: {}: {}", path, e.inner());
        if path == "." {
            ApiError::new(StatusCode::BAD_REQUEST, "bad_input", message)
        } else {
            ApiError::bad_field(&path, message)
        }
    })
}

/// Runs CPU-heavy work on the blocking pool, at most `max_concurrent` at a
/// time: 503 when no slot frees within the queue timeout, 504 past the
/// request timeout.
async fn blocking<F>(state: &Shared, work: F) -> ApiResult
where
    F: FnOnce(&crate::State) -> ApiResult + Send + 'static,
{
    let permit = tokio::time::timeout(
        state.config.queue_timeout,
        state.permits.clone().acquire_owned(),
    )
    .await
    .map_err(|_| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "every planning slot is busy: retry later",
        )
    })?
    .map_err(|_| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "the server is shutting down",
        )
    })?;
    let s = state.clone();
    let task = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        work(&s)
    });
    match tokio::time::timeout(state.config.request_timeout, task).await {
        Err(_) => Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            format!(
                "the request took longer than {} s",
                state.config.request_timeout.as_secs_f64()
            ),
        )),
        Ok(Err(_)) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error: the computation panicked (a bug in gpuplan: please report the request)",
        )),
        Ok(Ok(response)) => response,
    }
}

/// The infeasible answer: 422 with the report and its hint.
fn infeasible(doc_json: String, hint: Option<&str>) -> ApiError {
    let report = serde_json::from_str(&doc_json).ok();
    let message = match hint {
        Some(h) => format!("no feasible plan. Hint: {h}."),
        None => "no feasible plan: the report lists why each candidate was rejected".into(),
    };
    ApiError::infeasible(message, report)
}

/// `POST /v1/plan`: the ranked plans of a workload (inference or training).
#[utoipa::path(
    post,
    path = "/v1/plan",
    params(PlanQuery),
    request_body(content = Object, description = "A workload (docs/workload.md) as JSON, or as TOML with Content-Type: application/toml", content_type = "application/json"),
    responses(
        (status = 200, description = "The report `gpuplan plan --json` prints, byte for byte", body = Object),
        (status = 400, description = "Bad input: the field and what is expected", body = crate::ErrorBody),
        (status = 413, description = "Body over the limit", body = crate::ErrorBody),
        (status = 422, description = "No feasible plan: `report` holds the rejection reasons", body = crate::ErrorBody),
    )
)]
pub async fn plan(
    State(state): State<Shared>,
    headers: HeaderMap,
    q: Result<Query<PlanQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let settings = query(q)?.settings();
    let input = WorkloadInput::from_request(body_text(&state, body)?, workload_syntax(&headers)?);
    blocking(&state, move |s| {
        let doc = plan_document(&s.catalog, &s.calibration, &s.training, &input, settings)?;
        let text = doc.to_json()?;
        if doc.is_empty() {
            return Err(infeasible(text, doc.hint()));
        }
        Ok(json_text(StatusCode::OK, text))
    })
    .await
}

/// Query of `/v1/plan`: what the CLI's `--top`, `--verify`, `--verify-requests` set.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct PlanQuery {
    /// Plans shown (default 10).
    pub top: Option<usize>,
    /// Plans simulated at peak (default 5; 0 = none).
    pub verify: Option<usize>,
    /// Requests per simulation (default 20000).
    pub verify_requests: Option<u64>,
}

impl PlanQuery {
    fn settings(self) -> PlanSettings {
        let d = PlanSettings::default();
        PlanSettings {
            top: self.top.unwrap_or(d.top),
            verify: self.verify.unwrap_or(d.verify),
            verify_requests: self.verify_requests.unwrap_or(d.verify_requests),
        }
    }
}

/// Query of `/v1/plan/curves`.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct CurvesQuery {
    /// Curves for the first N plans (default 3, at most 10).
    pub top: Option<usize>,
    /// As for `/v1/plan`.
    pub verify: Option<usize>,
    /// As for `/v1/plan`.
    pub verify_requests: Option<u64>,
}

/// The inference workload and its verified ranking, or 400 for a training one.
fn inference_document(
    s: &crate::State,
    input: &WorkloadInput,
    settings: PlanSettings,
    what: &str,
) -> Result<Box<(gpuplan_core::InferenceWorkload, gpuplan_core::PlanReport)>, ApiError> {
    match plan_document(&s.catalog, &s.calibration, &s.training, input, settings)? {
        PlanDocument::Inference(b) if b.1.plans.is_empty() => {
            let text = gpuplan_app::to_json(&b.1)?;
            Err(infeasible(text, b.1.hint.as_deref()))
        }
        PlanDocument::Inference(b) => Ok(b),
        PlanDocument::Service(b) => Err(gpuplan_app::llm_only(&b.1, what).into()),
        PlanDocument::Training(_) => Err(ApiError::bad_field(
            "kind",
            format!("kind = \"training\": {what} are computed for inference plans"),
        )),
    }
}

/// `POST /v1/plan/curves`: p99 TTFT/TPOT/end-to-end vs arrival rate for the top plans.
#[utoipa::path(
    post,
    path = "/v1/plan/curves",
    params(CurvesQuery),
    request_body(content = Object, description = "An inference workload, as for /v1/plan"),
    responses(
        (status = 200, description = "One curve per plan, from light load to saturation", body = Object),
        (status = 400, description = "Bad input", body = crate::ErrorBody),
        (status = 422, description = "No feasible plan", body = crate::ErrorBody),
    )
)]
pub async fn curves(
    State(state): State<Shared>,
    headers: HeaderMap,
    q: Result<Query<CurvesQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let q = query(q)?;
    let plans = q.top.unwrap_or(3);
    if !(1..=10).contains(&plans) {
        return Err(ApiError::bad_field(
            "top",
            format!("top {plans}: expected a whole number from 1 to 10"),
        ));
    }
    let settings = PlanQuery {
        top: None,
        verify: q.verify,
        verify_requests: q.verify_requests,
    }
    .settings();
    let input = WorkloadInput::from_request(body_text(&state, body)?, workload_syntax(&headers)?);
    blocking(&state, move |s| {
        let b = inference_document(s, &input, settings, "load curves")?;
        let curves = gpuplan_app::load_curves(&s.catalog, &s.calibration, &b.0, &b.1, plans)?;
        json_ok(&curves)
    })
    .await
}

/// Query of `/v1/explain`.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ExplainQuery {
    /// The plan number, as `/v1/plan` ranks them.
    pub rank: usize,
    /// As for `/v1/plan`.
    pub verify: Option<usize>,
    /// As for `/v1/plan`.
    pub verify_requests: Option<u64>,
}

/// `POST /v1/explain` answer: the plan and its derivation in words.
#[derive(Debug, Serialize)]
struct Explained<'a, P: Serialize> {
    plan: &'a P,
    text: String,
}

/// `POST /v1/explain`: one plan's derivation, as `gpuplan plan W --explain N` prints it.
#[utoipa::path(
    post,
    path = "/v1/explain",
    params(ExplainQuery),
    request_body(content = Object, description = "A workload, as for /v1/plan"),
    responses(
        (status = 200, description = "`{plan, text}`: the plan (as `--explain N --json`) and the derivation text", body = Object),
        (status = 400, description = "Bad input (or no plan of that rank)", body = crate::ErrorBody),
        (status = 422, description = "No feasible plan", body = crate::ErrorBody),
    )
)]
pub async fn explain(
    State(state): State<Shared>,
    headers: HeaderMap,
    q: Result<Query<ExplainQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let q = query(q)?;
    let d = PlanSettings::default();
    let settings = PlanSettings {
        top: d.top.max(q.rank),
        verify: q.verify.unwrap_or(d.verify),
        verify_requests: q.verify_requests.unwrap_or(d.verify_requests),
    };
    let input = WorkloadInput::from_request(body_text(&state, body)?, workload_syntax(&headers)?);
    blocking(&state, move |s| {
        let doc = plan_document(&s.catalog, &s.calibration, &s.training, &input, settings)?;
        if doc.is_empty() {
            return Err(infeasible(doc.to_json()?, doc.hint()));
        }
        match &doc {
            PlanDocument::Service(b) => Err(gpuplan_app::llm_only(&b.1, "explanations").into()),
            PlanDocument::Inference(b) => {
                let p = gpuplan_app::plan_by_rank(&b.1, q.rank, "rank")?;
                json_ok(&Explained {
                    plan: p,
                    text: gpuplan_app::explain_text(&b.0, p),
                })
            }
            PlanDocument::Training(b) => {
                let p = gpuplan_app::training_plan_by_rank(&b.1, q.rank, "rank")?;
                json_ok(&Explained {
                    plan: p,
                    text: gpuplan_app::training_explain_text(&b.0, p),
                })
            }
        }
    })
    .await
}

/// Query of `/v1/export`.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    /// `k8s`, `skypilot` or `engine`.
    #[param(value_type = String)]
    pub kind: ExportFormat,
    /// The plan number (default 1).
    pub plan: Option<usize>,
    /// As for `/v1/plan`.
    pub verify: Option<usize>,
    /// As for `/v1/plan`.
    pub verify_requests: Option<u64>,
}

/// `POST /v1/export`: plan N as deployment files.
#[utoipa::path(
    post,
    path = "/v1/export",
    params(ExportQuery),
    request_body(content = Object, description = "A workload, as for /v1/plan"),
    responses(
        (status = 200, description = "`{files: [{name, contents}]}`: the files `gpuplan plan W --export KIND --plan N` writes", body = Object),
        (status = 400, description = "Bad input", body = crate::ErrorBody),
        (status = 422, description = "No feasible plan", body = crate::ErrorBody),
    )
)]
pub async fn export(
    State(state): State<Shared>,
    headers: HeaderMap,
    q: Result<Query<ExportQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let q = query(q)?;
    let settings = PlanQuery {
        top: None,
        verify: q.verify,
        verify_requests: q.verify_requests,
    }
    .settings();
    let input = WorkloadInput::from_request(body_text(&state, body)?, workload_syntax(&headers)?);
    blocking(&state, move |s| {
        let files = gpuplan_app::export_plan(
            &s.catalog,
            &s.calibration,
            &s.training,
            &input,
            q.plan.unwrap_or(1),
            q.kind,
            settings,
        )?;
        let files: Vec<ExportedFile> = files
            .into_iter()
            .map(|f| ExportedFile {
                name: f.name,
                contents: f.contents,
            })
            .collect();
        json_ok(&serde_json::json!({ "files": files }))
    })
    .await
}

/// Query of `/v1/simulate`: what `gpuplan simulate W`'s flags set (a trace or
/// a rate table cannot be given: they are files).
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct SimulateQuery {
    /// Which plan to replay (default 1, the cheapest).
    pub plan: Option<usize>,
    /// Requests to simulate (default 100000).
    pub requests: Option<u64>,
    /// Simulated seconds of arrivals instead of a request count.
    pub duration: Option<f64>,
    /// Seed of the synthetic traffic (default 1).
    pub seed: Option<u64>,
    /// Share of the arrivals left out of the statistics (default 0.1).
    pub warmup: Option<f64>,
    /// `least-outstanding` (default), `round-robin` or `least-kv`.
    pub router: Option<String>,
    /// `diurnal`: a daily curve from the workload's peak and mean rates.
    pub rate_curve: Option<String>,
    /// Closed-loop users instead of open arrivals.
    pub users: Option<u32>,
    /// Mean think time of a closed-loop user, s.
    pub think_time: Option<f64>,
    /// Scale replicas with the load.
    pub autoscale: Option<bool>,
    /// Fewest replicas when autoscaling.
    pub min_replicas: Option<u32>,
    /// Most replicas when autoscaling.
    pub max_replicas: Option<u32>,
    /// Requests outstanding per replica the autoscaler aims at.
    pub target_outstanding: Option<f64>,
    /// Seconds from a scale-up decision to the replica serving.
    pub scale_up_delay: Option<f64>,
    /// Seconds after a scaling step before a scale-down.
    pub cooldown: Option<f64>,
    /// Replicas lost per replica-hour.
    pub failures_per_hour: Option<f64>,
    /// Seconds until a lost replica's replacement serves.
    pub replacement_delay: Option<f64>,
    /// A request that finds no replica up gives up after this many seconds.
    pub request_timeout: Option<f64>,
    /// Seconds between time-series rows (the result then carries the series).
    pub sample_every: Option<f64>,
}

impl SimulateQuery {
    fn settings(self) -> Result<gpuplan_app::SimulateSettings, ApiError> {
        let d = gpuplan_app::SimulateSettings::default();
        let router = match self.router.as_deref() {
            None | Some("least-outstanding") => gpuplan_sim::Router::LeastOutstanding,
            Some("round-robin") => gpuplan_sim::Router::RoundRobin,
            Some("least-kv") => gpuplan_sim::Router::LeastKv,
            Some(other) => {
                return Err(ApiError::bad_field(
                    "router",
                    format!(
                        "router `{other}`: expected least-outstanding, round-robin or least-kv"
                    ),
                ))
            }
        };
        let rate_curve = match self.rate_curve.as_deref() {
            None => None,
            Some("diurnal") => Some(gpuplan_app::RateCurveSetting::Diurnal),
            Some(other) => {
                return Err(ApiError::bad_field(
                    "rate_curve",
                    format!(
                    "rate_curve `{other}`: expected diurnal (rate tables are files: use the CLI)"
                ),
                ))
            }
        };
        if self.requests.is_some() && self.duration.is_some() {
            return Err(ApiError::bad_field(
                "duration",
                "requests and duration: give one of them",
            ));
        }
        Ok(gpuplan_app::SimulateSettings {
            requests: self.requests,
            duration: self.duration,
            seed: self.seed.unwrap_or(d.seed),
            warmup: self.warmup.unwrap_or(d.warmup),
            router,
            rate_curve,
            trace: None,
            users: self.users,
            think_time: self.think_time.unwrap_or(d.think_time),
            autoscale: self.autoscale.unwrap_or(false),
            min_replicas: self.min_replicas,
            max_replicas: self.max_replicas,
            target_outstanding: self.target_outstanding,
            scale_up_delay: self.scale_up_delay,
            cooldown: self.cooldown,
            failures_per_hour: self.failures_per_hour,
            replacement_delay: self.replacement_delay,
            request_timeout: self.request_timeout,
            sample_every: self.sample_every,
        })
    }
}

/// `POST /v1/simulate`: plan N replayed in the discrete-event simulator.
#[utoipa::path(
    post,
    path = "/v1/simulate",
    params(SimulateQuery),
    request_body(content = Object, description = "An inference workload, as for /v1/plan"),
    responses(
        (status = 200, description = "What `gpuplan simulate W --json` prints with the same settings, byte for byte", body = Object),
        (status = 400, description = "Bad input", body = crate::ErrorBody),
        (status = 422, description = "No feasible plan: `report` holds the rejection reasons", body = crate::ErrorBody),
    )
)]
pub async fn simulate(
    State(state): State<Shared>,
    headers: HeaderMap,
    q: Result<Query<SimulateQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let q = query(q)?;
    let rank = q.plan.unwrap_or(1);
    let settings = q.settings()?;
    let input = WorkloadInput::from_request(body_text(&state, body)?, workload_syntax(&headers)?);
    blocking(&state, move |s| match gpuplan_app::prepare_plan_simulation(
        &s.catalog,
        &s.calibration,
        &input,
        rank,
        &settings,
    )? {
        gpuplan_app::PlanSimulationSetup::Infeasible(b) => {
            let text = gpuplan_app::to_json(&b.1)?;
            Err(infeasible(text, b.1.hint.as_deref()))
        }
        gpuplan_app::PlanSimulationSetup::Ready(sim) => {
            let result = sim.run(&mut |_| {})?;
            json_ok(&result)
        }
    })
    .await
}

/// Query of `/v1/mig`: what `gpuplan mig FLEET`'s flags set.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct MigQuery {
    /// Only this MIG-capable GPU (any alias).
    pub gpu: Option<String>,
    /// `true`: skip the simulations (analytical p99s only).
    pub no_verify: Option<bool>,
    /// Requests per service simulation (default 5000).
    pub verify_requests: Option<u64>,
}

/// `POST /v1/mig`: a fleet of services packed onto MIG slices.
#[utoipa::path(
    post,
    path = "/v1/mig",
    params(MigQuery),
    request_body(content = Object, description = "A fleet (`kind = \"fleet\"`, docs/fleet.md) as JSON, or as TOML with Content-Type: application/toml"),
    responses(
        (status = 200, description = "What `gpuplan mig FLEET --json` prints, byte for byte", body = Object),
        (status = 400, description = "Bad input", body = crate::ErrorBody),
        (status = 422, description = "No MIG plan: `report` holds the reasons", body = crate::ErrorBody),
    )
)]
pub async fn mig(
    State(state): State<Shared>,
    headers: HeaderMap,
    q: Result<Query<MigQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let q = query(q)?;
    let settings = gpuplan_app::FleetSettings {
        gpu: q.gpu,
        no_verify: q.no_verify.unwrap_or(false),
        verify_requests: q.verify_requests,
    };
    let input = WorkloadInput::from_request(body_text(&state, body)?, workload_syntax(&headers)?);
    blocking(&state, move |s| {
        let (report, _) = gpuplan_app::fleet_plan(&s.catalog, &s.calibration, &input, &settings)?;
        let text = gpuplan_app::to_json(&report)?;
        if !report.feasible {
            let reasons = report.reasons.join("; ");
            let mut e = infeasible(text, None);
            e.body.error.message = format!("no MIG plan: {reasons}");
            return Err(e);
        }
        Ok(json_text(StatusCode::OK, text))
    })
    .await
}

/// `POST /v1/estimate`: one replica's TTFT, TPOT and throughput; for an
/// image-generation, speech or encoder model (by `model.id`), one request
/// alone, a batch and the best batch in its family's units.
#[utoipa::path(
    post,
    path = "/v1/estimate",
    request_body(content = Object, description = "LLMs: `{model: {id}, replica: {gpu, count, tp, pp, precision, kv_precision, variant}, input_len, output_len, concurrency?, max_num_seqs?, max_batched_tokens?, memory_utilization?, beam_width? (beam search, TensorRT-LLM only)}`. Image, speech and encoder models: `{model: {id}, replica: {gpu, count?, precision?}, concurrency?, steps?, resolution?, no_guidance?, audio_seconds?, beam?, input_len?}`"),
    responses(
        (status = 200, description = "What `gpuplan estimate --json` prints", body = Object),
        (status = 400, description = "Bad input", body = crate::ErrorBody),
        (status = 422, description = "Does not fit: `report` holds the memory", body = crate::ErrorBody),
    )
)]
pub async fn estimate(
    State(state): State<Shared>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let text = body_text(&state, body)?;
    if let Some(id) = nonllm_id(&text)? {
        let req: NonLlmEstimateRequest = json_body(&text)?;
        return blocking(&state, move |s| {
            let model = gpuplan_app::nonllm_model_named(&id)?;
            match gpuplan_app::run_nonllm_estimate(
                &s.catalog,
                &s.calibration,
                model.as_ref(),
                &req,
                &FieldNames::API,
            )? {
                NonLlmEstimateOutcome::Estimated(e) => json_ok(&e),
                NonLlmEstimateOutcome::DoesNotFit(d) => Err(ApiError::infeasible(
                    format!("does not fit: {}", d.reason),
                    serde_json::to_value(&d).ok(),
                )),
            }
        })
        .await;
    }
    let req: EstimateRequest = json_body(&text)?;
    blocking(&state, move |s| {
        match gpuplan_app::run_estimate(&s.catalog, &s.calibration, None, &req, &FieldNames::API)? {
            EstimateOutcome::Estimated(report) => json_ok(&report),
            EstimateOutcome::DoesNotFit(d) => Err(ApiError::infeasible(
                format!("does not fit: {}", d.reason.clone().unwrap_or_default()),
                serde_json::to_value(&d).ok(),
            )),
        }
    })
    .await
}

/// The `model.id` of a JSON body when it names an image-generation, speech
/// or encoder model.
fn nonllm_id(text: &str) -> Result<Option<String>, ApiError> {
    let value: serde_json::Value = json_body(text)?;
    let Some(id) = value.pointer("/model/id").and_then(|v| v.as_str()) else {
        return Ok(None);
    };
    Ok(gpuplan_app::nonllm_model_named(id)?.map(|m| m.id))
}

/// `POST /v1/fit`: does the model fit, and how is each GPU's memory used.
#[utoipa::path(
    post,
    path = "/v1/fit",
    request_body(content = Object, description = "`{model: {id}, replica: {...}, context?, memory_utilization?, max_batched_tokens?, training?: {dp, zero, micro_batch, micro_batches, seq_len, recompute, method, lora_rank, ...}}`"),
    responses(
        (status = 200, description = "What `gpuplan fit --json` prints (it fits)", body = Object),
        (status = 400, description = "Bad input", body = crate::ErrorBody),
        (status = 422, description = "Does not fit: `report` is the same document", body = crate::ErrorBody),
    )
)]
pub async fn fit(State(state): State<Shared>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let req: FitRequest = json_body(&body_text(&state, body)?)?;
    blocking(&state, move |s| {
        let report = gpuplan_app::run_fit(&s.catalog, None, &req, &FieldNames::API)?;
        if report.fits {
            json_ok(&report)
        } else {
            Err(ApiError::infeasible(
                format!(
                    "does not fit: {}",
                    report.reason.clone().unwrap_or_default()
                ),
                serde_json::to_value(&report).ok(),
            ))
        }
    })
    .await
}

/// Query of `/v1/validate`.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ValidateQuery {
    /// `dev` (default), `mlperf` or `holdout` (never fitted on).
    #[param(value_type = Option<String>)]
    pub set: Option<BenchmarkSet>,
    /// Only rows of this kind: `inference`, `training` or `memory`.
    #[param(value_type = Option<String>)]
    pub kind: Option<KindQuery>,
    /// Accuracy per segment, as `validate --by`: a comma-separated list of
    /// `gpu`, `family`, `engine`, `source`, `precision`, `metric`, `model`,
    /// `scenario`, `kind` (the report's `by` field).
    pub by: Option<String>,
}

/// Benchmark row kinds in a query.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KindQuery {
    /// Serving throughput and latency rows.
    Inference,
    /// Training throughput rows.
    Training,
    /// Memory rows.
    Memory,
}

/// `GET /v1/validate`: predictions against the bundled published measurements.
#[utoipa::path(
    get,
    path = "/v1/validate",
    params(ValidateQuery),
    responses(
        (status = 200, description = "What `gpuplan validate [--set S] [--kind K] [--by B] --json` prints", body = Object),
        (status = 400, description = "Bad query", body = crate::ErrorBody),
    )
)]
pub async fn validate(
    State(state): State<Shared>,
    q: Result<Query<ValidateQuery>, QueryRejection>,
) -> ApiResult {
    let q = query(q)?;
    blocking(&state, move |s| {
        let kind = q.kind.map(|k| match k {
            KindQuery::Inference => BenchmarkKind::Inference,
            KindQuery::Training => BenchmarkKind::Training,
            KindQuery::Memory => BenchmarkKind::Memory,
        });
        let by = gpuplan_app::parse_groupings(q.by.as_deref().unwrap_or_default())?;
        let report = gpuplan_app::validate_text(
            &s.catalog,
            &s.calibration,
            &s.training,
            q.set.unwrap_or_default().source(),
            kind,
            &by,
        )?;
        json_ok(&report)
    })
    .await
}

/// `GET /v1/examples`: the bundled example workloads as JSON.
#[utoipa::path(get, path = "/v1/examples", responses((status = 200, description = "`[{name, workload}]`", body = Object)))]
pub async fn examples() -> ApiResult {
    json_ok(&gpuplan_app::examples())
}

/// Query of `/v1/catalog/gpus`.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct GpusQuery {
    /// Only GPUs whose name, vendor or architecture contains this text.
    pub filter: Option<String>,
}

/// `GET /v1/catalog/gpus`: accelerator specs.
#[utoipa::path(get, path = "/v1/catalog/gpus", params(GpusQuery), responses((status = 200, description = "What `gpuplan catalog gpus --json` prints", body = Object)))]
pub async fn catalog_gpus(
    State(state): State<Shared>,
    q: Result<Query<GpusQuery>, QueryRejection>,
) -> ApiResult {
    let q = query(q)?;
    json_ok(&catalog::gpus(&state.catalog, q.filter.as_deref()))
}

/// Query of `/v1/catalog/offerings`.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct OfferingsQuery {
    /// Only this GPU (any alias).
    pub gpu: Option<String>,
    /// Only this provider.
    pub provider: Option<String>,
    /// Only regions matching this glob (`eu-*`).
    pub region: Option<String>,
    /// At most this many rows (0 = all; default 50).
    pub limit: Option<usize>,
}

/// `GET /v1/catalog/offerings`: cloud offerings, cheapest first.
#[utoipa::path(get, path = "/v1/catalog/offerings", params(OfferingsQuery), responses((status = 200, description = "What `gpuplan catalog offerings --json` prints", body = Object), (status = 400, description = "Unknown GPU or provider, bad glob", body = crate::ErrorBody)))]
pub async fn catalog_offerings(
    State(state): State<Shared>,
    q: Result<Query<OfferingsQuery>, QueryRejection>,
) -> ApiResult {
    let q = query(q)?;
    let filter = catalog::OfferingFilter {
        gpu: q.gpu,
        provider: q.provider,
        region: q.region,
        limit: q.limit,
    };
    json_ok(&catalog::offerings(&state.catalog, &filter)?)
}

/// `GET /v1/catalog/models`: model architectures.
#[utoipa::path(get, path = "/v1/catalog/models", responses((status = 200, description = "What `gpuplan catalog models --json` prints", body = Object)))]
pub async fn catalog_models(State(state): State<Shared>) -> ApiResult {
    json_ok(&catalog::models(&state.catalog))
}

/// Query of `/v1/catalog/regions`.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct RegionsQuery {
    /// Only this provider.
    pub provider: Option<String>,
}

/// `GET /v1/catalog/regions`: regions, where they are, and the `constraints.geo` codes they satisfy.
#[utoipa::path(get, path = "/v1/catalog/regions", params(RegionsQuery), responses((status = 200, description = "What `gpuplan catalog regions --json` prints", body = Object), (status = 400, description = "Unknown provider", body = crate::ErrorBody)))]
pub async fn catalog_regions(
    State(state): State<Shared>,
    q: Result<Query<RegionsQuery>, QueryRejection>,
) -> ApiResult {
    let q = query(q)?;
    json_ok(&catalog::regions(&state.catalog, q.provider.as_deref())?)
}

/// `GET /openapi.json`.
pub async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi_json(),
    )
        .into_response()
}

/// `GET /healthz`.
#[utoipa::path(get, path = "/healthz", responses((status = 200, description = "`{\"status\": \"ok\"}`", body = Object)))]
pub async fn healthz() -> Response {
    json_text(StatusCode::OK, r#"{"status": "ok"}"#.into())
}

/// `GET /metrics`: Prometheus text format.
#[utoipa::path(get, path = "/metrics", responses((status = 200, description = "Requests by route and status, errors by status, latency histograms; resident memory and, where counted, live heap bytes", body = String, content_type = "text/plain")))]
pub async fn metrics(State(state): State<Shared>) -> Response {
    let mut text = state.metrics.render();
    text.push_str(&crate::metrics::memory_gauges(
        crate::metrics::resident_memory_bytes(),
        state.config.heap_live_bytes.map(|live| live()),
    ));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// Any other path: 404 as JSON.
pub async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "{}: no such endpoint (GET /openapi.json lists them)",
            uri.path()
        ),
    )
}

/// A panic inside a handler: 500 as JSON (the process keeps serving).
pub fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "internal error (a bug in gpuplan: please report the request)",
    )
    .into_response()
}
