#![no_main]
//! Fuzz target `parametric_model`: the contract is `gpuplan_fuzzcheck::parametric_model`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::parametric_model(data));
