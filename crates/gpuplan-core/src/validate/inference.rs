//! Fixed-length inference rows: trtllm-bench max-throughput runs, Triton
//! bursts and static batches, on the engine each row ran.

use super::Prediction;
use crate::calibration::Calibration;
use crate::engine::Engine;
use crate::layout::Layout;
use crate::perf::Deployment;
use crate::serving::{burst, static_batch, trtllm_bench_run, trtllm_bench_throughput};
use gpuplan_catalog::{BenchmarkRow, Catalog, Precision};

/// Inference rows: the engine and run type come from the `engine`,
/// `scenario` and `requests` columns (trtllm-bench max-throughput runs;
/// Triton bursts of N requests); the model, GPU, layout, precision and
/// lengths from the row.
pub fn predict_inference(catalog: &Catalog, row: &BenchmarkRow, cal: &Calibration) -> Prediction {
    let (Some(input_len), Some(output_len)) = (row.input_len, row.output_len) else {
        return Err("row gives no fixed input/output length (variable-length data set)".into());
    };
    let model = catalog.model(&row.model).map_err(|e| e.to_string())?;
    let gpu = catalog.gpu(&row.gpu).map_err(|e| e.to_string())?;
    let (engine, dep) = row_deployment(&model, gpu, row, cal)?;
    let lengths = (input_len, output_len);
    match row.scenario.as_str() {
        "static_batch" => predict_static_batch(&dep, row, lengths),
        _ if engine != Engine::Trtllm => Err(format!(
            "{} runs are modelled as static batches and MLPerf scenarios; this `{}` run is not",
            engine.label(),
            row.scenario
        )),
        "burst" => predict_burst(&model, gpu, &dep, cal, row, lengths),
        _ if row.batch_or_concurrency.is_some() => {
            Err("fixed-concurrency TensorRT-LLM rows are not modelled yet".into())
        }
        _ => predict_max_throughput(&model, gpu, &dep, cal, row, lengths),
    }
}

/// The engine a fixed-length row ran and its deployment: the row's layout
/// and precision (vLLM's `--dtype auto` serves the checkpoint's own 16-bit
/// dtype when a run states none; BF16 and FP16 run at the same tensor
/// rate), FP8 KV with FP8/FP4 weights, at that engine's step time.
fn row_deployment(
    model: &gpuplan_catalog::ModelArch,
    gpu: &gpuplan_catalog::GpuSpec,
    row: &BenchmarkRow,
    cal: &Calibration,
) -> Result<(Engine, Deployment), String> {
    let Some(tp) = row.tp else {
        return Err("row does not state the parallel layout (TP/PP)".into());
    };
    let engine = match row.engine.as_str() {
        "trtllm" => Engine::Trtllm,
        "vllm" => Engine::Vllm,
        other => {
            return Err(format!(
                "engine `{other}` is not modelled on fixed-length rows (TensorRT-LLM and vLLM runs are)"
            ))
        }
    };
    let precision: Precision = if row.precision.is_empty() && engine == Engine::Vllm {
        Precision::Bf16
    } else {
        row.precision.parse()?
    };
    let kv_precision = crate::workload::default_kv_precision(precision);
    let layout = Layout {
        tp: tp as u32,
        pp: row.pp.unwrap_or(1) as u32,
    };
    let dep = Deployment::new(model, gpu, layout, precision, kv_precision, cal)
        .and_then(|d| d.on_engine(engine, gpu, cal))
        .map_err(|e| e.to_string())?;
    Ok((engine, dep))
}

/// A static batch run to completion (vLLM's `bench latency`).
fn predict_static_batch(
    dep: &Deployment,
    row: &BenchmarkRow,
    (input_len, output_len): (u64, u64),
) -> Prediction {
    let batch = row
        .batch_or_concurrency
        .ok_or("static-batch row states no batch (batch_or_concurrency)")?;
    let engine = dep.engine;
    let b = static_batch(
        dep,
        batch,
        input_len,
        output_len,
        engine.profile().default_max_batched_tokens,
    );
    let value = match row.metric.as_str() {
        "e2e_latency_ms" => b.e2e_ms,
        "ttft_ms" => b.ttft_ms,
        "tpot_ms" => b.tpot_ms,
        other => {
            return Err(format!(
                "metric `{other}` is not predicted for static batches"
            ))
        }
    };
    Ok((
        value,
        Some(format!("static batch {batch} on {}", engine.label())),
    ))
}

