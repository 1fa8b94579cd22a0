//! The replicas behind the router over time: which are up, booting or
//! draining, how long each is billed, and the policies that change them
//! (autoscaling, spot preemptions and failures).

use crate::engine::{EngineConfig, Replica};
use crate::error::SimError;
use serde::Serialize;

/// Assumed time for a cloud GPU node to be provisioned and join the
/// cluster, s (a scale-up that needs a new node; an assumption, override it).
pub const NODE_PROVISION_S: f64 = 120.0;
/// Assumed time to pull the serving engine's container image (the vLLM
/// OpenAI image is about 10 GB), s.
pub const IMAGE_PULL_S: f64 = 60.0;
/// Assumed weight-loading speed of each GPU from the node's disk or model
/// cache, GiB/s.
pub const WEIGHT_LOAD_GIB_PER_S: f64 = 1.0;
/// Assumed engine warm-up after the weights are in: memory profiling,
/// CUDA-graph capture and compilation, s.
pub const ENGINE_WARMUP_S: f64 = 60.0;
/// Kubernetes HPA's default sync period (`--horizontal-pod-autoscaler-sync-period`), s.
pub const HPA_SYNC_PERIOD_S: f64 = 15.0;
/// Kubernetes HPA's default scale-down stabilisation window, s.
pub const HPA_SCALE_DOWN_STABILIZATION_S: f64 = 300.0;

/// Seconds from a scale-up decision to a new replica serving, for a replica
/// whose GPUs each load `weights_gib_per_gpu` GiB: provisioning, image
/// pull, weight load and warm-up ([`NODE_PROVISION_S`] …).
pub fn scale_up_delay_s(weights_gib_per_gpu: f64) -> f64 {
    NODE_PROVISION_S
        + IMAGE_PULL_S
        + weights_gib_per_gpu.max(0.0) / WEIGHT_LOAD_GIB_PER_S
        + ENGINE_WARMUP_S
}

/// Target-tracking autoscaling on requests outstanding per replica, as a
/// Kubernetes HPA or KEDA on vLLM's `num_requests_running + waiting` does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Autoscale {
    /// Never fewer replicas up or booting.
    pub min_replicas: u32,
    /// Never more.
    pub max_replicas: u32,
    /// Requests waiting or running per replica the scaler aims at.
    pub target_outstanding: f64,
    /// Seconds between two decisions.
    pub interval_s: f64,
    /// Seconds from the decision to scale up to a replica serving: node
    /// provisioning, image pull, weight load and engine warm-up.
    pub scale_up_delay_s: f64,
    /// Seconds after any scaling before the scaler removes a replica.
    pub cooldown_s: f64,
}

/// Replicas lost at random (spot preemptions, hardware or software failures).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Failures {
    /// Losses per replica per hour (a Poisson process per replica).
    pub per_replica_per_hour: f64,
    /// Seconds until a replacement serves.
    pub replacement_delay_s: f64,
}

/// What changes the fleet while a simulation runs; the default changes
/// nothing (a fixed fleet that never fails).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Dynamics {
    /// Target-tracking autoscaling.
    pub autoscale: Option<Autoscale>,
    /// Random replica losses.
    pub failures: Option<Failures>,
    /// A request with no replica up to take it gives up after this long, s
    /// (counted as timed out).
    pub request_timeout_s: Option<f64>,
    /// Record a time-series sample this often, s.
    pub sample_every_s: Option<f64>,
}

fn positive(field: &str, v: f64) -> Result<(), SimError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(SimError::invalid(field, v, "a number > 0"))
    }
}

fn non_negative(field: &str, v: f64) -> Result<(), SimError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(SimError::invalid(field, v, "a number >= 0"))
    }
}

impl Dynamics {
    pub(crate) fn check(&self) -> Result<(), SimError> {
        if let Some(a) = self.autoscale {
            if a.min_replicas == 0 {
                return Err(SimError::invalid("autoscale.min_replicas", 0, "at least 1"));
            }
            if a.max_replicas < a.min_replicas || a.max_replicas > 100_000 {
                return Err(SimError::invalid(
                    "autoscale.max_replicas",
                    a.max_replicas,
                    format!("from min_replicas ({}) to 100000", a.min_replicas),
                ));
            }
            positive("autoscale.target_outstanding", a.target_outstanding)?;
            positive("autoscale.interval_s", a.interval_s)?;
            non_negative("autoscale.scale_up_delay_s", a.scale_up_delay_s)?;
            non_negative("autoscale.cooldown_s", a.cooldown_s)?;
        }
        if let Some(f) = self.failures {
            non_negative("failures.per_replica_per_hour", f.per_replica_per_hour)?;
            non_negative("failures.replacement_delay_s", f.replacement_delay_s)?;
        }
        if let Some(t) = self.request_timeout_s {
            positive("request_timeout_s", t)?;
        }
        if let Some(s) = self.sample_every_s {
            positive("sample_every_s", s)?;
        }
        Ok(())
    }
}

