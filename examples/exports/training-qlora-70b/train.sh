#!/usr/bin/env bash
# Written by gpuplan from examples/training/qlora-70b.toml (training plan 1): 1 × H100-SXM-80GB on 1 × 1x-H100-75-722 (hyperbolic default).
# Layout TP1 · PP1 · DP1, ZeRO-1, micro-batch 1 × 16, recomputation selective, bf16.
# Predicted: 27.74 s per step, 1181 tokens/s (1181 per GPU, MFU 34%), peak 65.2 of 79.2 GiB per GPU.
# Expected 11.8 h to train 5.000e7 tokens (checkpoint every 677 min), $1.29/h, $15 in total.
set -euo pipefail
# Setup: pip install torchtune torchao
tune run lora_finetune_single_device --config ${TORCHTUNE_CONFIG:?the torchtune recipe config for llama-3.1-70b} model.lora_rank=16 model.quantize_base=True batch_size=1 gradient_accumulation_steps=16 tokenizer.max_seq_len=2048 enable_activation_checkpointing=True max_steps_per_epoch=1526