/// A Triton burst of `requests` identical requests.
fn predict_burst(
    model: &gpuplan_catalog::ModelArch,
    gpu: &gpuplan_catalog::GpuSpec,
    dep: &Deployment,
    cal: &Calibration,
    row: &BenchmarkRow,
    (input_len, output_len): (u64, u64),
) -> Prediction {
    let requests = row
        .requests
        .ok_or("burst row states no request count (requests)")?;
    let (outputs, shares) = burst_output_lengths(row, output_len)?;
    let b = burst(model, gpu, dep, cal, input_len, &outputs, &shares, requests)
        .map_err(|e| e.to_string())?;
    let value = match row.metric.as_str() {
        "tpot_ms" => b.tpot_ms,
        "requests_per_s" => b.requests_per_s,
        "output_tokens_per_s" => b.output_tokens_per_s,
        other => return Err(format!("metric `{other}` is not predicted for bursts")),
    };
    Ok((
        value,
        Some(format!(
            "{}, peak {} in flight",
            b.bound.label(),
            b.peak_concurrency as u64
        )),
    ))
}

/// Output lengths of a burst's requests and the share of the requests at
/// each: the row's own when every request has it (`lengths` = fixed or
/// unstated), else its data set's output distribution (`lengths` = dataset:
/// a lognormal fitted to the data set's mean and p99 in
/// `benchmark_datasets.csv`). The burst's N requests sit at the N quantile
/// midpoints (the expected order statistics); the longest
/// [`BURST_TAIL_REQUESTS`] keep their own lengths, since the last to finish
/// set the drain, and the rest are averaged in [`BURST_BODY_GROUPS`] equal
/// groups. Rescaled to the exact mean.
fn burst_output_lengths(
    row: &BenchmarkRow,
    output_len: u64,
) -> Result<(Vec<f64>, Vec<f64>), String> {
    if row.lengths != "dataset" {
        return Ok((vec![output_len as f64], vec![1.0]));
    }
    let d = crate::mlperf_inference::dataset(&row.dataset).ok_or_else(|| {
        format!(
            "lengths = dataset but data set `{}` is not in benchmark_datasets.csv",
            row.dataset
        )
    })?;
    let (Some(mean), Some(p99)) = (d.output_mean, d.output_p99) else {
        return Err(format!(
            "data set `{}` publishes no output mean and p99",
            row.dataset
        ));
    };
    let cv2 = crate::tails::lognormal_cv2(mean, p99);
    let n = row.requests.unwrap_or(BURST_BODY_GROUPS as u64).max(1) as usize;
    let sorted: Vec<f64> = (0..n)
        .map(|k| crate::tails::lognormal_quantile(mean, cv2, (k as f64 + 0.5) / n as f64))
        .collect();
    let tail = BURST_TAIL_REQUESTS.min(n);
    let body = n - tail;
    let mut lengths = Vec::new();
    let mut shares = Vec::new();
    let groups = BURST_BODY_GROUPS.min(body);
    for g in 0..groups {
        let members = &sorted[g * body / groups..(g + 1) * body / groups];
        lengths.push(members.iter().sum::<f64>() / members.len() as f64);
        shares.push(members.len() as f64 / n as f64);
    }
    for &l in &sorted[body..] {
        lengths.push(l);
        shares.push(1.0 / n as f64);
    }
    let scale = mean / lengths.iter().zip(&shares).map(|(l, w)| l * w).sum::<f64>();
    let lengths = lengths
        .iter()
        .map(|l| (l * scale).round().max(1.0))
        .collect();
    Ok((lengths, shares))
}

