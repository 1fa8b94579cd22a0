//! The prefill queue: admitted prompts share each iteration's token budget
//! first-come first-served, and the router decides how bursts spread over
//! the replicas' queues.

use super::distributions::renewal_excess_up_to;
use super::{wait_quantile, Load, TailModel};

/// How far the least-outstanding router pools the prefill queues of n
/// replicas: one replica keeps a share n^(−this) of the stream's excess
/// burstiness ([`TailModel::prefill_ca2`]), and a prompt waits for prefill
/// only when the n^(this) replicas the router effectively chooses among are
/// all busy ([`TailModel::prefill_wait`]). Between 0 (independent
/// replicas, random routing) and 1 (one pooled queue); fitted on the
/// simulator's grid (`cargo test --release -p gpuplan-sim --test grid`), not
/// on measurements.
const ROUTER_POOLING_EXPONENT: f64 = 0.5;

/// How many of the replicas a prompt's choice loses to each prompt of its
/// clump: a bursty stream brings, within one prefill of an arrival, more
/// arrivals than a Poisson one (the renewal excess e,
/// [`super::distributions::renewal_excess_up_to`]),
/// and those clump-mates take the idle replicas the router would have sent
/// it to, so it chooses among d/(1 + this·e). Fitted on the simulator's grid
/// (`cargo test --release -p gpuplan-sim --test grid`; flat from 0.15 to
/// 0.25, one point less at 0.4–0.5), not on measurements.
const CLUMP_CHOICE_WEIGHT: f64 = 0.25;

