#![no_main]
//! Fuzz target `catalog_offerings`: the contract is `gpuplan_fuzzcheck::catalog_offerings`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::catalog_offerings(data));
