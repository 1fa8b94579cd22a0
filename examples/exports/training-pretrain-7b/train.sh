#!/usr/bin/env bash
# Written by gpuplan from examples/training/pretrain-7b.toml (training plan 1): 16 × B200-180GB on 2 × gpu-b200-sxm-a_8gpu-160vcpu-1792gb (nebius me-west1).
# Layout TP1 · PP1 · DP16, ZeRO-3, micro-batch 8 × 8, recomputation none, fp8.
# Predicted: 7.76 s per step, 540760 tokens/s (33797 per GPU, MFU 69%), peak 158.7 of 178.2 GiB per GPU.
# Expected 515.4 h to train 1.000e12 tokens (checkpoint every 309 min), $88.00/h, $45640 in total.
set -euo pipefail
# Setup: git clone https://github.com/NVIDIA/Megatron-LM.git ~/Megatron-LM && pip install -e ~/Megatron-LM
# Run on each of the 2 nodes with NODE_RANK=0..1 and MASTER_ADDR = the IP of node 0.
cd ~/Megatron-LM && torchrun --nnodes 2 --nproc_per_node 8 --node_rank ${NODE_RANK:?} --master_addr ${MASTER_ADDR:?} --master_port 29500 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 11008 --num-attention-heads 32 --max-position-embeddings 4096 --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --micro-batch-size 8 --global-batch-size 1024 --seq-length 4096 --train-iters 238419 --bf16 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --use-flash-attn --data-path ${DATA_PATH:?the Megatron data prefix} --tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-2-7b-hf --save ${CHECKPOINT_DIR:?where checkpoints go} --load ${CHECKPOINT_DIR} --swiglu --normalization RMSNorm --position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights --fp8-format hybrid
