//! One replica's continuous-batching scheduler, as vLLM V1 runs it, with
//! the prompt policies of TensorRT-LLM (whole prompts beside the decodes)
//! and SGLang (prompt chunks in steps of their own, decodes waiting:
//! [`PromptSteps`]).
//!
//! Each iteration (engine step) the vLLM scheduler
//! 1. gives every decoding sequence one token,
//! 2. continues the prefills of running requests in admission order with what
//!    is left of the token budget (chunked prefill),
//! 3. admits waiting requests first come first served while fewer than
//!    `max_num_seqs` run, budget is left and the KV blocks of their first
//!    chunk are free — unless it preempted someone this step.
//!
//! KV memory is paged: a sequence holds ⌈tokens / block⌉ blocks, allocated as
//! its tokens are computed. When a running request needs a block and none is
//! free, the newest running request is preempted by recompute: its blocks are
//! freed and it goes back to the front of the queue, to prefill its prompt and
//! the tokens it already generated again.
//!
//! Decoding sequences are updated in bulk: they all advance one token per
//! step, so the replica keeps a step counter, the sum of their context
//! offsets, a count per block phase (who needs a new block at which step)
//! and a heap of the steps at which each finishes. A step costs O(prefilling
//! requests + finishing ones), not O(batch).

use crate::cost::CostModel;
use gpuplan_core::IterationWork;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// vLLM's default KV-cache block size on CUDA, tokens.
pub const VLLM_BLOCK_TOKENS: u32 = 16;

/// A replica's engine settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineConfig {
    /// Most sequences running at once (vLLM `--max-num-seqs`).
    pub max_num_seqs: u32,
    /// Token budget of one step, decodes and prefill chunks together (vLLM `--max-num-batched-tokens`).
    pub max_batched_tokens: u32,
    /// Tokens the replica's KV cache holds (the memory model's `kv_cache_tokens`).
    pub kv_cache_tokens: u64,
    /// Tokens per KV block.
    pub block_tokens: u32,
    /// How prompts share steps with decodes.
    pub prompts: PromptSteps,
}

/// How the scheduler places prompt tokens (the engine's prefill policy,
/// [`gpuplan_core::PrefillPolicy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptSteps {
    /// Decodes first, prompt chunks fill what the budget leaves (vLLM V1).
    BesideDecodes,
    /// A new prompt runs whole beside the decodes, waiting for a step with
    /// room for all of it (TensorRT-LLM, chunked context off). A prompt
    /// longer than the whole budget is chunked.
    Whole,
    /// Prompt chunks run in steps of their own while decodes wait; decodes
    /// run when no prompt can be scheduled (SGLang's default, prefill first).
    Separate,
}

impl PromptSteps {
    /// The policy of `engine`.
    pub fn of(engine: gpuplan_core::Engine) -> PromptSteps {
        match engine.profile().prefill_policy {
            gpuplan_core::PrefillPolicy::ChunkedBesideDecodes => PromptSteps::BesideDecodes,
            gpuplan_core::PrefillPolicy::WholeBesideDecodes => PromptSteps::Whole,
            gpuplan_core::PrefillPolicy::ChunkedSeparate => PromptSteps::Separate,
        }
    }
}

/// Where a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Waiting,
    Prefill,
    Decode,
    Done,
}

/// A request in flight (a slot of the simulation's slab, reused once done).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request {
    pub arrival_s: f64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Counted in the statistics (arrived after the warm-up).
    pub measured: bool,
    /// First admitted into the running batch; NaN until then.
    pub first_scheduled_s: f64,
    /// End of the step that sampled its first output token; NaN until then.
    pub first_token_s: f64,
    pub state: State,
    /// Output tokens sampled so far (while decoding: as of `step_entry`).
    pub generated: u32,
    /// Tokens of the current prefill whose KV is computed.
    pub computed: u32,
    /// Tokens the current prefill must compute: the prompt, plus the tokens
    /// generated before a preemption (recompute).
    pub target: u32,
    /// While decoding: KV tokens minus the replica's step counter.
    pub base: i64,
    /// Step counter when decoding began.
    pub step_entry: u64,
    /// Bumped on preemption, so stale finish-heap entries are skipped.
    pub epoch: u32,
}

