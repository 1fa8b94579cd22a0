//! A run of N requests queued at t = 0, simulated iteration by iteration:
//! requests are a fluid of cohorts admitted in strides, and between
//! admissions the batch jumps from one completion to the next.

use super::BurstResult;
use crate::perf::{Bound, Deployment, IterationCost, IterationWork};

/// What an engine admits into one iteration of a run of queued requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueLimits {
    /// Sequences in flight at most: the batch cap (all pipeline stages) or
    /// the requests whose full length the KV cache can reserve.
    pub slots: f64,
    /// Tokens one micro-batch (one stage iteration) may carry: decode
    /// tokens plus prompt tokens.
    pub max_tokens: f64,
    /// Whether a prompt may be split over iterations (chunked context):
    /// then every iteration fills its budget with prompt tokens; otherwise a
    /// prompt waits for an iteration with room for all of it.
    pub chunked_prefill: bool,
}

/// Iteration-level simulation of `requests` requests queued at t = 0: each
/// iteration admits prompts into what the decoding sequences leave of the
/// token budget (whole prompts, or with chunked context as many prompt
/// tokens as fit), while slots are free; `output_lens` are equally likely
/// output lengths. The end of the run is priced as it happens: the last
/// requests decode in a shrinking batch.
///
/// Requests are a fluid: those admitted over a stretch of at most
/// 1/[`ADMISSION_STRIDES_PER_OUTPUT`] of the shortest output form one cohort
/// per output length, and between admissions the batch only decodes, so the
/// simulation jumps to the next completion, pricing the run of decode steps
/// by Simpson's rule over its growing context (the step cost is smooth in
/// the context). A run of thousands of requests costs a few hundred
/// iteration evaluations, and its throughput is the step-by-step
/// simulation's to within 1% (TPOT only to within ~5%: a stride prices its
/// steps alike); with a stride of one step it is the step-by-step simulation.
pub fn queued_run(
    dep: &Deployment,
    limits: QueueLimits,
    input_len: u64,
    output_lens: &[f64],
    requests: u64,
) -> BurstResult {
    let shortest = output_lens.iter().copied().fold(f64::INFINITY, f64::min);
    let stride = ((shortest - 1.0) / ADMISSION_STRIDES_PER_OUTPUT)
        .floor()
        .max(1.0);
    queued_run_with_stride(dep, limits, input_len, output_lens, requests, stride)
}

/// Admission strides per (shortest) output length in [`queued_run`]: the
/// cohorts are placed to within 1/32 of a request's life.
pub const ADMISSION_STRIDES_PER_OUTPUT: f64 = 32.0;

/// Requests of one output length admitted over one stride.
struct Cohort {
    count: f64,
    /// The (mean) step of its first decode after the prompt's token.
    first_decode: f64,
    /// The step after its last decode.
    end: f64,
    first_token_s: f64,
    output: f64,
}

/// The state of a [`queued_run`].
struct QueuedRun<'a> {
    dep: &'a Deployment,
    pp: f64,
    isl: f64,
    /// One FIFO of cohorts per output length (one length finishes in admission order).
    lanes: Vec<std::collections::VecDeque<Cohort>>,
    /// Each output length's share of the requests (they sum to 1).
    shares: Vec<f64>,
    decoding: f64,
    /// Σ count · (isl + 1 − first_decode): the decode context sum at step z is this + decoding · z.
    context_base: f64,
    step: f64,
    t: f64,
    waiting: f64,
    tpot_sum: f64,
    finished: f64,
    peak: f64,
    time_by_bound: [f64; 4],
}

