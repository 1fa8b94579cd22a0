#![no_main]
//! Fuzz target `trace`: the contract is `gpuplan_fuzzcheck::trace`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::trace(data));
