//! gpuplan over HTTP (`gpuplan serve`): the façade's operations as a JSON
//! API under `/v1`, an OpenAPI document, Prometheus metrics, and the web page.
//! The server adds transport only: every answer comes from `gpuplan-app`, so
//! `POST /v1/plan` returns byte for byte what `gpuplan plan --json` prints.
//!
//! Safe by default: it binds to loopback, bounds the request body (413),
//! runs CPU-heavy work on the blocking pool behind a semaphore (503 when the
//! queue is full), times requests out (504), reads no file a request names,
//! shares nothing between requests but the read-only catalog, and stops
//! gracefully on SIGTERM or Ctrl-C.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! let catalog = gpuplan_app::load_catalog(&Default::default()).unwrap();
//! let state = gpuplan_server::State::new(catalog, gpuplan_server::ServerConfig::default());
//! gpuplan_server::serve(state).await
//! # }
//! ```

mod error;
mod handlers;
mod metrics;
mod openapi;
mod web;

pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use metrics::Metrics;
pub use openapi::openapi_json;
pub use web::{html_report, ReportData};

use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use gpuplan_catalog::Catalog;
use gpuplan_core::training::TrainingFactors;
use gpuplan_core::Calibration;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to bind (default 127.0.0.1:8080: loopback only).
    pub addr: SocketAddr,
    /// Largest request body, bytes (default 1 MiB); larger → 413.
    pub body_limit_bytes: usize,
    /// Longest a request may take, queueing included (default 30 s); → 504.
    pub request_timeout: Duration,
    /// Planning requests computed at once (default: the CPU count); the rest wait.
    pub max_concurrent: usize,
    /// Longest a request waits for a free slot before 503 (default 10 s).
    pub queue_timeout: Duration,
    /// Live heap bytes, where the binary's allocator counts them (reported
    /// in `/metrics` as `gpuplan_heap_live_bytes`).
    pub heap_live_bytes: Option<fn() -> usize>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            body_limit_bytes: 1 << 20,
            request_timeout: Duration::from_secs(30),
            max_concurrent: std::thread::available_parallelism().map_or(2, |n| n.get()),
            queue_timeout: Duration::from_secs(10),
            heap_live_bytes: None,
        }
    }
}

/// What every request reads: the catalog and calibration (read-only), the
/// concurrency bound and the metrics.
#[derive(Debug)]
pub struct State {
    /// The catalog, with the overrides given at start.
    pub catalog: Catalog,
    /// Inference efficiency factors.
    pub calibration: Calibration,
    /// Training efficiency factors.
    pub training: TrainingFactors,
    /// Limits and address.
    pub config: ServerConfig,
    /// Request counters and latencies.
    pub metrics: Metrics,
    /// Bounds the CPU-heavy requests in flight.
    pub(crate) permits: Arc<Semaphore>,
}

impl State {
    /// A server state over `catalog` with the bundled calibration.
    pub fn new(catalog: Catalog, config: ServerConfig) -> Arc<State> {
        Self::with_calibration(
            catalog,
            Calibration::bundled(),
            TrainingFactors::bundled(),
            config,
        )
    }

    /// A server state with the given calibration tables.
    pub fn with_calibration(
        catalog: Catalog,
        calibration: Calibration,
        training: TrainingFactors,
        config: ServerConfig,
    ) -> Arc<State> {
        let permits = Arc::new(Semaphore::new(config.max_concurrent.max(1)));
        Arc::new(State {
            catalog,
            calibration,
            training,
            config,
            metrics: Metrics::default(),
            permits,
        })
    }
}

/// Shared state of the handlers.
pub type Shared = Arc<State>;

/// Every route of the server.
pub fn router(state: Shared) -> Router {
    let limit = state.config.body_limit_bytes;
    let api = Router::new()
        .route("/v1/plan", post(handlers::plan))
        .route("/v1/plan/curves", post(handlers::curves))
        .route("/v1/explain", post(handlers::explain))
        .route("/v1/export", post(handlers::export))
        .route("/v1/mig", post(handlers::mig))
        .route("/v1/simulate", post(handlers::simulate))
        .route("/v1/estimate", post(handlers::estimate))
        .route("/v1/fit", post(handlers::fit))
        .route("/v1/validate", get(handlers::validate))
        .route("/v1/examples", get(handlers::examples))
        .route("/v1/catalog/gpus", get(handlers::catalog_gpus))
        .route("/v1/catalog/offerings", get(handlers::catalog_offerings))
        .route("/v1/catalog/models", get(handlers::catalog_models))
        .route("/v1/catalog/regions", get(handlers::catalog_regions))
        .route("/openapi.json", get(handlers::openapi))
        .route("/healthz", get(handlers::healthz))
        .route("/metrics", get(handlers::metrics))
        .route("/", get(web::index))
        .route("/api", get(web::api_page))
        .route("/assets/app.js", get(web::app_js))
        .route("/assets/style.css", get(web::style_css))
        .fallback(handlers::not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            handlers::panic_response,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), track));
    api.with_state(state)
}

/// Counts every request and its latency, by route (the matched pattern, so
/// unknown paths do not grow the metrics).
async fn track(
    axum::extract::State(state): axum::extract::State<Shared>,
    req: Request,
    next: Next,
) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |m| m.as_str())
        .to_string();
    let method = req.method().to_string();
    let started = Instant::now();
    let response = next.run(req).await;
    state.metrics.record(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// Serves until SIGTERM or Ctrl-C, then finishes the requests in flight.
pub async fn serve(state: Shared) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(state.config.addr).await?;
    eprintln!(
        "gpuplan serve: listening on http://{} (web page at /, API under /v1, OpenAPI at /openapi.json)",
        listener.local_addr()?
    );
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown_signal())
        .await
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    eprintln!("gpuplan serve: shutting down");
}
