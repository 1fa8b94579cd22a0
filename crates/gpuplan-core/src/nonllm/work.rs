//! FLOPs, activation traffic and parameters of one forward pass of each
//! component kind, counted layer by layer from the published configs (the
//! module structure of diffusers `UNet2DConditionModel`, `AutoencoderKL`,
//! `FluxTransformer2DModel` and transformers `WhisperModel` / `BertModel`).
//! One multiply-accumulate is 2 FLOPs. Biases and norms count as parameters;
//! elementwise work is counted as activation traffic, not FLOPs.

use gpuplan_catalog::{Component, ComponentKind, FeedForward};
use serde::Serialize;

/// The work of one forward pass for one sample (image, audio window, sequence).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Work {
    /// Matmul and convolution FLOPs.
    pub gemm_flops: f64,
    /// Attention FLOPs: QKᵀ and PV, 4·q·k·width.
    pub attention_flops: f64,
    /// Activation elements written by the matmuls, convolutions and attention
    /// (each is written once and read once by the next op).
    pub activation_elems: f64,
    /// Largest activation tensor of the pass, elements (sizes the workspace).
    pub peak_tensor_elems: f64,
}

impl Work {
    /// This work `k` times (a batch of `k` samples, `k` steps).
    pub fn times(self, k: f64) -> Work {
        Work {
            gemm_flops: self.gemm_flops * k,
            attention_flops: self.attention_flops * k,
            activation_elems: self.activation_elems * k,
            peak_tensor_elems: self.peak_tensor_elems * k,
        }
    }

    /// Sum of two works (the peak is the larger one).
    pub fn plus(self, o: Work) -> Work {
        Work {
            gemm_flops: self.gemm_flops + o.gemm_flops,
            attention_flops: self.attention_flops + o.attention_flops,
            activation_elems: self.activation_elems + o.activation_elems,
            peak_tensor_elems: self.peak_tensor_elems.max(o.peak_tensor_elems),
        }
    }

    /// All FLOPs.
    pub fn flops(&self) -> f64 {
        self.gemm_flops + self.attention_flops
    }
}

/// Walks a network, adding each op's work and parameters.
#[derive(Debug, Default)]
struct Walk {
    work: Work,
    params: f64,
}

impl Walk {
    /// Dense layer on `tokens` rows: 2·tokens·din·dout FLOPs, din·dout + dout params.
    fn linear(&mut self, tokens: f64, din: f64, dout: f64) {
        self.work.gemm_flops += 2.0 * tokens * din * dout;
        self.params += din * dout + dout;
        self.out(tokens * dout);
    }

    /// k×k convolution with `hw` output positions: 2·hw·k²·cin·cout FLOPs.
    fn conv(&mut self, hw: f64, cin: f64, cout: f64, k: f64) {
        self.work.gemm_flops += 2.0 * hw * k * k * cin * cout;
        self.params += k * k * cin * cout + cout;
        self.out(hw * cout);
    }

    /// 1-D convolution of kernel `k` with `positions` outputs: 2·positions·k·cin·cout FLOPs.
    fn conv1d(&mut self, positions: f64, cin: f64, cout: f64, k: f64) {
        self.work.gemm_flops += 2.0 * positions * k * cin * cout;
        self.params += k * cin * cout + cout;
        self.out(positions * cout);
    }

    /// Attention of `q` queries over `kv` keys at `width` (all heads): QKᵀ and
    /// PV are 2·q·kv·width FLOPs each (flash attention: no q×kv tensor stored).
    fn attention(&mut self, q: f64, kv: f64, width: f64) {
        self.work.attention_flops += 4.0 * q * kv * width;
        self.out(q * width);
    }

    /// A norm's scale and shift.
    fn norm(&mut self, channels: f64) {
        self.params += 2.0 * channels;
    }

    /// A table lookup (token or position embedding): parameters, no FLOPs.
    fn embedding(&mut self, rows: f64, width: f64) {
        self.params += rows * width;
    }

    fn out(&mut self, elems: f64) {
        self.work.activation_elems += elems;
        self.work.peak_tensor_elems = self.work.peak_tensor_elems.max(elems);
    }