impl Request {
    pub fn new(arrival_s: f64, input_tokens: u32, output_tokens: u32, measured: bool) -> Self {
        Request {
            arrival_s,
            input_tokens,
            output_tokens,
            measured,
            first_scheduled_s: f64::NAN,
            first_token_s: f64::NAN,
            state: State::Waiting,
            generated: 0,
            computed: 0,
            target: 0,
            base: 0,
            step_entry: 0,
            epoch: 0,
        }
    }
}

/// What one finished step produced.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct StepOutcome {
    /// Decoding streams that received a token (each saw one inter-token gap).
    pub decode_streams: u64,
    /// Output tokens sampled (decodes plus prefills that completed).
    pub tokens: u64,
    /// Time the decoding streams also waited, before this step, on steps of
    /// prompt chunks alone (part of this step's inter-token gap).
    pub paused_s: f64,
}

/// One replica's scheduler state; every buffer is allocated once.
#[derive(Debug, Clone)]
pub(crate) struct Replica {
    block_tokens: u64,
    max_num_seqs: usize,
    max_batched_tokens: u64,
    prompts: PromptSteps,
    /// The step in progress runs prompt chunks only (decodes wait).
    prefill_only: bool,
    /// Time decodes have waited on prompt-only steps since their last token.
    paused_s: f64,
    pub total_blocks: u64,
    free_blocks: u64,
    waiting: VecDeque<u32>,
    /// Running requests in admission order (the last is preempted first).
    running: Vec<u32>,
    /// Running requests still prefilling, in admission order.
    prefilling: Vec<u32>,
    // Decoding sequences in bulk.
    decode_count: u64,
    /// Σ over decoders of (KV tokens − step).
    decode_base_sum: i64,
    /// Decoders by (KV tokens − step) mod block: the class whose KV length
    /// is a multiple of the block size at step s needs a new block then.
    phase_count: Vec<u64>,
    /// (step of the last decode, request, epoch).
    finish_heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    /// Steps executed.
    step: u64,
    /// This step's decode blocks are reserved.
    decode_reserved: bool,
    // The step in progress.
    pub busy: bool,
    chunks: Vec<(u32, u32)>,
    pub step_s: f64,
    step_running: u64,
    pub preemptions: u64,
}

/// Blocks that hold `tokens` tokens.
fn blocks(tokens: u64, block_tokens: u64) -> u64 {
    tokens.div_ceil(block_tokens)
}

impl Replica {
    pub fn new(cfg: &EngineConfig) -> Self {
        let seqs = cfg.max_num_seqs as usize;
        let block_tokens = u64::from(cfg.block_tokens.max(1));
        let total_blocks = cfg.kv_cache_tokens / block_tokens;
        Replica {
            block_tokens,
            max_num_seqs: seqs,
            max_batched_tokens: u64::from(cfg.max_batched_tokens),
            prompts: cfg.prompts,
            prefill_only: false,
            paused_s: 0.0,
            total_blocks,
            free_blocks: total_blocks,
            waiting: VecDeque::with_capacity(seqs * 4),
            running: Vec::with_capacity(seqs),
            prefilling: Vec::with_capacity(seqs),
            decode_count: 0,
            decode_base_sum: 0,
            phase_count: vec![0; block_tokens as usize],
            finish_heap: BinaryHeap::with_capacity(seqs * 2),
            step: 0,
            decode_reserved: false,
            busy: false,
            chunks: Vec::with_capacity(seqs),
            step_s: 0.0,
            step_running: 0,
            preemptions: 0,
        }
    }

    /// Requests waiting or running (the router's measure of load).
    pub fn outstanding(&self) -> usize {
        self.waiting.len() + self.running.len()
    }

    /// Steps this replica has run.
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// Sequences running during the step in progress.
    pub fn step_running(&self) -> u64 {
        self.step_running
    }

    pub fn enqueue(&mut self, id: u32) {
        self.waiting.push_back(id);
    }

    /// Requests waiting for admission.
    pub fn waiting_len(&self) -> usize {
        self.waiting.len()
    }

    /// Requests admitted into the running batch.
    pub fn running_len(&self) -> usize {
        self.running.len()
    }

