//! The server's one error mapping: every failure becomes
//! `{"error": {"kind", "field", "message"}}` with the status its kind means.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use gpuplan_app::{AppError, ErrorKind};
use serde::Serialize;

/// The `error` object of every error response.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// `bad_input`, `infeasible`, `internal`, `payload_too_large`,
    /// `unsupported_media_type`, `not_found`, `overloaded` or `timeout`.
    pub kind: String,
    /// The input field to blame, when one is (`traffic.requests_per_s`, `gpu`).
    pub field: Option<String>,
    /// What is wrong, for a person (the CLI's message for the same input).
    pub message: String,
}

/// An error response body; infeasible plans also carry the report with the
/// rejection reasons.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
    /// The full report (rejections, hint) when the input was valid but
    /// nothing is feasible.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub report: Option<serde_json::Value>,
}

/// A failed request: its status and body.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Body.
    pub body: ErrorBody,
}

impl ApiError {
    /// An error of a transport-level kind (413, 415, 503 ...).
    pub fn new(status: StatusCode, kind: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            body: ErrorBody {
                error: ErrorDetail {
                    kind: kind.into(),
                    field: None,
                    message: message.into(),
                },
                report: None,
            },
        }
    }

    /// Bad input naming a field.
    pub fn bad_field(field: &str, message: impl Into<String>) -> Self {
        let mut e = ApiError::new(StatusCode::BAD_REQUEST, "bad_input", message);
        e.body.error.field = Some(field.into());
        e
    }

    /// Infeasible, with the report that says why.
    pub fn infeasible(message: impl Into<String>, report: Option<serde_json::Value>) -> Self {
        let mut e = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "infeasible", message);
        e.body.report = report;
        e
    }
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        let (status, kind) = match e.kind {
            ErrorKind::BadInput => (StatusCode::BAD_REQUEST, "bad_input"),
            ErrorKind::Infeasible => (StatusCode::UNPROCESSABLE_ENTITY, "infeasible"),
            ErrorKind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        ApiError {
            status,
            body: ErrorBody {
                error: ErrorDetail {
                    kind: kind.into(),
                    message: e.to_string(),
                    field: e.field,
                },
                report: None,
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let text = serde_json::to_string_pretty(&self.body).unwrap_or_else(|_| {
            r#"{"error":{"kind":"internal","field":null,"message":"cannot encode the error"}}"#
                .into()
        });
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            text + "\n",
        )
            .into_response()
    }
}

/// Result of a handler.
pub type ApiResult = Result<Response, ApiError>;

/// A JSON document as the CLI prints it (pretty, newline-terminated).
pub fn json_text(status: StatusCode, text: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        text + "\n",
    )
        .into_response()
}

/// A value as a JSON response (through the façade's finiteness check).
pub fn json_ok<T: Serialize>(value: &T) -> ApiResult {
    Ok(json_text(StatusCode::OK, gpuplan_app::to_json(value)?))
}
