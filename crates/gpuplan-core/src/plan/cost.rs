//! Step 3 of the search: how many replicas and instances cover the peak, what
//! they cost, and the latency they give at that load.

use super::candidates::Candidate;
use super::capacity::{
    peak_share_rps, spot_capacity_loss, CapacityContext, PeakReplicas, ReplicaChoice,
};
use super::launch::{engine_notes, max_model_len, min_engine_version, replica_launch};
use super::rejections::RejectReason;
use super::report::{Derivation, Plan};
use crate::layout::Layout;
use crate::tails::Tails;
use crate::workload::InferenceWorkload;

/// Most replicas one plan may have. The largest public LLM fleets run
/// thousands of GPUs per model; 100,000 replicas of one deployment is beyond
/// any real fleet and keeps every count far inside `u32`.
pub const MAX_REPLICAS: u64 = 100_000;

/// Replicas and instances of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fleet {
    /// Replicas the peak needs before `min_replicas`.
    pub replicas_for_peak: u32,
    /// Replicas run: at least the peak's and `min_replicas`, and every whole
    /// replica the billed instances can host (paid GPUs are not left idle).
    pub replicas: u32,
    /// Instances billed.
    pub instances: u32,
    /// Billed GPUs no replica uses (the layout does not divide the instance).
    pub idle_gpus: u32,
}

/// Sizes the fleet for `needed` replicas (a real number, ceil'd here).
/// `nodes` > 1: one replica spans that many instances. Errors when the count
/// is not a finite number within [`MAX_REPLICAS`].
pub(crate) fn size_fleet(
    needed: f64,
    min_replicas: u32,
    layout: Layout,
    gpus_per_instance: u32,
    nodes: u32,
) -> Result<Fleet, String> {
    // NaN is caught here too (f64::max would turn it into 1).
    if needed.is_nan() || needed > MAX_REPLICAS as f64 {
        return Err(format!(
            "needs {needed:.3e} replicas for the peak, more than {MAX_REPLICAS}"
        ));
    }
    let for_peak = needed.ceil().max(1.0);
    let for_peak = for_peak as u64;
    let wanted = for_peak.max(u64::from(min_replicas));
    if wanted > MAX_REPLICAS {
        return Err(format!(
            "min_replicas {min_replicas} is more than {MAX_REPLICAS}"
        ));
    }
    let g = u64::from(layout.gpus());
    let per_instance = u64::from(gpus_per_instance);
    let (replicas, instances) = if nodes > 1 {
        (wanted, wanted * u64::from(nodes))
    } else {
        let per = (per_instance / g).max(1);
        let instances = wanted.div_ceil(per);
        (instances * per, instances)
    };
    let billed_gpus = instances * per_instance;
    let used_gpus = replicas * g;
    // All within MAX_REPLICAS × 16 GPUs × 4 nodes: no conversion can truncate.
    Ok(Fleet {
        replicas_for_peak: for_peak as u32,
        replicas: replicas as u32,
        instances: instances as u32,
        idle_gpus: billed_gpus.saturating_sub(used_gpus) as u32,
    })
}

/// One way to buy a candidate: its layout, instances per replica, and price.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Purchase<'a> {
    pub candidate: &'a Candidate<'a>,
    pub layout: Layout,
    /// Instances one replica spans.
    pub nodes: u32,
    pub choice: &'a ReplicaChoice,
    pub spot: bool,
    /// List price per instance-hour, USD.
    pub list_price: f64,
}

/// A replica's share of the peak and its tails there.
pub(crate) struct AtPeak {
    lambda: f64,
    tails: Tails,
}

/// Prices one purchase: replicas for the peak, instances, $/hour and the
/// latency at peak. Errors, with the rejection reason, when the fleet would
/// be absurdly large or a p99 at the replicas' share of the peak misses its
/// SLO (the capacity search bounds the tails at the capacity rate; a plan
/// must never print a p99 above its target at the load it is sized for).
pub(crate) fn price_plan(
    cx: &CapacityContext<'_>,
    buy: &Purchase<'_>,
) -> Result<Plan, (RejectReason, String)> {
    let w = cx.workload;
    let o = buy.candidate.offering;
    let choice = buy.choice;
    // Spot: a preempted instance is down for the replacement time; plan enough
    // replicas that the expected remaining capacity still covers the peak.
    let (loss, needed) = if buy.spot {
        (spot_capacity_loss(w), choice.peak_replicas.pooled_spot)
    } else {
        (0.0, choice.peak_replicas.pooled)
    };
    // The fewest replicas that meet the SLO behind the router (their slots
    // pooled, their prompts spread): the tails below are at that fleet.
    let fleet = size_fleet(
        needed,
        w.constraints.min_replicas,
        buy.layout,
        buy.candidate.gpus_per_instance,
        buy.nodes,
    )
    .map_err(|why| (RejectReason::TooManyReplicas, why))?;
    let discount = if buy.spot {
        0.0
    } else {
        w.pricing.discounts.get(&o.provider).copied().unwrap_or(0.0)
    };
    let usd_per_hour = f64::from(fleet.instances) * buy.list_price * (1.0 - discount);
    let lambda = peak_share_rps(w, f64::from(fleet.replicas), loss);
    let tails = cx.fleet_tails(
        &choice.dep,
        choice.cap.batch,
        choice.cap.service_s,
        fleet.replicas,
        lambda,
    );
    slo_at_peak(w, &tails, lambda)?;
    let at_peak = AtPeak { lambda, tails };
    Ok(assemble(
        cx,
        buy,
        fleet,
        usd_per_hour,
        discount,
        loss,
        &at_peak,
    ))
}

