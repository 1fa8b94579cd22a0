#![no_main]
//! Fuzz target `workload_json`: the contract is `gpuplan_fuzzcheck::workload_json`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::workload_json(data));
