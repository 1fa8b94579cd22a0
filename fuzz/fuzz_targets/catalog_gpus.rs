#![no_main]
//! Fuzz target `catalog_gpus`: the contract is `gpuplan_fuzzcheck::catalog_gpus`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::catalog_gpus(data));
