#![no_main]
//! Fuzz target `training_toml`: the contract is `gpuplan_fuzzcheck::training_toml`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::training_toml(data));
