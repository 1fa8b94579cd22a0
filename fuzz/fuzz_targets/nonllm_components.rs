#![no_main]
//! Fuzz target `nonllm_components`: the contract is `gpuplan_fuzzcheck::nonllm_components`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::nonllm_components(data));
