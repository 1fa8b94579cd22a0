//! The scheduler on hand-worked cases: every step costs 1 s, so times count steps.

use gpuplan_core::{IterationWork, Slo};
use gpuplan_sim::{
    simulate, CostModel, Dynamics, EngineConfig, PromptSteps, Router, SimConfig, SimResult, Trace,
    Traffic,
};

/// Every step takes one second, whatever it runs.
struct OneSecond;

impl CostModel for OneSecond {
    fn iteration_s(&self, _work: &IterationWork) -> f64 {
        1.0
    }
}

/// Runs `trace` (CSV rows) on one replica with the given limits.
fn check(trace: &str, max_batched_tokens: u32, kv_cache_tokens: u64) -> SimResult {
    run(
        trace,
        max_batched_tokens,
        kv_cache_tokens,
        PromptSteps::BesideDecodes,
    )
}

/// `check` with the prompt policy chosen.
fn run(
    trace: &str,
    max_batched_tokens: u32,
    kv_cache_tokens: u64,
    prompts: PromptSteps,
) -> SimResult {
    let config = SimConfig {
        replicas: 1,
        engine: EngineConfig {
            max_num_seqs: 4,
            max_batched_tokens,
            kv_cache_tokens,
            block_tokens: 16,
            prompts,
        },
        router: Router::LeastOutstanding,
        warmup_fraction: 0.0,
        slo: Slo::default(),
        usd_per_hour: None,
        seed: 0,
        dynamics: Dynamics::default(),
    };
    let trace = Trace::parse("case.csv", trace).unwrap();
    simulate(&OneSecond, &config, &Traffic::Trace(trace)).unwrap()
}

/// `ms` equals `seconds` to the histograms' 3 significant digits.
fn same(ms: f64, seconds: f64) {
    assert!(
        (ms / 1e3 - seconds).abs() <= seconds * 1e-3 + 1e-9,
        "{ms} ms vs {seconds} s"
    );
}

#[test]
fn a_prompt_fills_one_step_and_each_output_token_takes_one_more() {
    // 20 prompt tokens in step 1 (its last chunk samples token 1), tokens 2
    // and 3 in steps 2 and 3: TTFT 1 s, end-to-end 3 s, TPOT (3 − 1)/2 = 1 s.
    let r = check("0,20,3\n", 100, 64);
    same(r.ttft_ms.p50, 1.0);
    same(r.e2e_ms.p50, 3.0);
    same(r.tpot_ms.p50, 1.0);
    same(r.queue_ms.p50, 0.0);
    assert_eq!((r.engine_steps, r.preemptions), (3, 0));
}

#[test]
fn a_long_prompt_is_chunked_by_the_token_budget() {
    // Budget 8: chunks of 8, 8 and 4 tokens; the first token ends step 3.
    let r = check("0,20,2\n", 8, 64);
    same(r.ttft_ms.p50, 3.0);
    same(r.e2e_ms.p50, 4.0);
}

#[test]
fn without_chunked_context_a_prompt_waits_for_a_step_with_room_for_all_of_it() {
    // Budget 10. A (8 tokens, 3 out) prefills in step 1. Step 2: A decodes
    // (1 token of budget), 9 left; B (9 tokens) arrived at 1 s.
    // Chunked (vLLM): B's 9 tokens run beside A's decode in step 2: TTFT 1 s.
    let chunked = run(
        "0,8,3
1,9,2
",
        10,
        640,
        PromptSteps::BesideDecodes,
    );
    same(chunked.ttft_ms.p999, 1.0);
    // Whole (TensorRT-LLM): 9 tokens fit the 9 left, the same.
    let whole = run(
        "0,8,3
1,9,2
",
        10,
        640,
        PromptSteps::Whole,
    );
    same(whole.ttft_ms.p999, 1.0);
    // B of 10 tokens: chunked, 9 in step 2 and 1 in step 3 (TTFT 2 s);
    // whole, it waits for step 3 (A's last decode leaves 9: still no room)
    // and runs alone in step 4 (TTFT 3 s).
    let chunked = run(
        "0,8,3
1,10,2
",
        10,
        640,
        PromptSteps::BesideDecodes,
    );
    same(chunked.ttft_ms.p999, 2.0);
    let whole = run(
        "0,8,3
1,10,2
",
        10,
        640,
        PromptSteps::Whole,
    );
    same(whole.ttft_ms.p999, 3.0);
    // A prompt longer than the whole budget is chunked either way.
    let long = run("0,25,2\n", 10, 640, PromptSteps::Whole);
    same(long.ttft_ms.p50, 3.0);
}

#[test]
fn prefill_first_pauses_the_decodes_for_a_new_prompt() {
    // A (8 tokens, 4 out) prefills in step 1 (token 1 at 1 s). B (5 tokens,
    // 1 out) arrives at 1 s.
    // Beside decodes (vLLM): step 2 runs A's decode and B's prompt (B done at
    // 2 s); A's tokens 2–4 end steps 2–4: A finishes at 4 s.
    let mixed = run("0,8,4\n1,5,1\n", 100, 640, PromptSteps::BesideDecodes);
    same(mixed.e2e_ms.p999, 4.0);
    same(mixed.ttft_ms.p999, 1.0);
    // Prefill first (SGLang): step 2 runs B's prompt alone (B done at 2 s)
    // while A waits; A's tokens 2–4 end steps 3–5: A finishes at 5 s, and
    // its gap across the pause is two steps.
    let separate = run("0,8,4\n1,5,1\n", 100, 640, PromptSteps::Separate);
    same(separate.e2e_ms.p999, 5.0);
    same(separate.ttft_ms.p999, 1.0);
    same(separate.itl_ms.p999, 2.0);
    assert_eq!(separate.requests_completed, 2);
    // Without new prompts, prefill first is plain decoding.
    let alone = run("0,8,4\n", 100, 640, PromptSteps::Separate);
    same(alone.e2e_ms.p50, 4.0);
}

#[test]
fn the_newest_request_is_preempted_and_recomputed_when_blocks_run_out() {
    // Two 16-token blocks. A (15 tokens) arrives at an idle replica: step 1
    // prefills it alone (1 block). Step 2: A decodes at 15 tokens, B's 10
    // take the other block and sample B's first token. Step 3: A's 17th KV
    // token needs a block and none is free: B, the newest, is preempted.
    // A decodes tokens 2–10 in steps 2–10 and ends at 10 s. B recomputes its
    // 10 + 1 tokens in step 11 (sampling token 2), decodes 3–10 in steps 12–19.
    let r = check("0,15,10\n0,10,10\n", 100, 32);
    assert_eq!(r.preemptions, 1);
    assert_eq!(r.requests_completed, 2);
    same(r.ttft_ms.p50, 1.0);
    same(r.ttft_ms.p999, 2.0);
    same(r.e2e_ms.p50, 10.0);
    same(r.e2e_ms.p999, 19.0);
    assert_eq!(r.engine_steps, 19);
}

#[test]
fn the_token_budget_is_shared_by_decodes_and_admissions() {
    // Budget 16, four slots. Step 1: A's 16-token prompt. Step 2: A decodes
    // (1 token) and B gets the other 15 of its 20: chunk 15, then 5 in step 3.
    let r = check("0,16,5\n0,20,2\n", 16, 1024);
    same(r.ttft_ms.p50, 1.0);
    same(r.ttft_ms.p999, 3.0);
    // B is admitted (first scheduled) in step 2, at 1 s.
    same(r.queue_ms.p999, 1.0);
}
