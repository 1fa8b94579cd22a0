#![no_main]
//! Fuzz target `plan_structured`: the contract is `gpuplan_fuzzcheck::plan_structured`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::plan_structured(data));
