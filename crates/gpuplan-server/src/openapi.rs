//! The OpenAPI 3 document, generated from the handlers' annotations and
//! the request and error types.

use crate::handlers;
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "gpuplan",
        description = "Which cloud GPUs to run an AI workload on: ranked plans with latency, throughput, memory and cost, from real specs and prices. Every endpoint returns the JSON the `gpuplan` CLI prints for the same input; errors are `{\"error\": {\"kind\", \"field\", \"message\"}}` (400 bad input, 413 body too large, 415 media type, 422 infeasible with the report, 503 overloaded, 504 timeout).",
        license(name = "Apache-2.0")
    ),
    paths(
        handlers::plan,
        handlers::curves,
        handlers::explain,
        handlers::export,
        handlers::mig,
        handlers::simulate,
        handlers::estimate,
        handlers::fit,
        handlers::validate,
        handlers::examples,
        handlers::catalog_gpus,
        handlers::catalog_offerings,
        handlers::catalog_models,
        handlers::catalog_regions,
        handlers::healthz,
        handlers::metrics,
    ),
    components(schemas(crate::ErrorBody, crate::ErrorDetail))
)]
struct ApiDoc;

/// The OpenAPI document as pretty JSON.
pub fn openapi_json() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot encode the OpenAPI document: {e}\"}}"))
}
