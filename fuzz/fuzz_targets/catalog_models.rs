#![no_main]
//! Fuzz target `catalog_models`: the contract is `gpuplan_fuzzcheck::catalog_models`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::catalog_models(data));
