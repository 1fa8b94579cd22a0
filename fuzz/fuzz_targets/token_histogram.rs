#![no_main]
//! Fuzz target `token_histogram`: the contract is `gpuplan_fuzzcheck::token_histogram`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::token_histogram(data));
