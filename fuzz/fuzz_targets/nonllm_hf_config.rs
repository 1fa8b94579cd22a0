#![no_main]
//! Fuzz target `nonllm_hf_config`: the contract is `gpuplan_fuzzcheck::nonllm_hf_config`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::nonllm_hf_config(data));
