//! Why candidates were rejected: typed reasons, one example each (the
//! nearest miss where "near" has a meaning), and the hint shown when nothing
//! is feasible.

use crate::workload::InferenceWorkload;
use serde::Serialize;
use std::collections::BTreeMap;

/// Why a candidate was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectReason {
    /// The accelerator has no spec in gpus.csv.
    NoGpuSpec,
    /// The accelerator needs a serving stack the model does not cover (TPU, Neuron ...).
    AcceleratorNotModelled,
    /// The offering is a fraction of a GPU.
    FractionalGpu,
    /// No price the workload may use (no on-demand price and spot not allowed).
    NoPrice,
    /// The price is flagged as suspicious and `pricing.trust = "strict"`.
    UntrustedPrice,
    /// Provider not in `constraints.providers`.
    ProviderNotAllowed,
    /// Region not matching `constraints.regions`.
    RegionNotAllowed,
    /// Region outside `constraints.geo` / `constraints.countries`.
    OutsideResidency,
    /// GPU not allowed by `constraints.gpus` / `exclude_gpus`.
    GpuNotAllowed,
    /// The GPU or serving engine cannot run this precision (e.g. FP4 before Blackwell).
    PrecisionUnsupported,
    /// The serving engine does not run on this GPU (TensorRT-LLM on AMD) or
    /// not with this kernel or KV-cache precision.
    EngineUnsupported,
    /// The layout does not divide the model (TP vs heads, PP vs layers).
    LayoutInvalid,
    /// Weights, workspace and one p99 sequence do not fit.
    DoesNotFit,
    /// The replica would need more GPUs than allowed or than the instance has without a fast fabric.
    TooManyGpus,
    /// The peak needs more replicas than any real fleet (see `MAX_REPLICAS`).
    TooManyReplicas,
    /// p99 TTFT cannot meet the SLO at any batch size.
    TtftSlo,
    /// p99 TPOT cannot meet the SLO at any batch size.
    TpotSlo,
    /// p99 end-to-end latency cannot meet the SLO.
    E2eSlo,
    /// The fleet costs more than `max_usd_per_hour`.
    OverBudget,
    /// Training: the expected wall time misses `goals.deadline_hours`.
    MissesDeadline,
    /// Training: the total cost exceeds `goals.max_usd`.
    OverTotalBudget,
}

impl RejectReason {
    /// One-line description.
    pub fn describe(self) -> &'static str {
        match self {
            RejectReason::NoGpuSpec => "accelerator has no published spec in the catalog",
            RejectReason::AcceleratorNotModelled => {
                "accelerator needs a non-GPU serving stack (TPU/Neuron/Gaudi): not modelled"
            }
            RejectReason::FractionalGpu => "offering is a fraction of a GPU",
            RejectReason::NoPrice => "no usable price (no on-demand price and spot not allowed)",
            RejectReason::UntrustedPrice => {
                "price flagged as suspicious (pricing.trust = \"strict\")"
            }
            RejectReason::ProviderNotAllowed => "provider not allowed by constraints.providers",
            RejectReason::RegionNotAllowed => "region not allowed by constraints.regions",
            RejectReason::OutsideResidency => "region outside the data-residency constraint",
            RejectReason::GpuNotAllowed => "GPU not allowed by constraints.gpus / exclude_gpus",
            RejectReason::PrecisionUnsupported => "GPU or serving engine cannot run this precision",
            RejectReason::EngineUnsupported => {
                "serving engine does not run on this GPU with this precision"
            }
            RejectReason::LayoutInvalid => {
                "TP/PP layout does not divide the model (TP vs heads, PP vs layers)"
            }
            RejectReason::DoesNotFit => "does not fit in GPU memory",
            RejectReason::TooManyGpus => {
                "layout needs more GPUs than allowed or than one instance has (no fast fabric)"
            }
            RejectReason::TooManyReplicas => "peak needs more replicas than any real fleet",
            RejectReason::TtftSlo => "p99 TTFT above the SLO at every batch size",
            RejectReason::TpotSlo => "p99 TPOT above the SLO at every batch size",
            RejectReason::E2eSlo => "p99 end-to-end latency above the SLO",
            RejectReason::OverBudget => "fleet costs more than constraints.max_usd_per_hour",
            RejectReason::MissesDeadline => "expected time to train exceeds goals.deadline_hours",
            RejectReason::OverTotalBudget => "total cost exceeds goals.max_usd",
        }
    }
}

/// Count and one example of a rejection reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    /// Candidates rejected for this reason.
    pub count: usize,
    /// What the reason means.
    pub description: &'static str,
    /// One concrete example: the nearest miss where the reason has a measure
    /// (lowest latency for an SLO, lowest cost over budget), else the first.
    pub example: String,
}

/// A rejected candidate's measure of how far it missed (latency in ms for an
/// SLO, USD/hour over a budget): smaller is nearer.
pub(crate) type Miss = f64;

/// Collects rejections while the search runs.
#[derive(Debug, Default)]
pub(crate) struct Rejections {
    by_reason: BTreeMap<RejectReason, (Rejection, Option<Miss>)>,
}

