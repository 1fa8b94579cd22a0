//! Step 4 of the search: rank the priced plans, fold identical plans in other
//! regions into one, and take the cost-versus-latency Pareto frontier.

use super::report::Plan;
use crate::layout::Layout;
use gpuplan_catalog::Precision;
use std::cmp::Ordering;
use std::collections::HashMap;

/// Cheapest first. At equal cost the faster plan first — TTFT p99 (a
/// pipeline split of a model that fits one GPU prefills slower than plain
/// replicas), then end-to-end p99, then fewer GPUs per replica — and then a
/// stable order by name so the output is deterministic.
pub(crate) fn rank_order(a: &Plan, b: &Plan) -> Ordering {
    a.usd_per_hour
        .total_cmp(&b.usd_per_hour)
        .then_with(|| a.ttft_ms_p99.total_cmp(&b.ttft_ms_p99))
        .then_with(|| a.e2e_ms_p99.total_cmp(&b.e2e_ms_p99))
        .then_with(|| a.gpus_per_replica.cmp(&b.gpus_per_replica))
        .then_with(|| a.provider.cmp(&b.provider))
        .then_with(|| a.instance_type.cmp(&b.instance_type))
        .then_with(|| a.region.cmp(&b.region))
}

/// What makes two plans the same deployment, whatever the region.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PlanKey {
    provider: String,
    instance_type: String,
    layout: Layout,
    precision: Precision,
    engine: crate::engine::Engine,
    spot: bool,
    max_num_seqs: u64,
    /// Cost in hundredths of a cent per hour: equal prices compare equal.
    usd_per_hour_e4: i64,
}

impl PlanKey {
    fn of(p: &Plan) -> Self {
        PlanKey {
            provider: p.provider.clone(),
            instance_type: p.instance_type.clone(),
            layout: Layout { tp: p.tp, pp: p.pp },
            precision: p.precision,
            engine: p.engine,
            spot: p.spot,
            max_num_seqs: p.max_num_seqs,
            usd_per_hour_e4: (p.usd_per_hour * 1e4).round() as i64,
        }
    }
}

/// Sorts the plans and folds the same deployment in other regions into the
/// first one's `also_in_regions`.
pub(crate) fn rank_distinct(mut plans: Vec<Plan>) -> Vec<Plan> {
    plans.sort_by(rank_order);
    let mut distinct: Vec<Plan> = Vec::new();
    let mut index: HashMap<PlanKey, usize> = HashMap::new();
    for p in plans {
        match index.get(&PlanKey::of(&p)) {
            Some(&i) => distinct[i].also_in_regions.push(p.region.clone()),
            None => {
                index.insert(PlanKey::of(&p), distinct.len());
                distinct.push(p);
            }
        }
    }
    distinct
}

/// The plans no other plan beats on both cost and p99 end-to-end latency,
/// cheapest first. `ranked` must be in [`rank_order`].
pub(crate) fn pareto(ranked: &[Plan]) -> Vec<Plan> {
    let mut frontier: Vec<Plan> = Vec::new();
    let mut best_latency = f64::INFINITY;
    for p in ranked {
        if p.e2e_ms_p99 < best_latency * (1.0 - 1e-9) {
            best_latency = p.e2e_ms_p99;
            frontier.push(p.clone());
        }
    }
    frontier
}

/// Numbers the top plans 1..n and gives each frontier plan the rank of the
/// same plan among the top (0 when it is not among them).
pub(crate) fn assign_ranks(top: &mut [Plan], frontier: &mut [Plan]) {
    for (i, p) in top.iter_mut().enumerate() {
        p.rank = i + 1;
    }
    for p in frontier.iter_mut() {
        let key = (PlanKey::of(p), p.region.clone());
        p.rank = top
            .iter()
            .find(|t| (PlanKey::of(t), t.region.clone()) == key)
            .map_or(0, |t| t.rank);
    }
}