    /// Diffusers `ResnetBlock2D`: norm, 3×3 conv, time projection, norm, 3×3
    /// conv, and a 1×1 shortcut when the width changes.
    fn resnet(&mut self, hw: f64, cin: f64, cout: f64, temb: f64) {
        self.norm(cin);
        self.conv(hw, cin, cout, 3.0);
        if temb > 0.0 {
            self.linear(1.0, temb, cout);
        }
        self.norm(cout);
        self.conv(hw, cout, cout, 3.0);
        if cin != cout {
            self.conv(hw, cin, cout, 1.0);
        }
    }

    /// Diffusers `Transformer2DModel` at `n` positions of width `ch`: proj in,
    /// `depth` blocks of self-attention, cross-attention over `ctx` text tokens
    /// of width `cross`, GEGLU feed-forward (ch → 2·4ch, 4ch → ch), proj out.
    fn spatial_transformer(&mut self, n: f64, ch: f64, depth: f64, cross: f64, ctx: f64) {
        let mut block = Walk::default();
        block.norm(ch);
        block.linear(n, ch, ch);
        for _ in 0..depth as u64 {
            block.norm(ch);
            for _ in 0..4 {
                block.linear(n, ch, ch);
            }
            block.attention(n, n, ch);
            block.norm(ch);
            block.linear(n, ch, ch);
            block.linear(ctx, cross, ch);
            block.linear(ctx, cross, ch);
            block.linear(n, ch, ch);
            block.attention(n, ctx, ch);
            block.norm(ch);
            block.linear(n, ch, 8.0 * ch);
            block.linear(n, 4.0 * ch, ch);
        }
        block.linear(n, ch, ch);
        self.add(block);
    }

    /// A transformer layer over `n` tokens: q, k, v, o projections, attention
    /// over `kv` keys, the feed-forward, two norms.
    fn transformer_layer(&mut self, n: f64, kv: f64, h: f64, ffn: f64, ff: FeedForward) {
        self.norm(h);
        for _ in 0..4 {
            self.linear(n, h, h);
        }
        self.attention(n, kv, h);
        self.norm(h);
        let inputs = if ff == FeedForward::Gated { 2.0 } else { 1.0 };
        for _ in 0..inputs as u64 {
            self.linear(n, h, ffn);
        }
        self.linear(n, ffn, h);
    }

    fn add(&mut self, o: Walk) {
        self.work = self.work.plus(o.work);
        self.params += o.params;
    }
}

/// Work of one forward pass of `c` for one sample, and the component's parameters.
/// `image_px` is the image side in pixels (UNet, MMDiT, VAE); `seq` the text
/// length for encoders (0 = the component's own `positions`).
pub fn forward(c: &Component, image_px: f64, seq: f64) -> (Work, f64) {
    let mut w = Walk::default();
    match c.kind {
        ComponentKind::Unet => unet(&mut w, c, image_px / 8.0),
        ComponentKind::Mmdit => mmdit(&mut w, c, image_px / 16.0),
        ComponentKind::Vae => vae(&mut w, c, image_px / 8.0),
        ComponentKind::Encoder => {
            let n = if seq > 0.0 { seq } else { c.positions as f64 };
            encoder(&mut w, c, n)
        }
        ComponentKind::WhisperEncoder => whisper_encoder(&mut w, c),
        ComponentKind::WhisperDecoder => whisper_decoder_weights(&mut w, c),
    }
    (w.work, w.params)
}

/// Parameters of a component.
pub fn params(c: &Component) -> f64 {
    forward(c, 64.0, 1.0).1
}

