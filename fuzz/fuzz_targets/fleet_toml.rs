#![no_main]
//! Fuzz target `fleet_toml`: the contract is `gpuplan_fuzzcheck::fleet_toml`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::fleet_toml(data));
