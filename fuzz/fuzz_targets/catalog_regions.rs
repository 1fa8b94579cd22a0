#![no_main]
//! Fuzz target `catalog_regions`: the contract is `gpuplan_fuzzcheck::catalog_regions`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::catalog_regions(data));
