#![no_main]
//! Fuzz target `catalog_mig_profiles`: the contract is `gpuplan_fuzzcheck::catalog_mig_profiles`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::catalog_mig_profiles(data));
