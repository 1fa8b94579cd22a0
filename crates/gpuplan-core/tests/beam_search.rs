//! Beam search: each request decodes `beam_width` sequences that share the
//! prompt's KV blocks; only TensorRT-LLM runs it inside its scheduler.

use gpuplan_catalog::{Catalog, Precision};
use gpuplan_core::{
    plan, Calibration, Deployment, Engine, InferenceWorkload, IterationWork, Layout, PlanOptions,
    RawWorkload,
};

fn catalog() -> Catalog {
    Catalog::embedded().unwrap()
}

fn workload(c: &Catalog, engine: &str, beams: u32) -> Result<InferenceWorkload, String> {
    let text = format!(
        r#"
kind = "inference"
engine = "{engine}"
[model]
id = "gpt-j-6b"
variant = "base"
precisions = ["bf16"]
[traffic]
requests_per_s = 40
input_tokens = {{ mean = 700, p99 = 1900 }}
output_tokens = {{ mean = 69, p99 = 128 }}
beam_width = {beams}
[slo]
e2e_ms_p99 = 20000
[constraints]
gpus = ["H100"]
providers = ["aws"]
"#
    );
    let raw: RawWorkload = toml::from_str(&text).map_err(|e| e.to_string())?;
    raw.validate(c, None).map_err(|e| e.to_string())
}

#[test]
fn beams_are_decode_sequences_and_the_prompt_is_prefilled_once() {
    let c = catalog();
    let model = c.model("gpt-j-6b").unwrap();
    let gpu = c.gpu("H100").unwrap();
    let cal = Calibration::bundled();
    let dep = Deployment::new(
        &model,
        gpu,
        Layout::SINGLE,
        Precision::Bf16,
        Precision::Bf16,
        &cal,
    )
    .unwrap();
    let work = IterationWork {
        decode_seqs: 10.0,
        decode_context_sum: 10.0 * 800.0,
        prefill_tokens: 500.0,
        prefill_attention_pairs: 500.0 * 500.0 / 2.0,
        logit_tokens: 11.0,
    };
    let four = dep.clone().with_beams(4);
    // Ten requests of four beams are forty sequences in the step; the
    // prompt chunk is the same; forty decode logits plus the prompt's one.
    let expected = dep.iteration(&IterationWork {
        decode_seqs: 40.0,
        decode_context_sum: 40.0 * 800.0,
        logit_tokens: 41.0,
        ..work
    });
    assert_eq!(four.iteration(&work), expected);
    assert!(four.iteration(&work).total_s > dep.iteration(&work).total_s);
    // A prefill-only step does not change.
    let prompt = IterationWork {
        decode_seqs: 0.0,
        decode_context_sum: 0.0,
        logit_tokens: 1.0,
        ..work
    };
    assert_eq!(four.iteration(&prompt), dep.iteration(&prompt));
    // KV: the prompt once, each beam's output.
    assert_eq!(four.kv_tokens_per_request(700.0, 69.0), 700.0 + 4.0 * 69.0);
    assert_eq!(dep.kv_tokens_per_request(700.0, 69.0), 769.0);
}

#[test]
fn beam_search_plans_on_tensorrt_llm_need_more_capacity_and_pass_the_flag() {
    let c = catalog();
    let cal = Calibration::bundled();
    let best = |beams| {
        let w = workload(&c, "trtllm", beams).unwrap();
        let report = plan(&c, &w, &cal, PlanOptions { top: 5 });
        report.plans.into_iter().next().expect("a plan")
    };
    let (greedy, beam) = (best(1), best(4));
    assert_eq!(beam.engine, Engine::Trtllm);
    assert!(
        beam.launch_command.contains("--max_beam_width 4"),
        "{}",
        beam.launch_command
    );
    assert!(!greedy.launch_command.contains("--max_beam_width"));
    // Four sequences per request: each replica serves fewer requests.
    let per_replica = |p: &gpuplan_core::Plan| p.derivation.capacity_requests_per_s_per_replica;
    assert!(
        per_replica(&beam) < per_replica(&greedy) * 0.8,
        "beam {} vs greedy {} req/s per replica",
        per_replica(&beam),
        per_replica(&greedy)
    );
    assert!(beam.usd_per_hour >= greedy.usd_per_hour);
}

#[test]
fn vllm_and_sglang_beam_search_is_rejected_with_the_reason() {
    let c = catalog();
    let cal = Calibration::bundled();
    for (engine, says) in [("vllm", "vllm-project/vllm#6226"), ("sglang", "SGLang")] {
        let w = workload(&c, engine, 4).unwrap();
        let report = plan(&c, &w, &cal, PlanOptions { top: 5 });
        assert!(report.plans.is_empty(), "{engine}");
        let rejected = serde_json::to_value(&report.rejected).unwrap();
        let example = rejected["engine_unsupported"]["example"]
            .as_str()
            .unwrap_or_default();
        assert!(
            example.contains(says) && example.contains("trtllm"),
            "{engine}: {rejected}"
        );
    }
}

#[test]
fn a_beam_width_out_of_range_names_the_field() {
    let c = catalog();
    for beams in [0, 33] {
        let err = workload(&c, "trtllm", beams).unwrap_err();
        assert!(
            err.contains("traffic.beam_width") && err.contains("1 to 32"),
            "{beams}: {err}"
        );
    }
}
