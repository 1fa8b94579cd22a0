//! One replica of a non-LLM service: the time of a batch of requests, its
//! memory, the most requests per second it sustains, and the most it
//! sustains within a p99 latency bound under Poisson arrivals.

use super::cost::{eight_bit_share, family_efficiency, Rates};
use super::work::{forward, params, whisper_cross_kv, whisper_decode_step, Work};
use crate::calibration::Calibration;
use crate::memory::{GIB, RUNTIME_OVERHEAD_GIB};
use crate::queueing::wait_quantile_s;
use gpuplan_catalog::{ComponentKind, GpuSpec, NonLlmFamily, NonLlmModel, Precision};
use serde::Serialize;

/// Largest batch searched (requests per GPU in one pass).
pub const MAX_BATCH: u64 = 4096;
/// Share of GPU memory a serving engine may use.
pub const MEMORY_USABLE_SHARE: f64 = 0.9;

/// What one request asks for, in its family's units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "family", rename_all = "lowercase")]
pub enum Request {
    /// One image: side in pixels, denoising steps, classifier-free guidance
    /// (runs the denoiser on the conditional and unconditional batch).
    Image {
        /// Image side, pixels.
        resolution_px: u64,
        /// Denoising steps.
        steps: u64,
        /// Classifier-free guidance on.
        guidance: bool,
    },
    /// One 30 s audio window transcribed into `output_tokens` tokens.
    Audio {
        /// Tokens decoded per window.
        output_tokens: f64,
        /// Beam width.
        beam: u64,
    },
    /// One text sequence of `seq_len` tokens through the encoder.
    Text {
        /// Tokens per sequence (a mean: may be fractional).
        seq_len: f64,
    },
}

/// Model × GPU × precision with the factors it is timed with.
#[derive(Debug, Clone, Copy)]
pub struct Setup<'a> {
    /// The model.
    pub model: &'a NonLlmModel,
    /// The GPU.
    pub gpu: &'a GpuSpec,
    /// Precision of the main network (UNet/DiT, Whisper, encoder); text
    /// encoders and VAE run in 16 bits.
    pub precision: Precision,
    /// The LLM-calibrated efficiencies.
    pub cal: &'a Calibration,
    /// The per-family factors.
    pub factors: &'a Calibration,
}

/// Time of one batch on one GPU and its parts, seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchTime {
    /// Requests in the batch.
    pub batch: u64,
    /// Whole batch.
    pub total_s: f64,
    /// Per component or phase (`unet`, `vae`, `encoder`, `decode` ...).
    pub parts: Vec<(String, f64)>,
    /// Whether compute bounds the largest part.
    pub compute_bound: bool,
}

/// Memory of one replica at a batch, GiB.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NonLlmMemory {
    /// Weights of every component.
    pub weights_gib: f64,
    /// Activation workspace of the largest pass.
    pub activations_gib: f64,
    /// Whisper self- and cross-attention caches.
    pub cache_gib: f64,
    /// CUDA context and library workspaces.
    pub overhead_gib: f64,
    /// Sum.
    pub total_gib: f64,
    /// Usable GPU memory.
    pub usable_gib: f64,
    /// Whether it fits.
    pub fits: bool,
}

