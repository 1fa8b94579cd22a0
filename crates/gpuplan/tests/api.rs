//! Issue 15: the HTTP API answers what the CLI prints. Each endpoint is
//! called in-process (the real router, no socket) and its body compared
//! byte for byte with the built `gpuplan` binary's `--json` output for the
//! same question; then the error contract: 400 naming the field (with the
//! CLI's words), 422 with the rejection reasons, 413, 415, 404, and a local
//! `hf_config` path refused. Last, the OpenAPI document is parsed as
//! OpenAPI 3.1 and every `$ref` and route checked.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use gpuplan_server::{router, ServerConfig, State};
use http_body_util::BodyExt;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use tower::ServiceExt;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The server state over the bundled catalog, built once.
fn state() -> gpuplan_server::Shared {
    static STATE: OnceLock<gpuplan_server::Shared> = OnceLock::new();
    STATE
        .get_or_init(|| {
            let catalog = gpuplan_app::load_catalog(&Default::default()).expect("bundled catalog");
            State::new(
                catalog,
                ServerConfig {
                    body_limit_bytes: 64 * 1024,
                    ..ServerConfig::default()
                },
            )
        })
        .clone()
}

/// Status, content type and body of one request to the router.
fn call(method: &str, uri: &str, content_type: Option<&str>, body: &str) -> (StatusCode, String) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(ct) = content_type {
        req = req.header(header::CONTENT_TYPE, ct);
    }
    let req = req.body(Body::from(body.to_string())).expect("request");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let response = router(state()).oneshot(req).await.expect("infallible");
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        (
            status,
            String::from_utf8(bytes.to_vec()).expect("UTF-8 body"),
        )
    })
}

/// `gpuplan ARGS`: exit code, stdout, stderr.
fn cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run gpuplan");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    )
}

/// The CLI's stdout for a question it answers (exit 0).
fn cli_json(args: &[&str]) -> String {
    let (code, out, err) = cli(args);
    assert_eq!(code, 0, "gpuplan {args:?} failed: {err}");
    out
}

/// Asserts two documents are byte for byte equal, showing the first line
/// that differs rather than both documents.
#[track_caller]
fn assert_same(api: &str, cli: &str, what: &str) {
    if api == cli {
        return;
    }
    let (a, c): (Vec<_>, Vec<_>) = (api.lines().collect(), cli.lines().collect());
    let at = a
        .iter()
        .zip(&c)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(c.len()));
    panic!(
        "{what}: the API and the CLI differ at line {} (API {} lines, CLI {} lines)\n  API: {:?}\n  CLI: {:?}",
        at + 1,
        a.len(),
        c.len(),
        a.get(at),
        c.get(at)
    );
}

fn error_of(body: &str) -> Value {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["error"].clone()
}

/// The body of `examples/NAME` and the example's path.
fn example(name: &str) -> String {
    std::fs::read_to_string(root().join("examples").join(name)).expect("example")
}

