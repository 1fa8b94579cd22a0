//! The prefill queue: admitted prompts share each iteration's token budget
//! first-come first-served, and the router decides how bursts spread over
//! the replicas' queues.

use super::{Load, TailModel};

/// How far the least-outstanding router evens out the bursts of a bursty
/// stream across replicas for the terms that see one replica's prompts
/// beside its decodes (TPOT, co-batched prompts): a replica keeps a share
/// n^(−this) of the stream's excess burstiness ([`TailModel::prefill_ca2`]).
/// Between 0 (independent replicas) and 1 (round robin); fitted on the
/// simulator's grid (`cargo test --release -p gpuplan-sim --test grid`),
/// not on measurements.
const ROUTER_POOLING_EXPONENT: f64 = 0.5;

/// The index of dispersion that the arrivals replacing a replica's own
/// departures add to its prefill queue, per unit of the (1 − 1/n) share of
/// its arrivals they are. Behind the least-outstanding router a replica's
/// arrivals are its 1/n turn of the fleet's stream plus the arrivals that
/// replace its departures; counted over a request's life their index of
/// dispersion is c_a²/n + (1 − 1/n)·c_s² (measured in the simulator,
/// [`TailModel::router_count_smoothing`]). The prefill queue forms over a
/// few prompts, where the router also steers arrivals away from a replica
/// while its count is high, and there the departures' part does not follow
/// the output lengths: qwen2.5-32b at 1,500/100 tokens on 3 H100s gives a
/// simulated TTFT p99 of 583, 577 and 579 ms at output c_v² 0.03, 0.33 and
/// 1.6 (`tests/router.rs` in gpuplan-sim). Fitted on the simulator's grid
/// over two models (`GRID_MODEL=llama-3.1-8b` and `qwen2.5-32b`, `cargo test
/// --release -p gpuplan-sim --test grid`; 0.1 and 0.15 equal over the five
/// models at nine seeds, 0.15 a little better against 36, 0.2 and 0.25
/// worse once prompts' attention is priced over their length-biased mean)
/// and checked on three it was not fitted on (mixtral-8x7b, qwen2.5-14b,
/// mistral-7b-v0.3), not on measurements.
const DEPARTURE_DISPERSION: f64 = 0.15;

