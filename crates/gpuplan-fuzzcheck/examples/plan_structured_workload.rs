//! Prints the workload a `plan_structured` fuzz input builds, for triage:
//! `cargo run -p gpuplan-fuzzcheck --example plan_structured_workload -- fuzz/artifacts/plan_structured/crash-…`
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: plan_structured_workload FUZZ_INPUT");
        std::process::exit(2);
    };
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let mut bytes = gpuplan_fuzzcheck::Bytes::new(&data);
    print!("{}", gpuplan_fuzzcheck::workload_text(&mut bytes));
}