    /// Share of the KV blocks in use.
    pub fn kv_used_share(&self) -> f64 {
        if self.total_blocks == 0 {
            0.0
        } else {
            1.0 - self.free_blocks as f64 / self.total_blocks as f64
        }
    }

    /// The replica is lost (a spot preemption or a failure): every request
    /// it held, running first in admission order, then waiting, is reset to
    /// start over (no KV survives, nothing generated counts) and handed
    /// back in `lost`. The replica's own state is left as it was; the caller
    /// replaces it.
    pub fn lose_all(&self, reqs: &mut [Request], lost: &mut Vec<u32>) {
        lost.extend(self.running.iter().chain(self.waiting.iter()).copied());
        for &id in lost.iter() {
            let r = &mut reqs[id as usize];
            r.state = State::Waiting;
            r.generated = 0;
            r.computed = 0;
            r.target = 0;
            r.first_token_s = f64::NAN;
            r.epoch = r.epoch.wrapping_add(1);
        }
    }

    /// The phase class of a decoder with `base` = KV tokens − step.
    fn phase(&self, base: i64) -> usize {
        base.rem_euclid(self.block_tokens as i64) as usize
    }

    /// Removes a decoder from the bulk aggregates.
    fn remove_decoder(&mut self, r: &Request) {
        let p = self.phase(r.base);
        self.decode_count -= 1;
        self.decode_base_sum -= r.base;
        self.phase_count[p] -= 1;
    }

    /// Preempts the newest running request (recompute): frees its blocks and
    /// puts it at the front of the queue. Returns it and whether it was decoding.
    fn preempt_newest(&mut self, reqs: &mut [Request]) -> Option<(u32, bool)> {
        let id = self.running.pop()?;
        let r = reqs[id as usize];
        let decoding = r.state == State::Decode;
        let held = if decoding {
            self.remove_decoder(&r);
            // KV tokens now, plus the block reserved for this step's token.
            let kv = (r.base + self.step as i64) as u64;
            let reserved = self.decode_reserved && kv.is_multiple_of(self.block_tokens);
            blocks(kv, self.block_tokens) + u64::from(reserved)
        } else {
            if let Some(i) = self.prefilling.iter().rposition(|&p| p == id) {
                self.prefilling.remove(i);
            }
            blocks(u64::from(r.computed), self.block_tokens)
        };
        let req = &mut reqs[id as usize];
        if decoding {
            req.generated += (self.step - req.step_entry) as u32;
            req.epoch = req.epoch.wrapping_add(1);
        }
        req.state = State::Waiting;
        req.computed = 0;
        self.free_blocks += held;
        self.waiting.push_front(id);
        self.preemptions += 1;
        Some((id, decoding))
    }

    /// Plans the next step at `now`; returns its duration, or None when
    /// there is nothing to run (the replica goes idle).
    pub fn schedule(
        &mut self,
        reqs: &mut [Request],
        now: f64,
        cost: &dyn CostModel,
    ) -> Option<f64> {
        let mut budget = self.max_batched_tokens;
        let mut preempted = false;
        self.chunks.clear();
        self.prefill_only = false;
        if self.prompts == PromptSteps::Separate {
            // Prefill first: a step of prompt chunks alone when any can run,
            // else a step of decodes alone.
            self.prefill_only = true;
            self.schedule_prompts(reqs, now, &mut budget, &mut preempted);
            if self.chunks.is_empty() {
                self.prefill_only = false;
                budget = self.max_batched_tokens;
                self.schedule_decodes(reqs, &mut budget);
                // Only decodes this step: nothing may be admitted.
                budget = 0;
            }
        } else {
            preempted |= self.schedule_decodes(reqs, &mut budget);
        }
        if !self.prefill_only && budget > 0 {
            self.schedule_prompts(reqs, now, &mut budget, &mut preempted);
        }
        if self.decode_count == 0 && self.chunks.is_empty() {
            self.decode_reserved = false;
            self.busy = false;
            return None;
        }
        let work = self.work(reqs);
        self.step_s = cost.iteration_s(&work);
        self.step_running = self.running.len() as u64;
        self.busy = true;
        Some(self.step_s)
    }

