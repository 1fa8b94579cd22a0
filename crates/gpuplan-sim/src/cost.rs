//! What one engine iteration costs: the simulator's only view of the hardware.

use gpuplan_core::{Deployment, IterationWork};

/// Time of one engine iteration of a replica for a given mix of work.
///
/// [`DeploymentCost`] drives it with the roofline of `gpuplan-core`; tests
/// drive it with closed-form service times.
pub trait CostModel {
    /// Seconds one iteration of the whole replica (every pipeline stage) takes
    /// for `work`, the whole batch's work.
    fn iteration_s(&self, work: &IterationWork) -> f64;
}

/// The per-iteration roofline of a [`Deployment`], with pipeline parallelism
/// as `gpuplan_core::steady_state` models it.
#[derive(Debug, Clone)]
pub struct DeploymentCost {
    deployment: Deployment,
    pp: f64,
}

impl DeploymentCost {
    /// The cost model of one replica of `deployment`.
    pub fn new(deployment: Deployment) -> Self {
        let pp = f64::from(deployment.layout.pp);
        DeploymentCost { deployment, pp }
    }

    /// The deployment it prices.
    pub fn deployment(&self) -> &Deployment {
        &self.deployment
    }
}

impl CostModel for DeploymentCost {
    fn iteration_s(&self, work: &IterationWork) -> f64 {
        // PP runs the batch as pp micro-batches of 1/pp each through pp
        // stages: one iteration of the whole batch is pp stage iterations of
        // a micro-batch, as `steady_state` counts it (pp = 1: the plain cost).
        let per_stage = IterationWork {
            decode_seqs: work.decode_seqs / self.pp,
            decode_context_sum: work.decode_context_sum / self.pp,
            prefill_tokens: work.prefill_tokens / self.pp,
            prefill_attention_pairs: work.prefill_attention_pairs / self.pp,
            logit_tokens: work.logit_tokens / self.pp,
        };
        self.pp * self.deployment.iteration(&per_stage).total_s
    }
}

impl<T: CostModel + ?Sized> CostModel for &T {
    fn iteration_s(&self, work: &IterationWork) -> f64 {
        (**self).iteration_s(work)
    }
}