impl QueuedRun<'_> {
    /// One stage iteration's cost for a mean step's work (whole-replica counts).
    fn stage(&self, decoding: f64, context: f64, admitted: f64) -> IterationCost {
        let pp = self.pp;
        self.dep.iteration(&IterationWork {
            decode_seqs: decoding / pp,
            decode_context_sum: context / pp,
            prefill_tokens: admitted * self.isl / pp,
            prefill_attention_pairs: admitted * self.isl * self.isl / 2.0 / pp,
            logit_tokens: (decoding + admitted) / pp,
        })
    }

    /// Steps until the next cohort finishes (infinite with none decoding).
    fn next_end(&self) -> f64 {
        self.lanes
            .iter()
            .filter_map(|l| l.front().map(|c| c.end - self.step))
            .fold(f64::INFINITY, f64::min)
    }

    /// Decodes `steps` steps with nothing admitted: Simpson's rule over the
    /// growing context. Returns the time and the middle step's cost.
    fn decode_only(&self, steps: f64) -> (f64, IterationCost) {
        let d = self.decoding;
        let context_at = |z: f64| self.context_base + d * z;
        let middle = self.stage(d, context_at(self.step + (steps - 1.0).max(0.0) / 2.0), 0.0);
        if steps <= 2.0 {
            return (self.pp * steps * middle.total_s, middle);
        }
        let first = self.stage(d, context_at(self.step), 0.0);
        let last = self.stage(d, context_at(self.step + steps - 1.0), 0.0);
        let mean_s = (first.total_s + 4.0 * middle.total_s + last.total_s) / 6.0;
        (self.pp * steps * mean_s, middle)
    }

    /// Admissions, step by step, over at most `max_steps` steps: each step
    /// admits what the token budget (less the decode tokens of those
    /// admitted before it) and the free slots allow. Returns the steps that
    /// admitted, the requests and their mean admission step (from 0).
    fn admissions(&self, limits: QueueLimits, max_steps: usize) -> (f64, f64, f64) {
        let mut budget = (self.pp * limits.max_tokens - self.decoding).max(0.0);
        let mut free = (limits.slots - self.decoding).max(0.0);
        let mut waiting = self.waiting;
        let (mut steps, mut admitted, mut step_sum) = (0usize, 0.0, 0.0);
        for j in 0..max_steps {
            let by_budget = if limits.chunked_prefill {
                budget / self.isl
            } else {
                (budget / self.isl).floor()
            };
            let a = by_budget.min(free).min(waiting);
            if a <= 1e-9 {
                break;
            }
            admitted += a;
            step_sum += a * j as f64;
            // From the next step on, each newcomer decodes a token a step.
            budget -= a;
            free -= a;
            waiting -= a;
            steps = j + 1;
        }
        let mean_step = if admitted > 0.0 {
            step_sum / admitted
        } else {
            0.0
        };
        (steps as f64, admitted, mean_step)
    }

    /// `steps` steps that admit `admitted` requests, on average at step
    /// `mean_step` of them; they join the lanes as one cohort per output length.
    fn admit(
        &mut self,
        steps: f64,
        admitted: f64,
        mean_step: f64,
        output_lens: &[f64],
    ) -> (f64, IterationCost) {
        // The old batch's mean step, and the newcomers decoding on average.
        let offset = (steps - 1.0) / 2.0;
        let newcomers = admitted * (steps - 1.0 - mean_step) / steps;
        let context =
            self.context_base + self.decoding * (self.step + offset) + newcomers * (self.isl + 1.0);
        let stage = self.stage(self.decoding + newcomers, context, admitted / steps);
        let dt = self.pp * steps * stage.total_s;
        let first_decode = self.step + mean_step + 1.0;
        let first_token_s = self.t + dt * (mean_step + 1.0) / steps;
        for ((lane, &output), &weight) in self.lanes.iter_mut().zip(output_lens).zip(&self.shares) {
            let share = admitted * weight;
            if output > 1.0 {
                lane.push_back(Cohort {
                    count: share,
                    first_decode,
                    end: first_decode + output - 1.0,
                    first_token_s,
                    output,
                });
                self.decoding += share;
                self.context_base += share * (self.isl + 1.0 - first_decode);
            }
        }
        self.waiting -= admitted;
        (dt, stage)
    }

    /// Advances the clock and retires the cohorts whose last decode is done.
    fn advance(&mut self, steps: f64, dt: f64, stage: &IterationCost) {
        let slot = match stage.bound() {
            Bound::Compute => 0,
            Bound::MemoryBandwidth => 1,
            Bound::Communication => 2,
            _ => 3,
        };
        self.time_by_bound[slot] += dt;
        self.t += dt;
        self.step += steps;
        for lane in &mut self.lanes {
            while lane.front().is_some_and(|c| c.end <= self.step + 1e-9) {
                let Some(c) = lane.pop_front() else { break };
                self.decoding -= c.count;
                self.context_base -= c.count * (self.isl + 1.0 - c.first_decode);
                self.tpot_sum += c.count * (self.t - c.first_token_s) / (c.output - 1.0);
                self.finished += c.count;
            }
        }
        if self.lanes.iter().all(|l| l.is_empty()) {
            // Nothing decodes: clear the sums' rounding residue.
            self.decoding = 0.0;
            self.context_base = 0.0;
        }
    }
}