impl Rejections {
    /// Counts `n` candidates rejected for `reason`; `example` is built only
    /// for the first one, or when `miss` is nearer than the kept example's.
    pub fn add(
        &mut self,
        reason: RejectReason,
        n: usize,
        miss: Option<Miss>,
        example: impl FnOnce() -> String,
    ) {
        match self.by_reason.get_mut(&reason) {
            None => {
                let rejection = Rejection {
                    count: n,
                    description: reason.describe(),
                    example: example(),
                };
                self.by_reason.insert(reason, (rejection, miss));
            }
            Some((rejection, kept)) => {
                rejection.count += n;
                if let Some(m) = miss {
                    if kept.is_none_or(|k| m < k) {
                        rejection.example = example();
                        *kept = Some(m);
                    }
                }
            }
        }
    }

    /// The nearest miss recorded for `reason`.
    pub fn nearest(&self, reason: RejectReason) -> Option<Miss> {
        self.by_reason.get(&reason).and_then(|(_, m)| *m)
    }

    /// Whether any candidate was rejected for `reason`.
    pub fn contains(&self, reason: RejectReason) -> bool {
        self.by_reason.contains_key(&reason)
    }

    /// The reason with most rejected candidates.
    pub fn most_common(&self) -> Option<RejectReason> {
        self.by_reason
            .iter()
            .max_by_key(|(_, (r, _))| r.count)
            .map(|(k, _)| *k)
    }

    /// The collected rejections.
    pub fn into_map(self) -> BTreeMap<RejectReason, Rejection> {
        self.by_reason
            .into_iter()
            .map(|(k, (r, _))| (k, r))
            .collect()
    }
}

/// What to relax when nothing is feasible: the nearest miss of the most
/// decisive reason.
pub(crate) fn hint(w: &InferenceWorkload, rejected: &Rejections) -> String {
    if let Some(cost) = rejected.nearest(RejectReason::OverBudget) {
        return format!(
            "raise constraints.max_usd_per_hour: the cheapest plan that meets the SLO costs ${cost:.2}/h"
        );
    }
    if let Some(v) = rejected.nearest(RejectReason::TpotSlo) {
        return format!(
            "relax slo.tpot_ms_p99 (the best any candidate reaches is {v:.1} ms), or allow faster GPUs / more GPUs per replica"
        );
    }
    if let Some(v) = rejected.nearest(RejectReason::TtftSlo) {
        return format!(
            "relax slo.ttft_ms_p99 (a p99 prompt alone takes at least {v:.0} ms to prefill on the allowed GPUs), or shorten prompts"
        );
    }
    if let Some(v) = rejected.nearest(RejectReason::E2eSlo) {
        return format!("relax slo.e2e_ms_p99 (the best any candidate reaches is {v:.0} ms)");
    }
    if rejected.contains(RejectReason::TooManyReplicas) {
        return "lower traffic.requests_per_s or raise constraints.max_utilization: the peak needs more replicas than any real fleet".into();
    }
    if rejected.contains(RejectReason::DoesNotFit) {
        let more = if w.constraints.max_gpus_per_replica < 16 {
            "raise constraints.max_gpus_per_replica, "
        } else {
            ""
        };
        return format!("the model does not fit: {more}allow lower precisions (model.precisions = [\"fp8\", \"int4\"]) or GPUs with more memory");
    }
    match rejected.most_common() {
        Some(RejectReason::OutsideResidency) => "widen constraints.geo / constraints.countries: no allowed GPU offering in those jurisdictions fits".into(),
        Some(RejectReason::ProviderNotAllowed) => "allow more providers in constraints.providers".into(),
        Some(RejectReason::RegionNotAllowed) => "allow more regions in constraints.regions".into(),
        Some(RejectReason::GpuNotAllowed) => "allow more GPUs in constraints.gpus".into(),
        Some(RejectReason::UntrustedPrice) => "set pricing.trust = \"flag\" to use flagged prices (shown with a marker), or allow more providers".into(),
        Some(RejectReason::PrecisionUnsupported) => "allow other precisions in model.precisions: the allowed GPUs or engine cannot run these".into(),
        Some(RejectReason::EngineUnsupported) => "allow another engine (engines = [\"vllm\", \"sglang\", \"trtllm\"]) or other GPUs: the engine does not run on the allowed ones".into(),
        _ => "relax the constraints: no offering passed them".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_is_the_nearest_miss() {
        let mut r = Rejections::default();
        r.add(RejectReason::OverBudget, 1, Some(300.0), || "300".into());
        r.add(RejectReason::OverBudget, 1, Some(120.0), || "120".into());
        r.add(RejectReason::OverBudget, 1, Some(900.0), || "900".into());
        assert_eq!(r.nearest(RejectReason::OverBudget), Some(120.0));
        let map = r.into_map();
        assert_eq!(map[&RejectReason::OverBudget].example, "120");
        assert_eq!(map[&RejectReason::OverBudget].count, 3);
    }

    #[test]
    fn without_a_measure_the_first_example_stays() {
        let mut r = Rejections::default();
        r.add(RejectReason::NoPrice, 1, None, || "first".into());
        r.add(RejectReason::NoPrice, 2, None, || "second".into());
        let map = r.into_map();
        assert_eq!(map[&RejectReason::NoPrice].example, "first");
        assert_eq!(map[&RejectReason::NoPrice].count, 3);
    }
}