/// Diffusers `UNet2DConditionModel` on a `side`×`side` latent.
fn unet(w: &mut Walk, c: &Component, side: f64) {
    let ch = |i: usize| c.channels.get(i).copied().unwrap_or(0) as f64;
    let levels = c.channels.len();
    let temb = 4.0 * ch(0);
    let (cross, ctx) = (c.cross_dim as f64, c.positions as f64);
    // Timestep MLP and (SDXL) the added text/time embedding MLP.
    w.linear(1.0, ch(0), temb);
    w.linear(1.0, temb, temb);
    if c.class_embed_dim > 0 {
        w.linear(1.0, c.class_embed_dim as f64, temb);
        w.linear(1.0, temb, temb);
    }
    let mut s = side;
    w.conv(s * s, c.latent_channels as f64, ch(0), 3.0);
    let mut skips = vec![ch(0)];
    let mut cin = ch(0);
    for i in 0..levels {
        let depth = c.depths.get(i).copied().unwrap_or(0) as f64;
        for _ in 0..c.layers {
            w.resnet(s * s, cin, ch(i), temb);
            cin = ch(i);
            if depth > 0.0 {
                w.spatial_transformer(s * s, cin, depth, cross, ctx);
            }
            skips.push(cin);
        }
        if i + 1 < levels {
            s /= 2.0;
            w.conv(s * s, cin, cin, 3.0);
            skips.push(cin);
        }
    }
    // Mid block: resnet, transformer (the deepest level's depth), resnet.
    let mid_depth = c
        .depths
        .iter()
        .rev()
        .find(|d| **d > 0)
        .copied()
        .unwrap_or(0) as f64;
    w.resnet(s * s, cin, cin, temb);
    if mid_depth > 0.0 {
        w.spatial_transformer(s * s, cin, mid_depth, cross, ctx);
    }
    w.resnet(s * s, cin, cin, temb);
    for i in (0..levels).rev() {
        let depth = c.depths.get(i).copied().unwrap_or(0) as f64;
        for _ in 0..=c.layers {
            let skip = skips.pop().unwrap_or(0.0);
            w.resnet(s * s, cin + skip, ch(i), temb);
            cin = ch(i);
            if depth > 0.0 {
                w.spatial_transformer(s * s, cin, depth, cross, ctx);
            }
        }
        if i > 0 {
            s *= 2.0;
            w.conv(s * s, cin, cin, 3.0);
        }
    }
    w.norm(cin);
    w.conv(s * s, cin, c.latent_channels as f64, 3.0);
}

/// `AutoencoderKL`: the decoder's work from a `side`×`side` latent; the
/// parameters of both halves (both are loaded).
fn vae(w: &mut Walk, c: &Component, side: f64) {
    let levels = c.channels.len();
    let ch = |i: usize| c.channels.get(i).copied().unwrap_or(0) as f64;
    let top = ch(levels - 1);
    let lat = c.latent_channels as f64;
    let mid = |w: &mut Walk, hw: f64| {
        w.resnet(hw, top, top, 0.0);
        w.norm(top);
        for _ in 0..4 {
            w.linear(hw, top, top);
        }
        w.attention(hw, hw, top);
        w.resnet(hw, top, top, 0.0);
    };
    // Decoder: post-quant 1×1, conv in, mid, up blocks of layers+1 resnets.
    let mut s = side;
    w.conv(s * s, lat, lat, 1.0);
    w.conv(s * s, lat, top, 3.0);
    mid(w, s * s);
    let mut cin = top;
    for i in (0..levels).rev() {
        for _ in 0..=c.layers {
            w.resnet(s * s, cin, ch(i), 0.0);
            cin = ch(i);
        }
        if i > 0 {
            s *= 2.0;
            w.conv(s * s, cin, cin, 3.0);
        }
    }
    w.norm(cin);
    w.conv(s * s, cin, 3.0, 3.0);
    // Encoder weights (not run for text-to-image): parameters only.
    let mut e = Walk::default();
    e.conv(1.0, 3.0, ch(0), 3.0);
    let mut cin = ch(0);
    for i in 0..levels {
        for _ in 0..c.layers {
            e.resnet(1.0, cin, ch(i), 0.0);
            cin = ch(i);
        }
        if i + 1 < levels {
            e.conv(1.0, cin, cin, 3.0);
        }
    }
    mid(&mut e, 1.0);
    e.norm(top);
    e.conv(1.0, top, 2.0 * lat, 3.0);
    e.conv(1.0, 2.0 * lat, 2.0 * lat, 1.0);
    w.params += e.params;
}