/// [`queued_run`] admitting over strides of at most `stride` steps.
pub(super) fn queued_run_with_stride(
    dep: &Deployment,
    limits: QueueLimits,
    input_len: u64,
    output_lens: &[f64],
    requests: u64,
    stride: f64,
) -> BurstResult {
    let equal = vec![1.0 / output_lens.len() as f64; output_lens.len()];
    queued_run_with_shares(
        dep,
        limits,
        input_len,
        output_lens,
        &equal,
        requests,
        stride,
    )
}

/// [`queued_run_with_stride`] with output length `i` taken by `shares[i]`
/// of the requests (the shares sum to 1).
pub(super) fn queued_run_with_shares(
    dep: &Deployment,
    limits: QueueLimits,
    input_len: u64,
    output_lens: &[f64],
    shares: &[f64],
    requests: u64,
    stride: f64,
) -> BurstResult {
    let output_mean = output_lens
        .iter()
        .zip(shares)
        .map(|(l, w)| l * w)
        .sum::<f64>();
    let mut run = QueuedRun {
        dep,
        pp: f64::from(dep.layout.pp),
        isl: input_len as f64,
        lanes: output_lens.iter().map(|_| Default::default()).collect(),
        shares: shares.to_vec(),
        decoding: 0.0,
        context_base: 0.0,
        step: 0.0,
        t: 0.0,
        waiting: requests as f64,
        tpot_sum: 0.0,
        finished: 0.0,
        peak: 0.0,
        time_by_bound: [0.0; 4],
    };
    while run.waiting > 1e-9 || run.decoding > 1e-9 {
        // Each stride ends before the next completion frees slots and budget.
        let next_end = run.next_end();
        let max_steps = stride.min(next_end).max(1.0).floor() as usize;
        let (admit_steps, admitted, mean_step) = run.admissions(limits, max_steps);
        let (steps, dt, stage) = if admitted > 1e-9 {
            let (dt, stage) = run.admit(admit_steps, admitted, mean_step, output_lens);
            (admit_steps, dt, stage)
        } else if next_end.is_finite() {
            let (dt, stage) = run.decode_only(next_end.max(1e-6));
            (next_end.max(1e-6), dt, stage)
        } else {
            // No slot, no budget and nothing decoding: no progress is possible.
            break;
        };
        run.advance(steps, dt, &stage);
        run.peak = run.peak.max(run.decoding);
    }
    let bound = [
        Bound::Compute,
        Bound::MemoryBandwidth,
        Bound::Communication,
        Bound::Overhead,
    ][run
        .time_by_bound
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i)
        .unwrap_or(0)];
    BurstResult {
        makespan_s: run.t,
        tpot_ms: if run.finished > 0.0 {
            run.tpot_sum / run.finished * 1e3
        } else {
            f64::NAN
        },
        requests_per_s: requests as f64 / run.t,
        output_tokens_per_s: requests as f64 * output_mean / run.t,
        peak_concurrency: run.peak,
        bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::Calibration;
    use crate::layout::Layout;
    use crate::serving::steady_state;
    use crate::test_support::{gpu, model};
    use gpuplan_catalog::Precision;

    fn h100_70b_tp4() -> Deployment {
        Deployment::new(
            &model("llama-3.1-70b"),
            gpu("H100"),
            Layout { tp: 4, pp: 1 },
            Precision::Fp8,
            Precision::Fp8,
            &Calibration::bundled(),
        )
        .unwrap()
    }

    /// The fluid strides are the step-by-step simulation to within 1% in
    /// throughput (TPOT within 6%): in
    /// the wave regime (short prompts, long answers), the continuous regime
    /// (long prompts, short answers) and with varied answers.
    #[test]
    fn strided_admission_matches_the_step_by_step_run() {
        let dep = h100_70b_tp4();
        let limits = QueueLimits {
            slots: 600.0,
            max_tokens: 8192.0,
            chunked_prefill: true,
        };
        for (input, outputs, requests) in [
            (128, vec![2048.0], 3000),
            (2048, vec![128.0], 3000),
            (1000, vec![1000.0], 3000),
            (200, vec![50.0, 150.0, 400.0], 1000),
        ] {
            let fast = queued_run(&dep, limits, input, &outputs, requests);
            let exact = queued_run_with_stride(&dep, limits, input, &outputs, requests, 1.0);
            let gap = fast.output_tokens_per_s / exact.output_tokens_per_s - 1.0;
            assert!(
                gap.abs() < 0.01,
                "{input}/{outputs:?}: {fast:?} vs {exact:?}"
            );
            // A stride prices its steps alike, so its first tokens are placed
            // only to within the stride's spread of step costs: TPOT is close,
            // not exact (the bursts, whose TPOT is measured, run stride 1).
            let tpot_gap = fast.tpot_ms / exact.tpot_ms - 1.0;
            assert!(
                tpot_gap.abs() < 0.06,
                "{input}/{outputs:?}: {fast:?} vs {exact:?}"
            );
            let peak_gap = fast.peak_concurrency / exact.peak_concurrency - 1.0;
            assert!(
                peak_gap.abs() < 0.02,
                "{input}/{outputs:?}: {fast:?} vs {exact:?}"
            );
        }
    }

    /// A run of many batches' worth of requests approaches the steady state
    /// (Little's law over the same iterations); whole batches run in
    /// identical rounds, and one request past a whole number of batches
    /// costs a whole extra round in a batch of one.
    #[test]
    fn a_long_run_reaches_the_steady_state_and_a_short_one_pays_its_drain() {
        let dep = h100_70b_tp4();
        let (input, output) = (128u64, 1024u64);
        let slots = 512.0;
        let limits = QueueLimits {
            slots,
            max_tokens: 8192.0,
            chunked_prefill: true,
        };
        let steady = steady_state(&dep, input as f64, output as f64, slots, 8192.0);
        let long = queued_run(&dep, limits, input, &[output as f64], 200 * 512);
        let ratio = long.output_tokens_per_s / steady.output_tokens_per_s;
        assert!((ratio - 1.0).abs() < 0.03, "200 batches: {ratio}");
        let four = queued_run(&dep, limits, input, &[output as f64], 4 * 512);
        let four_and_one = queued_run(&dep, limits, input, &[output as f64], 4 * 512 + 1);
        // Whole batches run in identical rounds: four of them are no faster
        // than two hundred.
        assert!(four.output_tokens_per_s <= long.output_tokens_per_s * (1.0 + 1e-9));
        // The 2049th request decodes most of its 1023 tokens alone after the rest.
        let alone = dep
            .iteration(&IterationWork {
                decode_seqs: 1.0,
                decode_context_sum: input as f64 + 512.0,
                prefill_tokens: 0.0,
                prefill_attention_pairs: 0.0,
                logit_tokens: 1.0,
            })
            .total_s;
        let extra_s = four_and_one.makespan_s - four.makespan_s;
        assert!(extra_s > 900.0 * alone, "{extra_s} s vs {alone} s a step");
        // Every request finishes, and no more than the slots run at once.
        assert!(four_and_one.peak_concurrency <= slots + 1e-9);
        let tokens = four_and_one.output_tokens_per_s * four_and_one.makespan_s;
        assert!((tokens / (4.0 * 512.0 + 1.0) - output as f64).abs() < 1e-6);
    }

    /// Without chunked context a prompt waits for an iteration with room for
    /// all of it; with it, the budget fills with prompt tokens.
    #[test]
    fn whole_prompts_wait_for_room_and_chunked_ones_fill_the_budget() {
        let dep = h100_70b_tp4();
        let run = |chunked_prefill| {
            queued_run(
                &dep,
                QueueLimits {
                    slots: 256.0,
                    max_tokens: 2048.0,
                    chunked_prefill,
                },
                2048,
                &[256.0],
                1000,
            )
        };
        let (whole, chunked) = (run(false), run(true));
        // Whole 2048-token prompts fit only in an iteration with no decode.
        assert!(whole.peak_concurrency < 2.0 + 1e-9, "{whole:?}");
        assert!(chunked.output_tokens_per_s > 5.0 * whole.output_tokens_per_s);
    }
}