    /// Step 1: every decoding sequence gets one token; the class whose KV
    /// length is a multiple of the block size at this step needs one new
    /// block each (the newest requests are preempted until it fits).
    /// Returns whether it preempted.
    fn schedule_decodes(&mut self, reqs: &mut [Request], budget: &mut u64) -> bool {
        let bt = self.block_tokens;
        let mut preempted = false;
        let class = (bt - self.step % bt) as usize % bt as usize;
        while self.phase_count[class] > self.free_blocks {
            if self.preempt_newest(reqs).is_none() {
                break;
            }
            preempted = true;
        }
        self.free_blocks -= self.phase_count[class];
        self.decode_reserved = true;
        *budget -= self.decode_count.min(*budget);
        preempted
    }

    /// Steps 2 and 3: prompt chunks of running requests, then admissions,
    /// within what is left of the budget.
    fn schedule_prompts(
        &mut self,
        reqs: &mut [Request],
        now: f64,
        budget: &mut u64,
        preempted: &mut bool,
    ) {
        let bt = self.block_tokens;
        // 2. Prefill chunks of running requests, oldest first.
        let mut i = 0;
        while i < self.prefilling.len() && *budget > 0 {
            let id = self.prefilling[i];
            let r = reqs[id as usize];
            let chunk = u64::from(r.target - r.computed).min(*budget);
            let done = u64::from(r.computed);
            let need = blocks(done + chunk, bt) - blocks(done, bt);
            let mut evicted_self = false;
            while need > self.free_blocks {
                match self.preempt_newest(reqs) {
                    Some((victim, was_decoding)) => {
                        *preempted = true;
                        // A preempted decoder gives back its token of the budget (V1).
                        *budget += u64::from(was_decoding);
                        if victim == id {
                            evicted_self = true;
                            break;
                        }
                    }
                    None => {
                        evicted_self = true;
                        break;
                    }
                }
            }
            if evicted_self {
                break;
            }
            self.free_blocks -= need;
            self.chunks.push((id, chunk as u32));
            *budget -= chunk;
            i += 1;
        }
        // 3. Admissions, first come first served; none in a step that preempted (V1).
        if !*preempted {
            while *budget > 0 && self.running.len() < self.max_num_seqs {
                let Some(&id) = self.waiting.front() else {
                    break;
                };
                let r = &mut reqs[id as usize];
                // Recompute after a preemption: the prompt and the tokens generated so far.
                let target = r.input_tokens + r.generated;
                // Without chunked context a prompt waits for a step with
                // room for all of it (unless nothing ever could hold it).
                if self.prompts == PromptSteps::Whole
                    && u64::from(target) > *budget
                    && u64::from(target) <= self.max_batched_tokens
                {
                    break;
                }
                let chunk = u64::from(target).min(*budget);
                let need = blocks(chunk, bt);
                // A new request waits for free blocks; it evicts no one (V1).
                if need > self.free_blocks {
                    break;
                }
                self.waiting.pop_front();
                r.target = target;
                r.computed = 0;
                r.state = State::Prefill;
                if r.first_scheduled_s.is_nan() {
                    r.first_scheduled_s = now;
                }
                self.running.push(id);
                self.prefilling.push(id);
                self.free_blocks -= need;
                self.chunks.push((id, chunk as u32));
                *budget -= chunk;
            }
        }
    }

    /// The planned step's work for the cost model.
    fn work(&self, reqs: &[Request]) -> IterationWork {
        // A step of prompt chunks alone runs no decode.
        let decodes = if self.prefill_only {
            0.0
        } else {
            self.decode_count as f64
        };
        // Each decoder attends to its KV tokens plus the token it processes.
        let context = if self.prefill_only {
            0.0
        } else {
            self.decode_base_sum as f64 + decodes * (self.step as f64 + 1.0)
        };
        let mut prefill_tokens = 0.0;
        let mut pairs = 0.0;
        let mut completing = 0.0;
        for &(id, chunk) in &self.chunks {
            let r = &reqs[id as usize];
            let (c, p) = (f64::from(chunk), f64::from(r.computed));
            prefill_tokens += c;
            // Causal attention of a chunk of c tokens after p cached ones: c·p + c²/2 pairs.
            pairs += c * p + c * c / 2.0;
            if r.computed + chunk == r.target {
                completing += 1.0;
            }
        }
        IterationWork {
            decode_seqs: decodes,
            decode_context_sum: context,
            prefill_tokens,
            prefill_attention_pairs: pairs,
            // Every decoder samples a token, and so does each prompt whose prefill completes.
            logit_tokens: decodes + completing,
        }
    }

