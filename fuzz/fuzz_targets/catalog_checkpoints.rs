#![no_main]
//! Fuzz target `catalog_checkpoints`: the contract is `gpuplan_fuzzcheck::catalog_checkpoints`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::catalog_checkpoints(data));