/// Where a replica is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Serving: the router sends it requests.
    Up,
    /// Provisioned and billed, not serving yet.
    Booting,
    /// Finishing what it holds; the router sends it nothing; released when empty.
    Draining,
    /// Released: not billed.
    Down,
}

/// One replica and its life.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub engine: Replica,
    pub status: Status,
    /// Bumped whenever the replica is replaced or released, so events
    /// queued for an earlier incarnation are ignored.
    pub generation: u32,
}

/// Every replica, and the billed replica-seconds so far.
#[derive(Debug, Clone)]
pub(crate) struct Fleet {
    pub slots: Vec<Slot>,
    engine: EngineConfig,
    billed: u32,
    billed_seconds: f64,
    last_change_s: f64,
    pub peak_billed: u32,
    /// Time of the last scale up or down (for the cooldown).
    pub last_scaled_s: f64,
}

impl Fleet {
    /// `replicas` replicas up at time 0.
    pub fn new(engine: EngineConfig, replicas: u32) -> Self {
        let slots = (0..replicas)
            .map(|_| Slot {
                engine: Replica::new(&engine),
                status: Status::Up,
                generation: 0,
            })
            .collect();
        Fleet {
            slots,
            engine,
            billed: replicas,
            billed_seconds: 0.0,
            last_change_s: 0.0,
            peak_billed: replicas,
            last_scaled_s: f64::NEG_INFINITY,
        }
    }

    /// Adds the billed time up to `now`.
    fn account(&mut self, now: f64) {
        self.billed_seconds += f64::from(self.billed) * (now - self.last_change_s).max(0.0);
        self.last_change_s = now.max(self.last_change_s);
    }

    /// Replica-seconds billed up to `now`.
    pub fn billed_seconds(&mut self, now: f64) -> f64 {
        self.account(now);
        self.billed_seconds
    }

    /// Whether a request of `tokens` (prompt + output) can ever fit a replica's KV cache.
    pub fn fits(&self, tokens: u64) -> bool {
        let block = u64::from(self.engine.block_tokens.max(1));
        tokens.div_ceil(block) <= self.engine.kv_cache_tokens / block
    }

    /// Replicas billed now (up, booting or draining).
    pub fn billed(&self) -> u32 {
        self.billed
    }

    /// Replicas with this status.
    pub fn count(&self, status: Status) -> u32 {
        self.slots.iter().filter(|s| s.status == status).count() as u32
    }

    /// Provisions a replica (reusing a released slot); it boots until the
    /// caller's ready event. Returns its index.
    pub fn provision(&mut self, now: f64) -> usize {
        self.account(now);
        self.billed += 1;
        self.peak_billed = self.peak_billed.max(self.billed);
        let engine = self.engine;
        match self.slots.iter().position(|s| s.status == Status::Down) {
            Some(i) => {
                let slot = &mut self.slots[i];
                slot.engine = Replica::new(&engine);
                slot.status = Status::Booting;
                slot.generation = slot.generation.wrapping_add(1);
                i
            }
            None => {
                self.slots.push(Slot {
                    engine: Replica::new(&engine),
                    status: Status::Booting,
                    generation: 0,
                });
                self.slots.len() - 1
            }
        }
    }

    /// Releases replica `i`: no longer billed.
    pub fn release(&mut self, i: usize, now: f64) {
        self.account(now);
        self.billed -= 1;
        let slot = &mut self.slots[i];
        slot.status = Status::Down;
        slot.generation = slot.generation.wrapping_add(1);
    }

    /// Replaces replica `i` by a fresh one that boots (after a loss).
    pub fn replace(&mut self, i: usize) {
        let engine = self.engine;
        let slot = &mut self.slots[i];
        slot.engine = Replica::new(&engine);
        slot.status = Status::Booting;
        slot.generation = slot.generation.wrapping_add(1);
    }
}

/// One row of `--timeseries`: the fleet and its load at an instant, and
/// what happened since the previous row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimePoint {
    /// Simulated time, s.
    pub time_s: f64,
    /// Arrival rate of the traffic at this instant (a rate curve's value,
    /// or the constant rate), requests/s; for a trace, arrivals since the
    /// last row per second.
    pub arrival_rate: f64,
    /// Replicas serving.
    pub replicas_up: u32,
    /// Replicas booting (billed, not serving).
    pub replicas_booting: u32,
    /// Replicas draining (billed, not taking requests).
    pub replicas_draining: u32,
    /// Requests waiting for admission (in replicas or for a replica to come up).
    pub waiting: u64,
    /// Requests running.
    pub running: u64,
    /// Mean share of KV blocks in use over the serving replicas.
    pub kv_used_share: f64,
    /// Completions per second since the previous row.
    pub completed_per_s: f64,
    /// p99 TTFT of the measured requests completed so far, ms.
    pub ttft_ms_p99_so_far: f64,
}