/// Replicas the peak needs at one replica's own capacity, less the spot
/// capacity `loss` (whole replicas, at most [`MAX_REPLICAS`]).
fn replicas_alone(peak: &PeakReplicas, loss: f64) -> u32 {
    (peak.alone / (1.0 - loss))
        .ceil()
        .clamp(1.0, MAX_REPLICAS as f64) as u32
}

/// The SLO a p99 at the replicas' share of the peak misses, if any.
fn slo_at_peak(
    w: &InferenceWorkload,
    t: &Tails,
    lambda: f64,
) -> Result<(), (RejectReason, String)> {
    // A fleet whose replicas' prefill queues grow without bound at their
    // share of the peak is never a plan, SLO or not (no p99 would be finite).
    if !t.e2e_p99_s.is_finite() {
        return Err((
            RejectReason::E2eSlo,
            format!(
                "unstable at {lambda:.2} req/s per replica: prefill {:.0}% busy, latency unbounded",
                t.prefill_utilization * 100.0
            ),
        ));
    }
    let checks = [
        (
            RejectReason::TtftSlo,
            "TTFT",
            w.slo.ttft_ms_p99,
            t.ttft_p99_s * 1e3,
        ),
        (
            RejectReason::TpotSlo,
            "TPOT",
            w.slo.tpot_ms_p99,
            t.tpot_p99_ms,
        ),
        (
            RejectReason::E2eSlo,
            "end-to-end",
            w.slo.e2e_ms_p99,
            t.e2e_p99_s * 1e3,
        ),
    ];
    for (reason, name, limit, value) in checks {
        if let Some(limit) = limit {
            if value.is_nan() || value > limit * (1.0 + 1e-9) {
                return Err((
                    reason,
                    format!(
                        "{name} p99 {value:.1} ms at {lambda:.2} req/s per replica > {limit} ms"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Builds the plan record from its computed parts.
fn assemble(
    cx: &CapacityContext<'_>,
    buy: &Purchase<'_>,
    fleet: Fleet,
    usd_per_hour: f64,
    discount: f64,
    loss: f64,
    at_peak: &AtPeak,
) -> Plan {
    let w = cx.workload;
    let o = buy.candidate.offering;
    let choice = buy.choice;
    let cap = &choice.cap;
    let out_tokens_per_hour_peak = w.peak_requests_per_s * w.output_tokens.mean * 3600.0;
    let out_tokens_per_hour_mean = w.mean_requests_per_s * w.output_tokens.mean * 3600.0;
    let utilization = at_peak.lambda / cap.max_rps;
    let max_model_len = max_model_len(w, choice, cx.context_p99());
    let launch = replica_launch(w, choice, max_model_len);
    Plan {
        rank: 0,
        provider: o.provider.clone(),
        region: o.region.clone(),
        location: String::new(),
        also_in_regions: vec![],
        instance_type: o.instance_type.clone(),
        gpu: buy.candidate.gpu.name.clone(),
        gpus_per_instance: buy.candidate.gpus_per_instance,
        gpus_per_replica: buy.layout.gpus(),
        replicas: fleet.replicas,
        instances: fleet.instances,
        idle_gpus: fleet.idle_gpus,
        tp: buy.layout.tp,
        pp: buy.layout.pp,
        precision: choice.dep.precision,
        kv_precision: choice.dep.kv_precision,
        spot: buy.spot,
        max_num_seqs: cap.batch,
        max_batched_tokens: w.max_batched_tokens,
        max_model_len,
        memory_utilization: w.memory_utilization,
        usd_per_hour,
        usd_per_million_output_tokens: usd_per_hour / out_tokens_per_hour_peak * 1e6,
        usd_per_million_output_tokens_at_mean: usd_per_hour / out_tokens_per_hour_mean * 1e6,
        ttft_ms_p99: at_peak.tails.ttft_p99_s * 1e3,
        tpot_ms_p99: at_peak.tails.tpot_p99_ms,
        itl_ms_p99: at_peak.tails.itl_p99_ms,
        e2e_ms_p99: at_peak.tails.e2e_p99_s * 1e3,
        utilization,
        headroom: 1.0 - utilization,
        price_source: o.source_snapshot.clone(),
        price_date: o.snapshot_date().map(str::to_string),
        price_flags: Vec::new(),
        calibrated: choice.dep.calibrated_family,
        derivation: derivation(cx, buy, &fleet, discount, loss, at_peak),
        simulated: None,
        engine: choice.dep.engine,
        launch_command: launch.command,
        launch_files: launch.files,
        checkpoint: choice.serving.repo.clone(),
        weight_kernel: choice.serving.kernel.label().to_string(),
        min_engine_version: min_engine_version(choice),
        launch_notes: engine_notes(choice),
    }
}

/// How the plan's numbers were computed, for `--explain` and the JSON.
fn derivation(
    cx: &CapacityContext<'_>,
    buy: &Purchase<'_>,
    fleet: &Fleet,
    discount: f64,
    loss: f64,
    at_peak: &AtPeak,
) -> Derivation {
    let w = cx.workload;
    let choice = buy.choice;
    let cap = &choice.cap;
    Derivation {
        memory: choice.memory.per_gpu,
        kv_cache_tokens: choice.memory.kv_cache_tokens,
        kv_sequences: choice.kv_sequences,
        prefill_bound: cap.prefill_bound,
        decode_bound: cap.decode_bound,
        iteration_ms_full_batch: cap.iteration_full_s * 1e3,
        service_s: cap.batch as f64 / cap.max_rps,
        max_requests_per_s_per_replica: cap.max_rps,
        capacity_requests_per_s_per_replica: cap.capacity_rps,
        peak_requests_per_s_per_replica: at_peak.lambda,
        p_wait_at_peak: at_peak.tails.slot_wait_probability,
        queue_wait_ms_p99: at_peak.tails.slot_wait_p99_s * 1e3,
        prefill_utilization: at_peak.tails.prefill_utilization,
        prefill_wait_ms_mean: at_peak.tails.prefill_wait_mean_s * 1e3,
        prefill_wait_ms_p99: at_peak.tails.prefill_wait_p99_s * 1e3,
        prefill_ms_mean: at_peak.tails.prefill_mean_s * 1e3,
        prefill_ms_p99: at_peak.tails.prefill_p99_s * 1e3,
        co_batched_prefill_ms: at_peak.tails.co_batched_prefill_s * 1e3,
        tpot_ms_mean: at_peak.tails.tpot_mean_ms,
        ca2: cx.ca2,
        cs2: cx.cs2,
        replicas_for_peak: fleet.replicas_for_peak,
        replicas_for_peak_alone: replicas_alone(&choice.peak_replicas, loss),
        instances: fleet.instances,
        list_usd_per_instance_hour: buy.list_price,
        discount,
        spot_preemptions_per_hour: buy.spot.then_some(w.pricing.spot_preemptions_per_hour),
        spot_capacity_loss: buy.spot.then_some(loss),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP1: Layout = Layout { tp: 1, pp: 1 };

    #[test]
    fn paid_gpus_run_replicas() {
        // 51 replicas of one GPU on 8-GPU instances: 7 instances, and all 56 GPUs serve.
        let f = size_fleet(50.2, 1, TP1, 8, 1).unwrap();
        assert_eq!(
            (f.replicas_for_peak, f.instances, f.replicas, f.idle_gpus),
            (51, 7, 56, 0)
        );
        // TP4 on a 6-GPU instance: one replica each, two GPUs idle per instance.
        let f = size_fleet(3.0, 1, Layout { tp: 4, pp: 1 }, 6, 1).unwrap();
        assert_eq!((f.instances, f.replicas, f.idle_gpus), (3, 3, 6));
        // A replica over two 8-GPU nodes.
        let f = size_fleet(2.5, 1, Layout { tp: 8, pp: 2 }, 8, 2).unwrap();
        assert_eq!((f.replicas, f.instances, f.idle_gpus), (3, 6, 0));
        // min_replicas wins when the peak needs fewer.
        let f = size_fleet(0.3, 3, TP1, 1, 1).unwrap();
        assert_eq!((f.replicas_for_peak, f.replicas, f.instances), (1, 3, 3));
    }

    #[test]
    fn absurd_fleets_are_errors_not_wrapped_counts() {
        for needed in [
            f64::INFINITY,
            f64::NAN,
            1e308,
            2e10,
            (MAX_REPLICAS + 1) as f64,
        ] {
            assert!(size_fleet(needed, 1, TP1, 8, 1).is_err(), "{needed}");
        }
        assert!(size_fleet(1.0, u32::MAX, TP1, 8, 1).is_err());
        assert!(size_fleet(1.0, 2_147_483_648, Layout { tp: 8, pp: 4 }, 8, 4).is_err());
        // The largest allowed fleet still counts exactly.
        let f = size_fleet(MAX_REPLICAS as f64, 1, Layout { tp: 16, pp: 4 }, 16, 4).unwrap();
        assert_eq!(f.instances as u64, MAX_REPLICAS * 4);
    }
}
