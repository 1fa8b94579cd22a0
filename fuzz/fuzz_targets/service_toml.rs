#![no_main]
//! Fuzz target `service_toml`: the contract is `gpuplan_fuzzcheck::service_toml`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::service_toml(data));
