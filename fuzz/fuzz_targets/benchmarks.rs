#![no_main]
//! Fuzz target `benchmarks`: the contract is `gpuplan_fuzzcheck::benchmarks`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::benchmarks(data));