/// FLUX `FluxTransformer2DModel` on `side`×`side` image tokens (2×2 latent
/// patches) and `positions` T5 tokens: double-stream blocks (separate weights
/// per stream, joint attention), then single-stream blocks (parallel
/// attention and MLP), each with its adaLN modulation.
fn mmdit(w: &mut Walk, c: &Component, side: f64) {
    let d = c.hidden as f64;
    let ff = c.intermediate as f64;
    let img = side * side;
    let txt = c.positions as f64;
    let n = img + txt;
    let double = c.depths.first().copied().unwrap_or(0);
    let single = c.depths.get(1).copied().unwrap_or(0);
    w.linear(img, c.latent_channels as f64, d);
    w.linear(txt, c.cross_dim as f64, d);
    // Timestep (256-d sinusoid), guidance and pooled CLIP embedders.
    for din in [256.0, 256.0, c.class_embed_dim as f64] {
        w.linear(1.0, din, d);
        w.linear(1.0, d, d);
    }
    for _ in 0..double {
        for tokens in [img, txt] {
            w.linear(1.0, d, 6.0 * d);
            w.linear(tokens, d, 3.0 * d);
            w.linear(tokens, d, d);
            w.linear(tokens, d, ff);
            w.linear(tokens, ff, d);
        }
        w.attention(n, n, d);
    }
    for _ in 0..single {
        w.linear(1.0, d, 3.0 * d);
        w.linear(n, d, 3.0 * d + ff);
        w.attention(n, n, d);
        w.linear(n, d + ff, d);
    }
    w.linear(1.0, d, 2.0 * d);
    w.linear(img, d, c.latent_channels as f64);
}

/// A bidirectional encoder over `n` tokens: embeddings and `layers` layers.
fn encoder(w: &mut Walk, c: &Component, n: f64) {
    let h = c.hidden as f64;
    w.embedding(c.vocab as f64 + c.positions as f64, h);
    w.norm(h);
    for _ in 0..c.layers {
        w.transformer_layer(n, n, h, c.intermediate as f64, c.feed_forward);
    }
    w.norm(h);
}

/// Whisper encoder: conv (mel → d, k 3) over 3000 frames, conv (d → d, k 3,
/// stride 2) to 1500 positions, then the transformer layers (Radford et al. 2022, §2.2).
fn whisper_encoder(w: &mut Walk, c: &Component) {
    let d = c.hidden as f64;
    let n = c.positions as f64;
    let mel = c.channels.first().copied().unwrap_or(0) as f64;
    w.conv1d(2.0 * n, mel, d, 3.0);
    w.conv1d(n, d, d, 3.0);
    w.embedding(n, d);
    for _ in 0..c.layers {
        w.transformer_layer(n, n, d, c.intermediate as f64, c.feed_forward);
    }
    w.norm(d);
}

/// Whisper decoder parameters (its work depends on the tokens generated: see
/// [`whisper_decode_step`]): embeddings (tied head), per layer self-attention,
/// cross-attention, feed-forward.
fn whisper_decoder_weights(w: &mut Walk, c: &Component) {
    let d = c.hidden as f64;
    w.embedding(c.vocab as f64 + c.positions as f64, d);
    for _ in 0..c.layers {
        w.transformer_layer(1.0, 1.0, d, c.intermediate as f64, c.feed_forward);
        w.norm(d);
        for _ in 0..4 {
            w.linear(1.0, d, d);
        }
    }
    w.norm(d);
}

/// Work of projecting the encoder states to cross-attention keys and values
/// in every decoder layer, once per audio window: 2 matrices d×d over the
/// encoder positions per layer.
pub fn whisper_cross_kv(decoder: &Component, encoder_positions: f64) -> Work {
    let d = decoder.hidden as f64;
    let layers = decoder.layers as f64;
    Work {
        gemm_flops: layers * 2.0 * 2.0 * encoder_positions * d * d,
        attention_flops: 0.0,
        activation_elems: layers * 2.0 * encoder_positions * d,
        peak_tensor_elems: encoder_positions * d,
    }
}

/// Work of one decoder step for one sequence at context `ctx` tokens: the
/// layer GEMMs on one token (q, k, v, o; cross q, o; feed-forward), attention
/// over `ctx` own tokens and the encoder positions, and the vocabulary head.
pub fn whisper_decode_step(decoder: &Component, ctx: f64, encoder_positions: f64) -> Work {
    let d = decoder.hidden as f64;
    let ffn = decoder.intermediate as f64;
    let per_layer_gemm = 2.0 * (6.0 * d * d + 2.0 * d * ffn);
    let per_layer_attention = 4.0 * (ctx + encoder_positions) * d;
    let layers = decoder.layers as f64;
    Work {
        gemm_flops: layers * per_layer_gemm + 2.0 * d * decoder.vocab as f64,
        attention_flops: layers * per_layer_attention,
        activation_elems: layers * (8.0 * d + ffn) + decoder.vocab as f64,
        peak_tensor_elems: decoder.vocab as f64,
    }
}