/// How the router's pooling of the prefill backlogs grows with the prefill
/// load ρ: a waiting prompt's backlog drains at 1 + ρ^this·(d − 1) replicas'
/// pace. Lightly loaded, the router's signal (requests in flight) is mostly
/// decodes and a backlog is one replica's to clear; as the backlogs grow
/// they dominate the signal, the router balances them over its d choices,
/// and they drain together (heavy-traffic pooling; the supermarket model's
/// full pooling at every load, which assumes a signal of backlog alone, put
/// the grid at 72 %). Fitted on the simulator's grid (flat from 3 to 5),
/// not on measurements.
const BACKLOG_POOLING_EXPONENT: f64 = 4.0;

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

    /// The replicas a prompt's router effectively chooses among, d: n^½
    /// ([`ROUTER_POOLING_EXPONENT`]) for a smooth stream; a bursty one
    /// loses choices to the prompts of the same clump, which arrive within
    /// one prefill of each other and take the idle replicas first:
    /// d/(1 + [`CLUMP_CHOICE_WEIGHT`]·e), e the arrivals within one prefill
    /// beyond a Poisson stream's (over the whole fleet's stream, which the
    /// router splits), and never below one replica.
    pub(super) fn router_choices(&self, lambda: f64, load: &Load) -> f64 {
        let replicas = self.inputs.slot_pool_replicas.max(1.0);
        let fleet_arrivals_per_prefill = lambda * replicas * self.prefill_work_s(load);
        let choices = replicas.powf(ROUTER_POOLING_EXPONENT);
        // Past this excess the router is down to one replica: stop counting.
        let at_most = (choices - 1.0) / CLUMP_CHOICE_WEIGHT;
        let clump = renewal_excess_up_to(self.inputs.ca2, fleet_arrivals_per_prefill, at_most);
        (choices / (1.0 + CLUMP_CHOICE_WEIGHT * clump)).max(1.0)
    }

    /// Burstiness (c_a²) that sets the length of a replica's prefill queue
    /// once it forms. A bursty stream split over n replicas keeps, per
    /// replica, 1 + (c_a² − 1)/n, the excess of a renewal stream thinned at
    /// random to 1/n (the router spreads a clump over the replicas; where it
    /// lands on a busy one, the wait probability [`Self::router_choices`]
    /// counts it). A smooth stream (c_a² < 1) keeps more of its smoothness
    /// than random thinning would leave it: the router's
    /// [`Self::prefill_ca2`].
    pub(super) fn prefill_queue_ca2(&self) -> f64 {
        let ca2 = self.inputs.ca2;
        if ca2 < 1.0 {
            return self.prefill_ca2();
        }
        1.0 + (ca2 - 1.0) / self.inputs.slot_pool_replicas.max(1.0)
    }

    /// Share of the GPU's time the prefill queue keeps busy.
    pub(super) fn prefill_utilization(&self, lambda: f64, load: &Load) -> f64 {
        lambda * self.prefill_work_s(load)
    }

    /// The G/G/1 prefill queue's wait (Allen–Cunneen conditional mean,
    /// exponential conditional tail); `None` when it is unstable
    /// (utilisation ≥ 1). Alone (or behind a router that picks replicas at
    /// random) a prompt finds the prefill busy with probability ρ; the
    /// least-outstanding router sends it to a replica with less in flight,
    /// so it waits only when all the replicas it effectively chooses among
    /// are busy: ρ^d with d = n^[`ROUTER_POOLING_EXPONENT`], fewer for a
    /// bursty stream ([`Self::router_choices`]) (with d sampled replicas
    /// this is exactly the power-of-d-choices result, Mitzenmacher 2001; the
    /// router sees every replica, but its signal, the count of requests in
    /// flight, mixes prefill backlog with decodes). Its p99 solves
    /// P(W > t) = P·e^(−t/m) + π·(1 − t/t_c)⁺ = 1 %.
    pub(super) fn prefill_wait(&self, lambda: f64, load: &Load) -> Option<PrefillWait> {
        let rho = self.prefill_utilization(lambda, load);
        if rho >= 1.0 {
            return None;
        }
        let choices = self.router_choices(lambda, load);
        let probability = rho.powf(choices);
        // Allen–Cunneen: E[W | W > 0] = (c_a² + c_s²)/2 · E[S] / (1 − ρ),
        // drained by up to d replicas as the prefill load rises.
        let pooled = 1.0 + rho.powf(BACKLOG_POOLING_EXPONENT) * (choices - 1.0);
        let conditional_mean_s = (self.prefill_queue_ca2() + self.input_cv2) / 2.0
            * self.prefill_work_s(load)
            / (1.0 - rho)
            / pooled;
        // The router spares a prompt the queue of prompts ahead, not the
        // iteration in progress: an arrival the router sends to a replica
        // without a queue still lands, with probability ρ − ρ^d, in an
        // iteration that carries a prompt chunk, and waits out its rest
        // (uniform over its length).
        let chunk_iteration_s =
            load.t0 + self.inputs.input_mean.min(load.budget) * load.backlog_per_token_s;
        let in_chunk = (rho - probability).max(0.0);
        let mut wait = PrefillWait {
            utilization: rho,
            mean_s: probability * conditional_mean_s + in_chunk * chunk_iteration_s / 2.0,
            p99_s: f64::NAN,
            queue_probability: probability,
            queue_conditional_mean_s: conditional_mean_s,
            in_chunk_probability: in_chunk,
            chunk_iteration_s,
        };
        wait.p99_s = wait_quantile(
            |t| wait.exceeds(t),
            0.99,
            wait.chunk_iteration_s + wait.queue_conditional_mean_s,
        );
        Some(wait)
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
    /// Probability of waiting out only the rest of a prompt-carrying
    /// iteration, and that iteration's length, s.
    pub(super) in_chunk_probability: f64,
    /// See `in_chunk_probability`.
    pub(super) chunk_iteration_s: f64,
}

impl PrefillWait {
    /// P(wait > t).
    pub(super) fn exceeds(&self, t: f64) -> f64 {
        self.queue_probability * (-t / self.queue_conditional_mean_s.max(1e-12)).exp()
            + self.in_chunk_probability * (1.0 - t / self.chunk_iteration_s.max(1e-12)).max(0.0)
    }
}
