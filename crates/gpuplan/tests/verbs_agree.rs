//! Issue 7, class 2, "verbs disagree about the same question": `fit`,
//! `estimate` and `plan` ask one validation layer (`gpuplan_core::check_replica`)
//! whether a replica may run, so they give the same answer with the same words.
//!
//! One line per question: the model, GPU, weight precision, TP degree, prompt
//! and output tokens and `--max-batched-tokens` (`None`: the default), and
//! the answer all three verbs must give. `fit` gets the question as flags
//! (`--context` = prompt + output), `estimate` as flags, `plan` as a workload
//! file whose `constraints.gpus` names the GPU and whose `model.precisions`
//! names the precision (the planner picks the layouts itself).

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The answer every verb must give to a question.
#[derive(Clone, Copy)]
enum Answer {
    /// `fit` and `estimate` exit 0; `plan` finds a plan (exit 0).
    Accept,
    /// `fit` and `estimate` exit 2; `plan` refuses the workload file (exit 2);
    /// all three messages contain the words.
    BadInput(&'static [&'static str]),
    /// `fit` and `estimate` exit 2; `plan` rejects the replica under `reason`
    /// (JSON `rejected` key), its description and example containing the
    /// words, and exits `plan_exit` (0 when other layouts of the GPU serve).
    Rejected {
        reason: &'static str,
        plan_exit: i32,
        words: &'static [&'static str],
    },
}

struct Question {
    what: &'static str,
    model: &'static str,
    gpu: &'static str,
    precision: &'static str,
    tp: u32,
    input_len: u64,
    output_len: u64,
    max_batched_tokens: Option<u64>,
    answer: Answer,
}

#[allow(clippy::too_many_arguments)]
fn q(
    what: &'static str,
    model: &'static str,
    gpu: &'static str,
    precision: &'static str,
    tp: u32,
    (input_len, output_len): (u64, u64),
    max_batched_tokens: Option<u64>,
    answer: Answer,
) -> Question {
    Question {
        what,
        model,
        gpu,
        precision,
        tp,
        input_len,
        output_len,
        max_batched_tokens,
        answer,
    }
}