impl TailModel<'_> {
    /// Work one prompt brings to the prefill queue, s: when backlogged, the
    /// prefill server fills each iteration's budget, so a token costs its
    /// time in a budget-full iteration plus its share of the iteration's
    /// fixed part. (Priced at the arrivals' own chunk instead, a MoE model's
    /// few-token prompts, each waking its own experts, made a light load
    /// unstable where a heavier one, in bigger chunks, was not.)
    pub(super) fn prefill_work_s(&self, load: &Load) -> f64 {
        self.inputs.input_mean * (load.backlog_per_token_s + load.t0 / load.budget)
    }

    /// Squared coefficient of variation of the prompt arrivals one replica
    /// prefills. The router (least outstanding requests) sends each arrival
    /// to the replica with the fewest sequences in flight; their counts
    /// differ by their own random swings, so a burst spreads over some of the
    /// replicas, not one per replica. A replica keeps a share n^(−1/2) of the
    /// stream's excess burstiness c_a² − 1: between one replica (all of it)
    /// and round robin (1/n); the exponent is fitted on the simulator's grid
    /// (`cargo test --release -p gpuplan-sim --test grid`), not on
    /// measurements.
    pub(super) fn prefill_ca2(&self) -> f64 {
        let replicas = self.inputs.slot_pool_replicas.max(1.0);
        1.0 + (self.inputs.ca2 - 1.0) * replicas.powf(-ROUTER_POOLING_EXPONENT)
    }

    /// How much less the count of prompts a replica gets over a request's
    /// life varies than its arrivals' c_a² says, behind the least-outstanding
    /// router: (1 − 1/n)·(1 − c_s²), c_s² the output length's. The router
    /// sends each arrival to the replica with the fewest requests in flight,
    /// so a replica's arrivals follow its own completions (each departure is
    /// soon replaced) plus its 1/n share of the fleet's swings; completions
    /// over a long window vary as the slot times do. Measured in the
    /// simulator (counts over a 6 s window, qwen2.5-32b on H100s, output
    /// c_s² 0.33): index of dispersion 0.49 and 0.38 for Poisson traffic on
    /// 4 and 12 replicas, 0.28 for c_a 0.5 on 12 replicas, 1.64 for c_a 4 on
    /// 12 (c_a²/n + (1 − 1/n)·c_s² gives 0.50, 0.39, 0.32 and 1.64). Only
    /// the Poisson part is taken out here: the bursty excess keeps the
    /// router's n^(−½) share ([`Self::prefill_ca2`]), which the simulator's
    /// grid fits better than the counts alone (a burst's clump also
    /// lengthens the iterations it lands in, which the count misses).
    pub(super) fn router_count_smoothing(&self) -> f64 {
        let replicas = self.inputs.slot_pool_replicas.max(1.0);
        (1.0 - 1.0 / replicas) * (1.0 - self.inputs.cs2).max(0.0)
    }

    /// Burstiness (c_a²) of the prompts that reach one replica's prefill
    /// queue: its 1/n turn of the fleet's stream (a renewal stream's gaps
    /// summed n at a time: c_a²/n) plus the arrivals that replace its own
    /// departures ([`DEPARTURE_DISPERSION`]). One replica keeps its stream's
    /// c_a².
    pub(super) fn prefill_queue_ca2(&self) -> f64 {
        let replicas = self.inputs.slot_pool_replicas.max(1.0);
        self.inputs.ca2 / replicas + (1.0 - 1.0 / replicas) * DEPARTURE_DISPERSION
    }

    /// Share of the GPU's time the prefill queue keeps busy.
    pub(super) fn prefill_utilization(&self, lambda: f64, load: &Load) -> f64 {
        lambda * self.prefill_work_s(load)
    }

    /// The G/G/1 prefill queue's wait (Allen–Cunneen conditional mean,
    /// exponential conditional tail); `None` when it is unstable
    /// (utilisation ≥ 1). A prompt finds the prefill busy with probability
    /// ρ and then waits an exponential time of mean
    /// (c_a² + c_s²)/2 · E[S]/(1 − ρ), c_a² that of the prompts the router
    /// gives this replica ([`Self::prefill_queue_ca2`]), c_s² the prompt
    /// length's. Its p99 solves ρ·e^(−t/m) = 1 %.
    pub(super) fn prefill_wait(&self, lambda: f64, load: &Load) -> Option<PrefillWait> {
        let rho = self.prefill_utilization(lambda, load);
        if rho >= 1.0 {
            return None;
        }
        // Allen–Cunneen: E[W | W > 0] = (c_a² + c_s²)/2 · E[S] / (1 − ρ).
        let conditional_mean_s = (self.prefill_queue_ca2() + self.input_cv2) / 2.0
            * self.prefill_work_s(load)
            / (1.0 - rho);
        Some(PrefillWait {
            utilization: rho,
            mean_s: rho * conditional_mean_s,
            p99_s: conditional_mean_s * (rho / 0.01).ln().max(0.0),
            queue_probability: rho,
            queue_conditional_mean_s: conditional_mean_s,
        })
    }
}

/// The prefill queue's utilisation and wait.
#[derive(Debug, Clone, Copy)]
pub(super) struct PrefillWait {
    pub(super) utilization: f64,
    /// Mean and p99 wait, s.
    pub(super) mean_s: f64,
    /// See `mean_s`.
    pub(super) p99_s: f64,
    /// Probability of queueing behind prompts ahead, and the mean of that
    /// wait when it happens (exponential), s.
    pub(super) queue_probability: f64,
    /// See `queue_probability`.
    pub(super) queue_conditional_mean_s: f64,
}

impl PrefillWait {
    /// P(wait > t).
    pub(super) fn exceeds(&self, t: f64) -> f64 {
        self.queue_probability * (-t / self.queue_conditional_mean_s.max(1e-12)).exp()
    }
}