impl Setup<'_> {
    fn rates(&self, precision: Precision) -> Result<Rates, String> {
        Rates::new(
            self.gpu,
            precision,
            self.cal,
            family_efficiency(self.factors, self.model.family),
            eight_bit_share(self.factors, self.model.family),
        )
    }

    /// Precision of text encoders and the VAE: 16 bits (32 when all runs in FP32).
    fn aux_precision(&self) -> Precision {
        if self.precision == Precision::Fp32 {
            Precision::Fp32
        } else {
            Precision::Fp16
        }
    }

    fn check_family(&self, request: &Request) -> Result<(), String> {
        let ok = matches!(
            (self.model.family, request),
            (NonLlmFamily::Diffusion, Request::Image { .. })
                | (NonLlmFamily::Speech, Request::Audio { .. })
                | (NonLlmFamily::Encoder, Request::Text { .. })
        );
        if ok {
            Ok(())
        } else {
            Err(format!(
                "model `{}` is a {} model: its requests are {}",
                self.model.id,
                self.model.family.as_str(),
                match self.model.family {
                    NonLlmFamily::Diffusion => "images",
                    NonLlmFamily::Speech => "audio windows",
                    NonLlmFamily::Encoder => "text sequences",
                }
            ))
        }
    }

    /// Time of a batch of `batch` identical requests on one GPU.
    pub fn batch_time(&self, request: &Request, batch: u64) -> Result<BatchTime, String> {
        self.check_family(request)?;
        let b = batch.max(1) as f64;
        let main = self.rates(self.precision)?;
        let aux = self.rates(self.aux_precision())?;
        let mut parts = Parts::default();
        match *request {
            Request::Image {
                resolution_px,
                steps,
                guidance,
            } => {
                // CFG runs a UNet and the text encoders on 2 prompts per image;
                // FLUX takes guidance as an input embedding (one pass).
                let cfg = if guidance && self.model.component(ComponentKind::Unet).is_some() {
                    2.0
                } else {
                    1.0
                };
                for c in &self.model.components {
                    let (work, p) = forward(c, resolution_px as f64, 0.0);
                    match c.kind {
                        // Every step reads the weights again.
                        ComponentKind::Unet | ComponentKind::Mmdit => {
                            parts.add(&c.name, &main, work.times(b * cfg), p, 0.0, steps as f64)
                        }
                        ComponentKind::Vae => parts.add(&c.name, &aux, work.times(b), p, 0.0, 1.0),
                        _ => parts.add(&c.name, &aux, work.times(b * cfg), p, 0.0, 1.0),
                    }
                }
            }
            Request::Audio {
                output_tokens,
                beam,
            } => self.speech_parts(&main, b, output_tokens, beam.max(1) as f64, &mut parts)?,
            Request::Text { seq_len } => {
                for c in &self.model.components {
                    let (work, p) = forward(c, 0.0, seq_len);
                    parts.add(&c.name, &main, work.times(b), p, 0.0, 1.0);
                }
            }
        }
        Ok(BatchTime {
            batch,
            total_s: parts.parts.iter().map(|p| p.1).sum(),
            parts: parts.parts,
            compute_bound: parts.compute_bound,
        })
    }

    /// Whisper: encoder over the window, the decoder's cross-attention keys
    /// and values once, then `tokens` decode steps of `b·beam` sequences, each
    /// reading the decoder weights and every sequence's caches.
    fn speech_parts(
        &self,
        rates: &Rates,
        b: f64,
        tokens: f64,
        beam: f64,
        parts: &mut Parts,
    ) -> Result<(), String> {
        let enc = self
            .model
            .component(ComponentKind::WhisperEncoder)
            .ok_or("speech model has no whisper_encoder component")?;
        let dec = self
            .model
            .component(ComponentKind::WhisperDecoder)
            .ok_or("speech model has no whisper_decoder component")?;
        let (enc_work, enc_params) = forward(enc, 0.0, 0.0);
        let positions = enc.positions as f64;
        parts.add("encoder", rates, enc_work.times(b), enc_params, 0.0, 1.0);
        let cross = whisper_cross_kv(dec, positions).times(b);
        parts.add("cross-kv", rates, cross, 0.0, 0.0, 1.0);
        // Mean self-attention context over the transcript: half its length.
        let step = whisper_decode_step(dec, tokens / 2.0, positions).times(b * beam);
        let cache_bytes =
            b * beam * cache_elems_per_seq(dec, positions, tokens / 2.0) * rates.activation_bytes;
        parts.add(
            "decode",
            rates,
            step,
            params(dec),
            cache_bytes,
            tokens.max(1.0),
        );
        Ok(())
    }

    /// Memory of one replica serving batches of `batch` requests.
    pub fn memory(&self, request: &Request, batch: u64) -> NonLlmMemory {
        let b = batch.max(1) as f64;
        let mut weights = 0.0;
        let mut peak: f64 = 0.0;
        let mut cache = 0.0;
        let (px, seq, cfg) = match *request {
            Request::Image {
                resolution_px,
                guidance,
                ..
            } => {
                let unet = self.model.component(ComponentKind::Unet).is_some();
                let cfg = if guidance && unet { 2.0 } else { 1.0 };
                (resolution_px as f64, 0.0, cfg)
            }
            Request::Text { seq_len } => (0.0, seq_len, 1.0),
            Request::Audio { .. } => (0.0, 0.0, 1.0),
        };
        for c in &self.model.components {
            let (work, p) = forward(c, px, seq);
            let main = matches!(
                c.kind,
                ComponentKind::Unet
                    | ComponentKind::Mmdit
                    | ComponentKind::WhisperEncoder
                    | ComponentKind::WhisperDecoder
            ) || self.model.family == NonLlmFamily::Encoder;
            let bytes = if main {
                self.precision.bytes_per_element()
            } else {
                self.aux_precision().bytes_per_element()
            };
            weights += p * bytes;
            // Workspace: input, output and one temporary of the largest
            // tensor, 16-bit; the VAE decodes one latent per image (no CFG).
            let copies = if c.kind == ComponentKind::Vae {
                b
            } else {
                b * cfg
            };
            peak = peak.max(3.0 * work.peak_tensor_elems * copies * 2.0);
            if let (
                ComponentKind::WhisperDecoder,
                Request::Audio {
                    output_tokens,
                    beam,
                },
            ) = (c.kind, request)
            {
                let positions = self
                    .model
                    .component(ComponentKind::WhisperEncoder)
                    .map(|e| e.positions as f64)
                    .unwrap_or(0.0);
                cache += b
                    * (*beam).max(1) as f64
                    * cache_elems_per_seq(c, positions, *output_tokens)
                    * 2.0;
            }
        }
        let usable = self.gpu.memory_gib * MEMORY_USABLE_SHARE;
        let total = (weights + peak + cache) / GIB + RUNTIME_OVERHEAD_GIB;
        NonLlmMemory {
            weights_gib: weights / GIB,
            activations_gib: peak / GIB,
            cache_gib: cache / GIB,
            overhead_gib: RUNTIME_OVERHEAD_GIB,
            total_gib: total,
            usable_gib: usable,
            fits: total <= usable,
        }
    }

    /// The batch that gives the most requests per second on one GPU within
    /// memory, and that rate.
    pub fn max_throughput(&self, request: &Request) -> Result<(f64, BatchTime), String> {
        let mut best: Option<(f64, BatchTime)> = None;
        for batch in batches() {
            if !self.memory(request, batch).fits {
                break;
            }
            let t = self.batch_time(request, batch)?;
            let rate = batch as f64 / t.total_s;
            if best.as_ref().is_none_or(|b| rate > b.0) {
                best = Some((rate, t));
            }
        }
        best.ok_or_else(|| {
            let m = self.memory(request, 1);
            format!(
                "does not fit: needs {:.1} GiB at batch 1, {} has {:.1} usable",
                m.total_gib, self.gpu.name, m.usable_gib
            )
        })
    }

    /// The most requests per second `gpus` GPUs sustain under Poisson
    /// arrivals with p99 latency within `bound_s`: each GPU serves batches of
    /// `b`; a request waits for its batch to fill (b/λ at most), for a free
    /// GPU (G/D/c queue of batches, arrivals Erlang-b so c_a² = 1/b, service
    /// deterministic), then the batch time. Best over batch sizes.
    pub fn server_throughput(
        &self,
        request: &Request,
        gpus: u64,
        bound_s: f64,
    ) -> Result<(f64, BatchTime), String> {
        let c = gpus.max(1) as f64;
        let mut best: Option<(f64, BatchTime)> = None;
        for batch in batches() {
            if !self.memory(request, batch).fits {
                break;
            }
            let t = self.batch_time(request, batch)?;
            let b = batch as f64;
            let p99 = |lambda: f64| {
                b / lambda
                    + wait_quantile_s(lambda / b, t.total_s, c, 1.0 / b, 0.0, 0.99)
                    + t.total_s
            };
            let capacity = c * b / t.total_s;
            // The highest utilisation on a grid that meets the bound, refined
            // by bisection towards the next grid point (p99 falls with λ while
            // batches fill faster, then rises as the queue saturates).
            let grid = (1..1000).rev().map(|k| k as f64 / 1000.0);
            let Some(rho) = grid.into_iter().find(|rho| p99(rho * capacity) <= bound_s) else {
                continue;
            };
            let (mut lo, mut hi) = (rho * capacity, (rho + 1e-3).min(1.0) * capacity);
            for _ in 0..40 {
                let mid = 0.5 * (lo + hi);
                if p99(mid) <= bound_s {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            if best.as_ref().is_none_or(|x| lo > x.0) {
                best = Some((lo, t));
            }
        }
        best.ok_or_else(|| {
            format!(
                "no batch size meets a p99 latency of {:.3} s on {} × {}",
                bound_s, gpus, self.gpu.name
            )
        })
    }
}

/// The parts of a batch's time and whether compute bounds the largest.
#[derive(Default)]
struct Parts {
    parts: Vec<(String, f64)>,
    largest_s: f64,
    compute_bound: bool,
}

impl Parts {
    /// `repeat` passes of `work` (weights and caches read each time).
    fn add(
        &mut self,
        name: &str,
        rates: &Rates,
        work: Work,
        weights: f64,
        extra: f64,
        repeat: f64,
    ) {
        let t = rates.time_s(&work, weights, extra) * repeat;
        if t > self.largest_s {
            self.largest_s = t;
            self.compute_bound = rates.compute_bound(&work, weights, extra);
        }
        self.parts.push((name.to_string(), t));
    }
}

/// Self-attention cache (keys and values of `ctx` own tokens) and
/// cross-attention cache (keys and values of the encoder positions) of one
/// sequence, elements: 2·layers·d·(ctx + positions).
fn cache_elems_per_seq(dec: &gpuplan_catalog::Component, positions: f64, ctx: f64) -> f64 {
    2.0 * dec.layers as f64 * dec.hidden as f64 * (ctx + positions)
}

/// Batch sizes searched: powers of two up to [`MAX_BATCH`].
fn batches() -> impl Iterator<Item = u64> {
    (0..=12).map(|k| 1u64 << k).take_while(|b| *b <= MAX_BATCH)
}
