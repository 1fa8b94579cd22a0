//! Tail latencies of one continuous-batching replica under load.
//!
//! A replica is two queues in series, both fed by the same arrivals:
//! 1. **batch slots** — a request waits for one of the `max_num_seqs` slots
//!    (G/G/c, Erlang C with the Allen–Cunneen correction: [`wait_quantile_s`]);
//! 2. **prefill** — admitted prompts are prefilled first-come first-served
//!    out of each iteration's token budget (`max_batched_tokens` less the
//!    decodes), so prompts queue for prefill compute even when slots are
//!    free. This is a G/G/1 queue whose work per request is its prompt
//!    length × the time one prefill token adds to an iteration (plus its
//!    share of the iteration's fixed part); its waiting time is
//!    Allen–Cunneen's `ρ/(1−ρ) · (c_a² + c_s²)/2 · E[S]` with an exponential
//!    tail `P(W > t) = ρ·exp(−ρ t / E[W])`.
//!
//! Decoding streams share every iteration with the prompts being prefilled:
//! a request's time per output token is the decode-only iteration time plus
//! the prefill work that arrives during its life, spread over its tokens.
//! That work is compound-renewal (arrivals × prompt lengths), so its spread
//! grows with burstiness (c_a²) and prompt-length variability (c_s²); the
//! p99 is the normal quantile of that sum. An inter-token gap is one
//! iteration: long when it carries a prompt chunk.

use crate::perf::{Deployment, IterationWork};
use crate::queueing::wait_quantile_s;
use crate::serving::prefill_under_load_s;

/// z of the 99th percentile of a standard normal distribution.
const Z99: f64 = 2.326;

/// The request mix and engine limits a replica serves.
#[derive(Debug, Clone, Copy)]
pub struct TailInputs {
    /// Mean and p99 prompt tokens.
    pub input_mean: f64,
    /// See `input_mean`.
    pub input_p99: f64,
    /// Mean and p99 output tokens.
    pub output_mean: f64,
    /// See `output_mean`.
    pub output_p99: f64,
    /// Engine batch cap (`--max-num-seqs`).
    pub batch: f64,
    /// Engine token budget per iteration (`--max-num-batched-tokens`).
    pub max_batched_tokens: f64,
    /// Mean time a request holds a batch slot at a full batch, s.
    pub service_s: f64,
    /// Squared coefficient of variation of inter-arrival times (1 = Poisson).
    pub ca2: f64,
    /// Squared coefficient of variation of slot service times.
    pub cs2: f64,
}

/// Latency percentiles of a replica at one arrival rate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tails {
    /// p99 wait for a batch slot, s.
    pub slot_wait_p99_s: f64,
    /// Mean and p99 wait for prefill compute once admitted, s.
    pub prefill_wait_mean_s: f64,
    /// See `prefill_wait_mean_s`.
    pub prefill_wait_p99_s: f64,
    /// Share of the GPU's time spent on prefill work.
    pub prefill_utilization: f64,
    /// Prefill of the mean and the p99 prompt beside the decodes, s.
    pub prefill_mean_s: f64,
    /// See `prefill_mean_s`.
    pub prefill_p99_s: f64,
    /// p99 time to first token, s.
    pub ttft_p99_s: f64,
    /// Mean iteration time (= mean time per output token), ms.
    pub tpot_mean_ms: f64,
    /// p99 over requests of the mean time per output token, ms.
    pub tpot_p99_ms: f64,
    /// p99 gap between two tokens of a stream, ms.
    pub itl_p99_ms: f64,
    /// p99 end-to-end latency, s.
    pub e2e_p99_s: f64,
}

/// Squared coefficient of variation of a lognormal with the given mean and
/// p99 (p99/mean = exp(z·σ − σ²/2), solved for σ on the branch σ < z).
pub fn lognormal_cv2(mean: f64, p99: f64) -> f64 {
    if mean.is_nan() || mean <= 0.0 || p99.is_nan() || p99 <= mean {
        return 0.0;
    }
    let ratio = (p99 / mean).ln();
    // σ²/2 − z·σ + ln(ratio) = 0 → σ = z − sqrt(z² − 2 ln(ratio)).
    let disc = (Z99 * Z99 - 2.0 * ratio).max(0.0);
    let sigma = Z99 - disc.sqrt();
    (sigma * sigma).exp_m1()
}

/// Tails of one replica configuration as a function of its arrival rate.
#[derive(Debug, Clone)]
pub struct TailModel<'a> {
    dep: &'a Deployment,
    inputs: TailInputs,
    input_cv2: f64,
}

