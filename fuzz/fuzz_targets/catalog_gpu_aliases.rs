#![no_main]
//! Fuzz target `catalog_gpu_aliases`: the contract is `gpuplan_fuzzcheck::catalog_gpu_aliases`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::catalog_gpu_aliases(data));
