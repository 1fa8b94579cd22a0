#![no_main]
//! Fuzz target `hf_config`: the contract is `gpuplan_fuzzcheck::hf_config`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::hf_config(data));