fn rejected(reason: &'static str, plan_exit: i32, words: &'static [&'static str]) -> Answer {
    Answer::Rejected {
        reason,
        plan_exit,
        words,
    }
}

/// The questions every verb must answer alike today.
fn questions() -> Vec<Question> {
    use Answer::{Accept, BadInput};
    vec![
        q(
            "FP8 on a T4 (fit said FITS)",
            "llama-3.1-8b",
            "T4",
            "fp8",
            1,
            (1000, 100),
            None,
            rejected("precision_unsupported", 1, &["T4-16GB", "FP8"]),
        ),
        q(
            "FP8 on Inferentia2 (fit said FITS)",
            "llama-3.1-8b",
            "Inferentia2",
            "fp8",
            1,
            (1000, 100),
            None,
            rejected(
                "accelerator_not_modelled",
                1,
                &["Inferentia2-32GB", "not modelled"],
            ),
        ),
        q(
            "BF16 on Inferentia2 (fit said FITS)",
            "llama-3.1-8b",
            "Inferentia2",
            "bf16",
            1,
            (1000, 100),
            None,
            rejected(
                "accelerator_not_modelled",
                1,
                &["Inferentia2-32GB", "not modelled"],
            ),
        ),
        q(
            "FP4 on an H100",
            "llama-3.1-8b",
            "H100",
            "fp4",
            1,
            (1000, 100),
            None,
            rejected(
                "precision_unsupported",
                1,
                &["H100-SXM-80GB", "FP4", "Blackwell"],
            ),
        ),
        q(
            "context beyond the model's 4096 (fit said FITS)",
            "llama-2-7b",
            "H100",
            "bf16",
            1,
            (99_900, 100),
            None,
            BadInput(&["100000", "4096"]),
        ),
        q(
            "max-batched-tokens below the bound (estimate accepted 1)",
            "llama-3.1-8b",
            "H100",
            "bf16",
            1,
            (1000, 100),
            Some(255),
            BadInput(&["255", "from 256 to 16777216"]),
        ),
        q(
            "TP 4 does not divide 10 KV heads",
            "phi-3-medium-4k",
            "H100",
            "bf16",
            4,
            (1000, 100),
            None,
            rejected(
                "layout_invalid",
                0,
                &["divisor or multiple of the model's 10 KV heads"],
            ),
        ),
        q(
            "FP8 on an H100",
            "llama-3.1-8b",
            "H100",
            "fp8",
            1,
            (1000, 100),
            None,
            Accept,
        ),
        q(
            "INT4 on a V100 with a GPTQ checkpoint",
            "llama-3.1-8b",
            "V100",
            "int4",
            1,
            (1000, 100),
            None,
            Accept,
        ),
    ]
}

/// Questions `fit` and `estimate` answer through `check_replica` and the
/// planner answers once it calls `check_replica` too (it still uses the
/// engine's default kernel, which runs INT4 as GPTQ on Volta whether or not a
/// GPTQ checkpoint is published).
fn questions_needing_the_planners_check() -> Vec<Question> {
    vec![q(
        "INT4 on a V100, AWQ checkpoints only (all verbs said yes)",
        "qwen2.5-7b",
        "V100",
        "int4",
        1,
        (1000, 100),
        None,
        rejected("precision_unsupported", 1, &["V100-SXM2-16GB", "AWQ"]),
    )]
}

/// Runs the binary from the repository root; returns (exit code, stdout, stderr).
fn gpuplan(args: &[String]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory for one question (unique across tests running in parallel).
fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let index = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "gpuplan-verbs-agree-{}-{index}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn fit_args(x: &Question) -> Vec<String> {
    let mut a = words(&["fit", "--model", x.model, "--gpu", x.gpu]);
    a.extend(words(&["--precision", x.precision]));
    a.extend([
        "--tp".into(),
        x.tp.to_string(),
        "--context".into(),
        (x.input_len + x.output_len).to_string(),
    ]);
    if let Some(m) = x.max_batched_tokens {
        a.extend(["--max-batched-tokens".into(), m.to_string()]);
    }
    a
}

fn estimate_args(x: &Question) -> Vec<String> {
    let mut a = words(&["estimate", "--model", x.model, "--gpu", x.gpu]);
    a.extend(words(&["--precision", x.precision]));
    a.extend([
        "--tp".into(),
        x.tp.to_string(),
        "--input-len".into(),
        x.input_len.to_string(),
        "--output-len".into(),
        x.output_len.to_string(),
    ]);
    if let Some(m) = x.max_batched_tokens {
        a.extend(["--max-batched-tokens".into(), m.to_string()]);
    }
    a
}

/// The question as a workload: one request per second, every request of the
/// same length, no SLO, only the question's GPU and precision.
fn workload(x: &Question) -> String {
    let engine = match x.max_batched_tokens {
        Some(m) => format!("[engine]\nmax_batched_tokens = {m}\n"),
        None => String::new(),
    };
    format!(
        "kind = \"inference\"\n[model]\nid = \"{}\"\nprecisions = [\"{}\"]\n[traffic]\nrequests_per_s = 1\ninput_tokens = {{ mean = {i}, p99 = {i} }}\noutput_tokens = {{ mean = {o}, p99 = {o} }}\n[constraints]\ngpus = [\"{}\"]\n{engine}",
        x.model,
        x.precision,
        x.gpu,
        i = x.input_len,
        o = x.output_len,
    )
}

/// Checks one verb's exit code and that `text` holds every word.
fn expect(verb: &str, code: i32, want: i32, text: &str, words: &[&str]) -> Vec<String> {
    let mut errors = Vec::new();
    if code != want {
        let first = text.lines().next().unwrap_or("");
        errors.push(format!("{verb}: exit {code}, expected {want}: {first}"));
    }
    let missing: Vec<&&str> = words.iter().filter(|w| !text.contains(**w)).collect();
    if !missing.is_empty() {
        errors.push(format!("{verb}: missing {missing:?} in: {text}"));
    }
    errors
}

/// The rejection `reason` of a `plan --json` report: description and example.
fn plan_rejection(stdout: &str, reason: &str) -> String {
    let report: serde_json::Value = match serde_json::from_str(stdout) {
        Ok(v) => v,
        Err(e) => return format!("(plan printed no JSON report: {e})"),
    };
    let r = &report["rejected"][reason];
    format!(
        "{} | {}",
        r["description"].as_str().unwrap_or("(no such rejection)"),
        r["example"].as_str().unwrap_or("")
    )
}

/// Asks every verb the question; the errors, if they disagree with the answer.
fn ask(x: &Question) -> Result<(), String> {
    let (fit_code, _, fit_err) = gpuplan(&fit_args(x));
    let (est_code, _, est_err) = gpuplan(&estimate_args(x));
    let dir = scratch();
    let path = dir.join("w.toml");
    std::fs::write(&path, workload(x)).expect("write workload");
    let plan = [
        "plan".to_string(),
        path.display().to_string(),
        "--json".into(),
    ];
    let (plan_code, plan_out, plan_err) = gpuplan(&plan);
    std::fs::remove_dir_all(&dir).ok();
    let mut errors = Vec::new();
    match x.answer {
        Answer::Accept => {
            errors.extend(expect("fit", fit_code, 0, &fit_err, &[]));
            errors.extend(expect("estimate", est_code, 0, &est_err, &[]));
            errors.extend(expect("plan", plan_code, 0, &plan_err, &[]));
        }
        Answer::BadInput(w) => {
            errors.extend(expect("fit", fit_code, 2, &fit_err, w));
            errors.extend(expect("estimate", est_code, 2, &est_err, w));
            errors.extend(expect("plan", plan_code, 2, &plan_err, w));
        }
        Answer::Rejected {
            reason,
            plan_exit,
            words: w,
        } => {
            errors.extend(expect("fit", fit_code, 2, &fit_err, w));
            errors.extend(expect("estimate", est_code, 2, &est_err, w));
            let text = plan_rejection(&plan_out, reason);
            errors.extend(expect("plan", plan_code, plan_exit, &text, w));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{}:\n  {}", x.what, errors.join("\n  ")))
    }
}

fn check(questions: Vec<Question>) {
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = questions.iter().map(|x| s.spawn(|| ask(x))).collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().expect("a question's thread").err())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} questions answered differently:\n{}",
        failures.len(),
        questions.len(),
        failures.join("\n")
    );
}

#[test]
fn fit_estimate_and_plan_give_one_answer() {
    check(questions());
}

#[test]
fn fit_estimate_and_plan_agree_on_checkpoints_the_gpu_cannot_run() {
    check(questions_needing_the_planners_check());
}