impl<'a> TailModel<'a> {
    /// The model for `dep` serving `inputs`.
    pub fn new(dep: &'a Deployment, inputs: TailInputs) -> Self {
        TailModel {
            dep,
            inputs,
            input_cv2: lognormal_cv2(inputs.input_mean, inputs.input_p99),
        }
    }

    /// Iteration time (all pipeline stages) with `decodes` sequences decoding
    /// and `prefill` prompt tokens, s.
    fn iteration_s(&self, decodes: f64, prefill: f64) -> f64 {
        let pp = f64::from(self.dep.layout.pp);
        let i = &self.inputs;
        let per_stage = decodes / pp;
        let cost = self.dep.iteration(&IterationWork {
            decode_seqs: per_stage,
            decode_context_sum: per_stage * (i.input_mean + i.output_mean / 2.0),
            prefill_tokens: prefill,
            // a chunk of p tokens of a prompt attends to about p²/2 pairs
            prefill_attention_pairs: prefill * prefill / 2.0,
            logit_tokens: per_stage + if prefill > 0.0 { 1.0 } else { 0.0 },
        });
        pp * cost.total_s
    }

    /// Tails at `lambda` requests/s to this replica.
    pub fn at(&self, lambda: f64) -> Tails {
        let i = &self.inputs;
        let pp = f64::from(self.dep.layout.pp);
        // Little's law: sequences in flight = arrivals × slot time.
        let in_flight = (lambda * i.service_s).clamp(1.0, i.batch);
        // Decode-only iteration, and what each prefill token adds to it.
        let t0 = self.iteration_s(in_flight, 0.0);
        let budget = (i.max_batched_tokens - in_flight / pp)
            .max(i.max_batched_tokens * 0.1)
            .max(1.0);
        let chunk = i.input_mean.min(budget).max(1.0);
        let per_token_s = ((self.iteration_s(in_flight, chunk) - t0) / chunk).max(0.0);
        // A backlogged prefill server fills each iteration's budget: a token
        // costs its own time plus its share of the iteration's fixed part.
        let work_per_token_s = per_token_s + t0 / budget;
        let prefill_work_s = i.input_mean * work_per_token_s;
        let rho = lambda * prefill_work_s;
        let slot_wait_p99_s = wait_quantile_s(lambda, i.service_s, i.batch, i.ca2, i.cs2, 0.99);
        let prefill_mean_s = prefill_under_load_s(
            self.dep,
            i.input_mean,
            i.input_mean,
            i.output_mean,
            in_flight,
            i.max_batched_tokens,
        );
        let prefill_p99_s = prefill_under_load_s(
            self.dep,
            i.input_p99,
            i.input_mean,
            i.output_mean,
            in_flight,
            i.max_batched_tokens,
        )
        .max(prefill_mean_s);
        if rho >= 1.0 {
            return Tails {
                slot_wait_p99_s,
                prefill_utilization: rho,
                prefill_wait_mean_s: f64::INFINITY,
                prefill_wait_p99_s: f64::INFINITY,
                prefill_mean_s,
                prefill_p99_s,
                ttft_p99_s: f64::INFINITY,
                tpot_mean_ms: f64::INFINITY,
                tpot_p99_ms: f64::INFINITY,
                itl_p99_ms: f64::INFINITY,
                e2e_p99_s: f64::INFINITY,
            };
        }
        // Allen–Cunneen G/G/1 mean wait, exponential conditional tail.
        let wait_mean = rho / (1.0 - rho) * (i.ca2 + self.input_cv2) / 2.0 * prefill_work_s;
        let wait_p99 = if rho > 0.01 && wait_mean > 0.0 {
            wait_mean / rho * (rho / 0.01).ln()
        } else {
            0.0
        };
        // p99 of (prefill wait + own prefill), the two spreads independent.
        let spread =
            ((wait_p99 - wait_mean).powi(2) + (prefill_p99_s - prefill_mean_s).powi(2)).sqrt();
        let ttft_p99_s = slot_wait_p99_s + wait_mean + prefill_mean_s + spread;
        // Mean iteration: t = t0 + (prefill tokens arriving per iteration) × per-token cost.
        let prefill_tokens_per_s = lambda * i.input_mean;
        let tpot_mean_s = t0 / (1.0 - (per_token_s * prefill_tokens_per_s).min(0.99));
        // A request decodes for L iterations; the prompt tokens that arrive
        // meanwhile are compound-renewal: mean λT·E[I], variance λT·E[I]²(c_a² + c_s²).
        let life_iterations = (i.output_mean - 1.0).max(1.0);
        let life_s = life_iterations * tpot_mean_s;
        let tokens_mean = prefill_tokens_per_s * life_s;
        let tokens_sd = (lambda * life_s * (i.ca2 + self.input_cv2)).sqrt() * i.input_mean;
        let tpot_p99_s =
            (t0 + per_token_s * (tokens_mean + Z99 * tokens_sd) / life_iterations).max(tpot_mean_s);
        // Share of iterations that carry a prompt chunk; when it exceeds 1 %,
        // the p99 gap is an iteration with a full chunk.
        let chunks_per_prompt = (i.input_mean / budget).ceil();
        let with_prefill = (lambda * chunks_per_prompt * tpot_mean_s).min(1.0);
        let itl_p99_s = if with_prefill > 0.01 {
            t0 + per_token_s * i.input_p99.min(budget)
        } else {
            t0
        }
        .max(tpot_mean_s);
        Tails {
            slot_wait_p99_s,
            prefill_wait_mean_s: wait_mean,
            prefill_wait_p99_s: wait_p99,
            prefill_utilization: rho,
            prefill_mean_s,
            prefill_p99_s,
            ttft_p99_s,
            tpot_mean_ms: tpot_mean_s * 1e3,
            tpot_p99_ms: tpot_p99_s * 1e3,
            itl_p99_ms: itl_p99_s * 1e3,
            // The p99 request: a p99 TTFT and p99 output at the mean pace.
            e2e_p99_s: ttft_p99_s + (i.output_p99 - 1.0).max(0.0) * tpot_mean_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::Calibration;
    use crate::layout::Layout;
    use crate::test_support::{gpu, model};
    use gpuplan_catalog::Precision;

    #[test]
    fn lognormal_cv2_inverts_the_p99() {
        // σ = 0.5: mean/p99 ratio exp(2.326·0.5 − 0.125); cv² = e^{0.25} − 1.
        let ratio = (Z99 * 0.5 - 0.125f64).exp();
        let cv2 = lognormal_cv2(1000.0, 1000.0 * ratio);
        assert!((cv2 - (0.25f64.exp() - 1.0)).abs() < 1e-9, "{cv2}");
        assert_eq!(lognormal_cv2(1000.0, 1000.0), 0.0);
    }

    fn h100_8b() -> Deployment {
        Deployment::new(
            &model("llama-3.1-8b"),
            gpu("H100"),
            Layout::SINGLE,
            Precision::Fp8,
            Precision::Fp8,
            &Calibration::bundled(),
        )
        .unwrap()
    }

    fn inputs(ca2: f64) -> TailInputs {
        TailInputs {
            input_mean: 1500.0,
            input_p99: 4000.0,
            output_mean: 60.0,
            output_p99: 200.0,
            batch: 64.0,
            max_batched_tokens: 8192.0,
            service_s: 1.5,
            ca2,
            cs2: 1.0,
        }
    }

    #[test]
    fn prefill_queueing_grows_with_load_and_burstiness() {
        let dep = h100_8b();
        let poisson = TailModel::new(&dep, inputs(1.0));
        let bursty = TailModel::new(&dep, inputs(9.0));
        let light = poisson.at(1.0);
        let heavy = poisson.at(25.0);
        // Slots are plentiful at both loads: the TTFT growth is prefill queueing.
        assert_eq!(heavy.slot_wait_p99_s, 0.0);
        assert!(heavy.prefill_utilization > light.prefill_utilization);
        assert!(
            heavy.ttft_p99_s > light.ttft_p99_s * 1.5,
            "{light:?} {heavy:?}"
        );
        // Bursty arrivals (cv 3) wait longer at the same rate.
        assert!(bursty.at(25.0).ttft_p99_s > heavy.ttft_p99_s * 1.5);
        assert!(bursty.at(25.0).tpot_p99_ms > heavy.tpot_p99_ms);
        // The p99 gap carries a prompt chunk: longer than the mean token time.
        assert!(heavy.itl_p99_ms > heavy.tpot_mean_ms);
        assert!(heavy.tpot_p99_ms >= heavy.tpot_mean_ms);
    }

    #[test]
    fn unloaded_replica_ttft_is_the_prompt_prefill() {
        let dep = h100_8b();
        let t = TailModel::new(&dep, inputs(1.0)).at(1e-6);
        assert!(t.prefill_wait_p99_s == 0.0);
        assert!((t.ttft_p99_s - t.prefill_p99_s).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn saturated_prefill_is_infinite_not_negative() {
        let dep = h100_8b();
        let t = TailModel::new(&dep, inputs(1.0)).at(1e4);
        assert!(t.prefill_utilization >= 1.0);
        assert!(t.ttft_p99_s.is_infinite());
    }
}