#[test]
fn plan_returns_the_cli_json_byte_for_byte_from_toml_and_json() {
    // The flagship example with the CLI's defaults (top 10, 5 plans verified
    // by 20,000-request simulations), sent as TOML.
    let cli_out = cli_json(&["plan", "examples/chat-70b.toml", "--json"]);
    let (status, body) = call(
        "POST",
        "/v1/plan",
        Some("application/toml"),
        &example("chat-70b.toml"),
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "POST /v1/plan");
    let first: Value = serde_json::from_str(&body).expect("json");
    assert!(!first["plans"].as_array().expect("plans").is_empty());

    // The same workload as JSON gives the same document; query settings map
    // to the CLI's flags.
    let toml_value: toml::Value = toml::from_str(&example("code-completion.toml")).expect("toml");
    let json_body = serde_json::to_string(&toml_value).expect("json");
    let cli_out = cli_json(&[
        "plan",
        "examples/code-completion.toml",
        "--json",
        "--top",
        "4",
        "--verify",
        "1",
        "--verify-requests",
        "3000",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/plan?top=4&verify=1&verify_requests=3000",
        Some("application/json"),
        &json_body,
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "same question");
}

#[test]
fn service_plans_match_the_cli_and_llm_only_operations_say_so() {
    for name in [
        "sdxl-images.toml",
        "whisper-live.toml",
        "rag-embeddings.toml",
    ] {
        let path = format!("examples/services/{name}");
        let cli_out = cli_json(&["plan", &path, "--json"]);
        let (status, body) = call(
            "POST",
            "/v1/plan",
            Some("application/toml"),
            &example(&format!("services/{name}")),
        );
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
        assert_same(&body, &cli_out, &path);
    }
    for uri in [
        "/v1/plan/curves",
        "/v1/explain?rank=1",
        "/v1/export?kind=k8s",
    ] {
        let (status, body) = call(
            "POST",
            uri,
            Some("application/toml"),
            &example("services/sdxl-images.toml"),
        );
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert_eq!(error_of(&body)["field"], "model.id", "{uri}: {body}");
    }
}

#[test]
fn training_plan_export_and_explain_match_the_cli() {
    let cli_out = cli_json(&["plan", "examples/training/lora-8b.toml", "--json"]);
    let (status, body) = call(
        "POST",
        "/v1/plan",
        Some("application/toml"),
        &example("training/lora-8b.toml"),
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "training plan");

    // --explain N --json is the plan object the /v1/explain answer carries.
    let explained = cli_json(&[
        "plan",
        "examples/training/lora-8b.toml",
        "--explain",
        "2",
        "--json",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/explain?rank=2",
        Some("application/toml"),
        &example("training/lora-8b.toml"),
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("json");
    let cli_plan: Value = serde_json::from_str(&explained).expect("json");
    assert_eq!(answer["plan"], cli_plan);
    let (_, text, _) = cli(&["plan", "examples/training/lora-8b.toml", "--explain", "2"]);
    assert!(
        text.contains(answer["text"].as_str().expect("text").trim()),
        "the explanation text is the CLI's"
    );

    // Exports: the same files the CLI writes, with the same contents.
    let dir = std::env::temp_dir().join(format!("gpuplan-api-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_s = dir.to_str().expect("utf-8 temp dir");
    let (code, _, err) = cli(&[
        "plan",
        "examples/code-completion.toml",
        "--export",
        "k8s",
        "--output",
        dir_s,
        "--verify",
        "1",
        "--verify-requests",
        "3000",
    ]);
    assert_eq!(code, 0, "{err}");
    let (status, body) = call(
        "POST",
        "/v1/export?kind=k8s&verify=1&verify_requests=3000",
        Some("application/toml"),
        &example("code-completion.toml"),
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    let files: Value = serde_json::from_str(&body).expect("json");
    let files = files["files"].as_array().expect("files");
    assert!(!files.is_empty());
    for f in files {
        let name = f["name"].as_str().expect("name");
        let on_disk = std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("the CLI did not write {name}: {e}"));
        // The one difference: the header names the request body, not a path.
        let contents = f["contents"].as_str().expect("contents").replacen(
            "`gpuplan plan request body`",
            "`gpuplan plan examples/code-completion.toml`",
            1,
        );
        assert_same(&contents, &on_disk, name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn simulate_matches_the_cli() {
    let cli_out = cli_json(&[
        "simulate",
        "examples/code-completion.toml",
        "--requests",
        "3000",
        "--json",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/simulate?requests=3000",
        Some("application/toml"),
        &example("code-completion.toml"),
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "POST /v1/simulate");

    // Plan 2, a daily curve, autoscaling and another router: the flags and
    // the query set the same things.
    let cli_out = cli_json(&[
        "simulate",
        "examples/chat-70b.toml",
        "--plan",
        "2",
        "--rate-curve",
        "diurnal",
        "--duration",
        "1800",
        "--autoscale",
        "--router",
        "round-robin",
        "--seed",
        "7",
        "--json",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/simulate?plan=2&rate_curve=diurnal&duration=1800&autoscale=true&router=round-robin&seed=7",
        Some("application/toml"),
        &example("chat-70b.toml"),
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "POST /v1/simulate (diurnal, autoscale)");

    for (uri, field) in [
        ("/v1/simulate?router=random", "router"),
        ("/v1/simulate?rate_curve=rates.csv", "rate_curve"),
        ("/v1/simulate?warmup=0.95", "warmup"),
        ("/v1/simulate?plan=0", "plan"),
    ] {
        let (status, body) = call(
            "POST",
            uri,
            Some("application/toml"),
            &example("code-completion.toml"),
        );
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert_eq!(error_of(&body)["field"], field, "{uri}: {body}");
    }
}

#[test]
fn mig_fleet_matches_the_cli() {
    let cli_out = cli_json(&[
        "mig",
        "examples/fleets/fleet-12.toml",
        "--gpu",
        "H100",
        "--verify-requests",
        "1000",
        "--json",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/mig?gpu=H100&verify_requests=1000",
        Some("application/toml"),
        &example("fleets/fleet-12.toml"),
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "POST /v1/mig");
    // A GPU without MIG is bad input naming the query parameter; an
    // inference workload is pointed at /v1/plan.
    let (status, body) = call(
        "POST",
        "/v1/mig?gpu=l4&no_verify=true",
        Some("application/toml"),
        &example("fleets/fleet-12.toml"),
    );
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_of(&body)["field"], "gpu", "{body}");
    let (status, body) = call(
        "POST",
        "/v1/mig",
        Some("application/toml"),
        &example("chat-70b.toml"),
    );
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(error_of(&body)["message"]
        .as_str()
        .expect("message")
        .contains("/v1/plan"));
}

#[test]
fn estimate_and_fit_match_the_cli() {
    let cli_out = cli_json(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "l40s",
        "--precision",
        "fp8",
        "--input-len",
        "2000",
        "--output-len",
        "300",
        "--concurrency",
        "16",
        "--json",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/estimate",
        None,
        r#"{"model": {"id": "llama-3.1-8b"}, "replica": {"gpu": "l40s", "precision": "fp8"},
            "input_len": 2000, "output_len": 300, "concurrency": 16}"#,
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "same question");

    let cli_out = cli_json(&[
        "fit",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--tp",
        "4",
        "--context",
        "32768",
        "--json",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/fit",
        None,
        r#"{"model": {"id": "llama-3.1-70b"}, "replica": {"gpu": "h100-sxm", "tp": 4}, "context": 32768}"#,
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "same question");

    // A training fit, flags and JSON fields named alike.
    let cli_out = cli_json(&[
        "fit",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "a100-80gb",
        "--count",
        "8",
        "--tp",
        "1",
        "--training",
        "--dp",
        "8",
        "--zero",
        "3",
        "--micro-batch",
        "2",
        "--seq-len",
        "4096",
        "--recompute",
        "full",
        "--json",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/fit",
        None,
        r#"{"model": {"id": "llama-3.1-8b"}, "replica": {"gpu": "a100-80gb", "count": 8, "tp": 1},
            "training": {"dp": 8, "zero": 3, "micro_batch": 2, "seq_len": 4096, "recompute": "full"}}"#,
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "same question");

    // Does not fit: the CLI exits 1 with the document; the API answers 422
    // with the same document as the report.
    let (code, cli_out, _) = cli(&["fit", "--model", "llama-3.1-70b", "--gpu", "l4", "--json"]);
    assert_eq!(code, 1);
    let (status, body) = call(
        "POST",
        "/v1/fit",
        None,
        r#"{"model": {"id": "llama-3.1-70b"}, "replica": {"gpu": "l4"}}"#,
    );
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["error"]["kind"], "infeasible");
    assert_eq!(
        v["report"],
        serde_json::from_str::<Value>(&cli_out).expect("json")
    );
}

#[test]
fn validate_and_catalog_listings_match_the_cli() {
    let pairs: [(&str, &[&str]); 8] = [
        (
            "/v1/validate?kind=memory",
            &["validate", "--kind", "memory", "--json"],
        ),
        (
            "/v1/validate?kind=inference&by=precision,scenario",
            &[
                "validate",
                "--kind",
                "inference",
                "--by",
                "precision,scenario",
                "--json",
            ],
        ),
        ("/v1/catalog/gpus", &["catalog", "gpus", "--json"]),
        (
            "/v1/catalog/gpus?filter=hopper",
            &["catalog", "gpus", "--filter", "hopper", "--json"],
        ),
        (
            "/v1/catalog/offerings?gpu=h100&provider=aws&region=us-*&limit=0",
            &[
                "catalog",
                "offerings",
                "--gpu",
                "h100",
                "--provider",
                "aws",
                "--region",
                "us-*",
                "--limit",
                "0",
                "--json",
            ],
        ),
        ("/v1/catalog/models", &["catalog", "models", "--json"]),
        ("/v1/catalog/regions", &["catalog", "regions", "--json"]),
        (
            "/v1/catalog/regions?provider=gcp",
            &["catalog", "regions", "--provider", "gcp", "--json"],
        ),
    ];
    for (uri, args) in pairs {
        let (status, body) = call("GET", uri, None, "");
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert_same(&body, &cli_json(args), uri);
    }
}

#[test]
fn bad_input_is_400_naming_the_field_with_the_cli_words() {
    // A negative rate in a workload: the CLI exits 2; the API says 400,
    // names the field and carries the same message.
    let text = example("chat-70b.toml").replace("requests_per_s = 20 ", "requests_per_s = -3 ");
    assert!(text.contains("requests_per_s = -3"));
    let path = std::env::temp_dir().join(format!("gpuplan-api-bad-{}.toml", std::process::id()));
    std::fs::write(&path, &text).expect("write");
    let (code, _, cli_err) = cli(&["plan", path.to_str().expect("utf-8"), "--json"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 2);
    let (status, body) = call("POST", "/v1/plan", Some("application/toml"), &text);
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let e = error_of(&body);
    assert_eq!(e["kind"], "bad_input");
    assert_eq!(e["field"], "traffic.requests_per_s", "{body}");
    let message = e["message"].as_str().expect("message");
    let tail = message.split_once(": ").map_or(message, |(_, rest)| rest);
    assert!(
        cli_err.contains(tail),
        "API message `{message}` is not the CLI's `{cli_err}`"
    );

    // Malformed syntax and an unknown key: 400, the key named.
    let (status, body) = call("POST", "/v1/plan", None, "{\"name\": \"x\", ");
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let bad_key = example("chat-70b.toml").replace("[slo]", "[slo]\nttft_p99 = 5");
    let (status, body) = call("POST", "/v1/plan", Some("application/toml"), &bad_key);
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(error_of(&body)["message"]
        .as_str()
        .expect("message")
        .contains("ttft_p99"));

    // Unknown GPU in an estimate: the field is the JSON path.
    let (status, body) = call(
        "POST",
        "/v1/estimate",
        None,
        r#"{"model": {"id": "llama-3.1-8b"}, "replica": {"gpu": "h1000"}, "input_len": 10, "output_len": 10}"#,
    );
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_of(&body)["field"], "replica.gpu", "{body}");
    // A wrong type: the path of the value.
    let (status, body) = call(
        "POST",
        "/v1/fit",
        None,
        r#"{"model": {"id": "llama-3.1-8b"}, "replica": {"gpu": "l4", "tp": "two"}}"#,
    );
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_of(&body)["field"], "replica.tp", "{body}");
    // Out-of-range query parameters.
    let (status, body) = call("POST", "/v1/plan?top=0", None, "{}");
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = call("GET", "/v1/validate?set=nope", None, "");
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_of(&body)["field"], "query");
    let (status, body) = call("GET", "/v1/validate?by=colour", None, "");
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_of(&body)["field"], "by", "{body}");
}

#[test]
fn infeasible_is_422_with_the_rejection_reasons() {
    // A 70B model limited to one small GPU type: every candidate is rejected.
    let text = example("chat-70b.toml").replace(
        "[constraints]",
        "[constraints]\ngpus = [\"l4\"]\nmax_gpus_per_replica = 1",
    );
    let (status, body) = call("POST", "/v1/plan?verify=0", Some("application/toml"), &text);
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["error"]["kind"], "infeasible");
    let report = &v["report"];
    assert!(report["plans"].as_array().expect("plans").is_empty());
    let rejected = report["rejected"].as_object().expect("rejected reasons");
    assert!(!rejected.is_empty(), "{body}");
}

#[test]
fn transport_errors_413_415_404_and_hf_config_paths() {
    // Over the 64 KiB limit of this test's server.
    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(70 * 1024));
    let (status, body) = call("POST", "/v1/plan", None, &big);
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(error_of(&body)["kind"], "payload_too_large");

    let (status, body) = call("POST", "/v1/plan", Some("text/csv"), "a,b");
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");

    let (status, body) = call("GET", "/v1/nope", None, "");
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(error_of(&body)["kind"], "not_found");

    // A workload naming a local config file is refused: no file system
    // access from a request.
    let text = example("chat-70b.toml").replace(
        "id = \"llama-3.1-70b\"",
        "id = \"llama-3.1-70b\"\nhf_config = \"/etc/passwd\"",
    );
    let (status, body) = call("POST", "/v1/plan", Some("application/toml"), &text);
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let e = error_of(&body);
    assert_eq!(e["field"], "model.hf_config", "{body}");
    assert!(e["message"]
        .as_str()
        .expect("message")
        .contains("hf_config_inline"));
}

#[test]
fn openapi_is_valid_3_1_and_lists_every_route() {
    let (status, body) = call("GET", "/openapi.json", None, "");
    assert_eq!(status, StatusCode::OK);
    let spec = oas3::from_json(&body).expect("a valid OpenAPI 3.1 document");
    assert!(spec.openapi.starts_with("3.1"), "{}", spec.openapi);
    let paths = spec.paths.clone().unwrap_or_default();
    for (path, method) in [
        ("/v1/plan", "post"),
        ("/v1/plan/curves", "post"),
        ("/v1/explain", "post"),
        ("/v1/export", "post"),
        ("/v1/mig", "post"),
        ("/v1/simulate", "post"),
        ("/v1/estimate", "post"),
        ("/v1/fit", "post"),
        ("/v1/validate", "get"),
        ("/v1/examples", "get"),
        ("/v1/catalog/gpus", "get"),
        ("/v1/catalog/offerings", "get"),
        ("/v1/catalog/models", "get"),
        ("/v1/catalog/regions", "get"),
        ("/healthz", "get"),
        ("/metrics", "get"),
    ] {
        let item = paths.get(path).unwrap_or_else(|| panic!("{path} missing"));
        let op = match method {
            "get" => item.get.as_ref(),
            _ => item.post.as_ref(),
        };
        let op = op.unwrap_or_else(|| panic!("{method} {path} missing"));
        assert!(
            op.responses.as_ref().is_some_and(|r| r.contains_key("200")),
            "{path}: no 200 response"
        );
    }
    // Every $ref points at a schema the document defines.
    let doc: Value = serde_json::from_str(&body).expect("json");
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty(), "the error schema is referenced");
    for r in refs {
        let pointer = r.strip_prefix('#').expect("local $ref");
        assert!(doc.pointer(pointer).is_some(), "dangling $ref {r}");
    }
    // And every route the document names answers (not the JSON 404).
    for path in paths.keys() {
        let probe = path.replace("{", "").replace("}", "");
        let (status, _) = call("GET", &probe, None, "");
        assert_ne!(
            status,
            StatusCode::NOT_FOUND,
            "{path} is documented but not routed"
        );
    }
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(s)) => out.push(s.clone()),
                    _ => collect_refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

#[test]
fn health_metrics_pages_and_examples() {
    let (status, body) = call("GET", "/healthz", None, "");
    assert_eq!(
        (status, body.trim()),
        (StatusCode::OK, r#"{"status": "ok"}"#)
    );
    let (status, page) = call("GET", "/", None, "");
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("<script") && page.contains("gpuplan"));
    assert!(
        !page.contains("http://") && !page.contains("https://cdn"),
        "the page fetches nothing from the network"
    );
    let (status, api) = call("GET", "/api", None, "");
    assert_eq!(status, StatusCode::OK);
    assert!(api.contains("/v1/plan"));
    let (status, body) = call("GET", "/v1/examples", None, "");
    assert_eq!(status, StatusCode::OK);
    let examples: Value = serde_json::from_str(&body).expect("json");
    assert!(examples
        .as_array()
        .expect("array")
        .iter()
        .any(|e| e["name"].as_str().is_some_and(|n| n.contains("chat-70b"))));

    // The metrics count what was served, errors by status included.
    let _ = call("GET", "/v1/nope", None, "");
    let (status, metrics) = call("GET", "/metrics", None, "");
    assert_eq!(status, StatusCode::OK);
    assert!(
        metrics.contains("gpuplan_http_requests_total{"),
        "{metrics}"
    );
    assert!(metrics.contains("status=\"404\""), "{metrics}");
    assert!(
        metrics.contains("_bucket{"),
        "a latency histogram: {metrics}"
    );
}

#[test]
fn non_llm_estimate_matches_the_cli() {
    let cli_out = cli_json(&[
        "estimate",
        "--model",
        "sdxl",
        "--gpu",
        "l40s",
        "--precision",
        "fp8",
        "--count",
        "2",
        "--steps",
        "20",
        "--concurrency",
        "4",
        "--json",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/estimate",
        None,
        r#"{"model": {"id": "sdxl"}, "replica": {"gpu": "l40s", "precision": "fp8", "count": 2},
            "steps": 20, "concurrency": 4}"#,
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "same question");

    let cli_out = cli_json(&[
        "estimate",
        "--model",
        "whisper-large-v3",
        "--gpu",
        "l4",
        "--precision",
        "fp16",
        "--audio-seconds",
        "12.5",
        "--beam",
        "2",
        "--json",
    ]);
    let (status, body) = call(
        "POST",
        "/v1/estimate",
        None,
        r#"{"model": {"id": "whisper-large-v3"}, "replica": {"gpu": "l4", "precision": "fp16"},
            "audio_seconds": 12.5, "beam": 2}"#,
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_same(&body, &cli_out, "same question");

    // A field of another family: 400 naming it; too big for the GPU: 422.
    let (status, body) = call(
        "POST",
        "/v1/estimate",
        None,
        r#"{"model": {"id": "bge-large"}, "replica": {"gpu": "l4"}, "steps": 4}"#,
    );
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_of(&body)["field"], "steps");
    let (status, body) = call(
        "POST",
        "/v1/estimate",
        None,
        r#"{"model": {"id": "flux.1-dev"}, "replica": {"gpu": "l4"}}"#,
    );
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(error_of(&body)["message"]
        .as_str()
        .unwrap()
        .contains("does not fit"));
}