    /// Ends the step in progress at `now`; pushes the requests that finished.
    pub fn complete(
        &mut self,
        reqs: &mut [Request],
        now: f64,
        finished: &mut Vec<u32>,
    ) -> StepOutcome {
        let this_step = self.step;
        let prefill_only = self.prefill_only;
        self.prefill_only = false;
        self.decode_reserved = false;
        self.busy = false;
        // Decoders advance only in a step that ran them; the step counter
        // counts such steps.
        let (outcome_decodes, decode_tokens, paused_s) = if prefill_only {
            // The decoders in flight waited through this step (those that
            // join later are counted as if they had too: an approximation of
            // the inter-token tally only; TPOT comes from timestamps).
            if self.decode_count > 0 {
                self.paused_s += self.step_s;
            }
            (0, 0, 0.0)
        } else {
            self.step += 1;
            // Every decoder of the step got a token, the ones it finished too.
            let stepped = (
                self.decode_count,
                self.decode_count,
                std::mem::take(&mut self.paused_s),
            );
            self.retire_finished_decoders(reqs, this_step, finished);
            stepped
        };
        let first_tokens = self.advance_prefills(reqs, now, finished);
        StepOutcome {
            decode_streams: outcome_decodes,
            tokens: decode_tokens + first_tokens,
            paused_s,
        }
    }

    /// Frees the decoders whose last token step `this_step` sampled.
    fn retire_finished_decoders(
        &mut self,
        reqs: &mut [Request],
        this_step: u64,
        finished: &mut Vec<u32>,
    ) {
        let bt = self.block_tokens;
        while let Some(&Reverse((last, id, epoch))) = self.finish_heap.peek() {
            if last > this_step {
                break;
            }
            self.finish_heap.pop();
            let r = reqs[id as usize];
            if r.epoch != epoch || r.state != State::Decode {
                continue;
            }
            self.remove_decoder(&r);
            let kv = (r.base + self.step as i64) as u64;
            self.free_blocks += blocks(kv, bt);
            self.finish(reqs, id, finished);
        }
    }

    /// Adds the step's prefill chunks; a completed prefill samples the next
    /// token and the request joins the decoders (or finishes, with one
    /// output token). Returns the tokens sampled.
    fn advance_prefills(&mut self, reqs: &mut [Request], now: f64, finished: &mut Vec<u32>) -> u64 {
        let bt = self.block_tokens;
        let mut tokens = 0;
        for k in 0..self.chunks.len() {
            let (id, chunk) = self.chunks[k];
            let r = &mut reqs[id as usize];
            r.computed += chunk;
            if r.computed < r.target {
                continue;
            }
            r.generated += 1;
            tokens += 1;
            if r.first_token_s.is_nan() {
                r.first_token_s = now;
            }
            let kv = u64::from(r.computed);
            if let Some(i) = self.prefilling.iter().position(|&p| p == id) {
                self.prefilling.remove(i);
            }
            if r.generated >= r.output_tokens {
                self.free_blocks += blocks(kv, bt);
                self.finish(reqs, id, finished);
                continue;
            }
            r.state = State::Decode;
            r.base = kv as i64 - self.step as i64;
            r.step_entry = self.step;
            // Decode steps step_entry .. step_entry + remaining − 1 each sample one token.
            let last = self.step + u64::from(r.output_tokens - r.generated) - 1;
            let (base, epoch) = (r.base, r.epoch);
            self.finish_heap.push(Reverse((last, id, epoch)));
            let p = self.phase(base);
            self.decode_count += 1;
            self.decode_base_sum += base;
            self.phase_count[p] += 1;
        }
        tokens
    }

    fn finish(&mut self, reqs: &mut [Request], id: u32, finished: &mut Vec<u32>) {
        let r = &mut reqs[id as usize];
        r.generated = r.output_tokens;
        r.state = State::Done;
        if let Some(i) = self.running.iter().rposition(|&x| x == id) {
            self.running.remove(i);
        }
        finished.push(id);
    }
}
