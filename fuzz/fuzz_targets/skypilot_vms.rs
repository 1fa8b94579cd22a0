#![no_main]
//! Fuzz target `skypilot_vms`: the contract is `gpuplan_fuzzcheck::skypilot_vms`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::skypilot_vms(data));
