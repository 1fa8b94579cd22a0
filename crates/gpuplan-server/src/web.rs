//! The web page and its assets, embedded in the binary (nothing is fetched
//! from the internet), and the offline HTML report built from the same page.

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;

const INDEX_HTML: &str = include_str!("../web/index.html");
const APP_JS: &str = include_str!("../web/app.js");
const STYLE_CSS: &str = include_str!("../web/style.css");
const API_HTML: &str = include_str!("api.html");

/// What the page's markers are; the report inlines the assets and the data there.
const STYLE_LINK: &str = r#"<link rel="stylesheet" href="/assets/style.css">"#;
const SCRIPT_TAG: &str = r#"<script src="/assets/app.js"></script>"#;
const DATA_TAG: &str = r#"<script id="gpuplan-data" type="application/json">null</script>"#;

/// `GET /`.
pub async fn index() -> Html<&'static str> {
    Html(INDEX_HTML)
}

/// `GET /api`: the browsable API page (reads /openapi.json).
pub async fn api_page() -> Html<&'static str> {
    Html(API_HTML)
}

/// `GET /assets/app.js`.
pub async fn app_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP_JS,
    )
        .into_response()
}

/// `GET /assets/style.css`.
pub async fn style_css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        STYLE_CSS,
    )
        .into_response()
}

/// One plan's derivation text, for the report's explain panel.
#[derive(Debug, Clone, Serialize)]
pub struct ExplainEntry {
    /// The plan number.
    pub rank: usize,
    /// What `--explain N` prints.
    pub text: String,
}

/// Everything the offline report shows: the same documents the API serves.
#[derive(Debug, Clone, Serialize)]
pub struct ReportData {
    /// The workload as JSON.
    pub workload: serde_json::Value,
    /// The plan report (`plan --json`).
    pub report: serde_json::Value,
    /// The latency-vs-load curves.
    pub curves: serde_json::Value,
    /// The catalog's GPUs (memory capacity for the memory bars).
    pub gpus: serde_json::Value,
    /// The derivation of each plan shown.
    pub explain: Vec<ExplainEntry>,
}

impl ReportData {
    /// Builds the explain list from (rank, text) pairs.
    pub fn explain_entries(pairs: impl IntoIterator<Item = (usize, String)>) -> Vec<ExplainEntry> {
        pairs
            .into_iter()
            .map(|(rank, text)| ExplainEntry { rank, text })
            .collect()
    }
}

/// A self-contained HTML report: the web page with its script and styles
/// inlined and the data embedded, so it renders the same tables and charts
/// with no server and no network.
pub fn html_report(data: &ReportData) -> Result<String, String> {
    // `</` inside a script element would end it early: escape the slash.
    let json = serde_json::to_string(data)
        .map_err(|e| format!("cannot encode the report: {e}"))?
        .replace("</", "<\\/");
    let data_tag = format!(r#"<script id="gpuplan-data" type="application/json">{json}</script>"#);
    let style = format!("<style>\n{STYLE_CSS}\n</style>");
    let script = format!(
        "<script>\n{}\n</script>",
        APP_JS.replace("</script", "<\\/script")
    );
    for marker in [STYLE_LINK, SCRIPT_TAG, DATA_TAG] {
        if !INDEX_HTML.contains(marker) {
            return Err(format!("web/index.html lacks the marker {marker}"));
        }
    }
    Ok(INDEX_HTML
        .replace(STYLE_LINK, &style)
        .replace(DATA_TAG, &data_tag)
        .replace(SCRIPT_TAG, &script))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_inlines_everything_and_escapes_script_ends() {
        let data = ReportData {
            workload: serde_json::json!({"name": "x</script><b>"}),
            report: serde_json::json!({"plans": []}),
            curves: serde_json::json!({"curves": []}),
            gpus: serde_json::json!([]),
            explain: Vec::new(),
        };
        let html = html_report(&data).unwrap();
        assert!(!html.contains("/assets/"), "no asset is fetched");
        assert!(html.contains(r#""name":"x<\/script><b>""#));
        // The only </script> closings are the page's own script elements.
        let opened = html.matches("<script").count();
        assert_eq!(html.matches("</script>").count(), opened);
    }
}