/// Equal groups a burst's shorter answers are averaged in ([`burst_output_lengths`]).
const BURST_BODY_GROUPS: usize = 32;

/// A burst's longest answers, each kept at its own length ([`burst_output_lengths`]).
const BURST_TAIL_REQUESTS: usize = 16;

/// A trtllm-bench max-throughput run.
fn predict_max_throughput(
    model: &gpuplan_catalog::ModelArch,
    gpu: &gpuplan_catalog::GpuSpec,
    dep: &Deployment,
    cal: &Calibration,
    row: &BenchmarkRow,
    (input_len, output_len): (u64, u64),
) -> Prediction {
    if let (Some(requests), 1) = (row.requests, row.beam.unwrap_or(1)) {
        let (run, limit) = trtllm_bench_run(model, gpu, dep, cal, input_len, output_len, requests)
            .map_err(|e| e.to_string())?;
        let value = max_throughput_metric(row, run.output_tokens_per_s, run.requests_per_s)?;
        return Ok((
            value,
            Some(format!(
                "{}, {} by {}, {requests} requests",
                run.bound.label(),
                run.peak_concurrency as u64,
                limit.label()
            )),
        ));
    }
    let (state, limit) = trtllm_bench_throughput(model, gpu, dep, cal, input_len, output_len)
        .map_err(|e| e.to_string())?;
    let value = max_throughput_metric(row, state.output_tokens_per_s, state.requests_per_s)?;
    Ok((
        value,
        Some(format!(
            "{}, {} by {}",
            state.decode_bound.label(),
            state.concurrency as u64,
            limit.label()
        )),
    ))
}

/// The row's metric of a max-throughput run.
fn max_throughput_metric(
    row: &BenchmarkRow,
    output_tokens_per_s: f64,
    requests_per_s: f64,
) -> Result<f64, String> {
    match row.metric.as_str() {
        "output_tokens_per_s" => Ok(output_tokens_per_s),
        "requests_per_s" => Ok(requests_per_s),
        other => Err(format!(
            "metric `{other}` is not predicted for max-throughput runs"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuplan_catalog::{parse_benchmarks, BUNDLED_BENCHMARKS_DEV};

    fn dev_row(id: &str) -> BenchmarkRow {
        parse_benchmarks("dev", BUNDLED_BENCHMARKS_DEV)
            .unwrap()
            .into_iter()
            .find(|r| r.id == id)
            .unwrap()
    }

    /// A burst over a data set keeps the data set's mean and its longest
    /// answers one by one: the last lane is the expected longest of the
    /// burst's N requests (the (N − ½)/N quantile), not a group's mean.
    #[test]
    fn a_bursts_longest_answers_keep_their_own_lengths() {
        let row = dev_row("trtllm-online-011");
        assert_eq!(row.lengths, "dataset");
        let n = row.requests.unwrap() as f64;
        let (lengths, shares) = burst_output_lengths(&row, 214).unwrap();
        assert_eq!(lengths.len(), BURST_BODY_GROUPS + BURST_TAIL_REQUESTS);
        assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let mean: f64 = lengths.iter().zip(&shares).map(|(l, w)| l * w).sum();
        assert!((mean / 214.0 - 1.0).abs() < 0.01, "{mean}");
        let d = crate::mlperf_inference::dataset(&row.dataset).unwrap();
        let cv2 = crate::tails::lognormal_cv2(214.0, d.output_p99.unwrap());
        let longest = crate::tails::lognormal_quantile(214.0, cv2, (n - 0.5) / n);
        let last = *lengths.last().unwrap();
        assert!((last / longest - 1.0).abs() < 0.02, "{last} vs {longest}");
        assert!(shares[lengths.len() - 1] * n - 1.0 < 1e-9);
        assert!(lengths.windows(2).all(|w| w[0] <= w[1]), "{lengths:?}");
        // A fixed-length row is one length.
        let fixed = dev_row("trtllm-online-007");
        assert_eq!(
            burst_output_lengths(&fixed, 256).unwrap(),
            (vec![256.0], vec![1.0])
        );
    }
}
