#![no_main]
//! Fuzz target `workload_toml`: the contract is `gpuplan_fuzzcheck::workload_toml`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::workload_toml(data));
