#!/usr/bin/env bash
# FULL_SHARD step time with each prefetch setting, bench/fsdp_memory (67M parameters, a unit
# per layer), 2 processes, interleaved rounds; prints the bench line of each process.
# Usage: bash results/2026-11-27-fsdp-prefetch/variants.sh BUILD ROUNDS
set -u
build=${1:-build} rounds=${2:-2}
export OMP_NUM_THREADS=1 MALLOC_MMAP_THRESHOLD_=65536
for round in $(seq "$rounds"); do
  for v in none pre post forward pre+forward; do
    flags=()
    case $v in
      pre) flags=(--fsdp_backward_prefetch BACKWARD_PRE) ;;
      post) flags=(--fsdp_backward_prefetch BACKWARD_POST) ;;
      forward) flags=(--fsdp_forward_prefetch true) ;;
      pre+forward) flags=(--fsdp_backward_prefetch BACKWARD_PRE --fsdp_forward_prefetch true) ;;
    esac
    echo "== round $round variant $v load $(cut -d' ' -f1 /proc/loadavg)"
    "$build/runtime/launcher/accelerate" launch --cpu --num_processes 2 --main_process_port 0 --use_fsdp \
      --fsdp_sharding_strategy FULL_SHARD --fsdp_auto_wrap_policy SIZE_BASED_WRAP --fsdp_min_num_params 100000 \
      "${flags[@]}" "$build/bench/fsdp_memory" 2>&1 | grep '^bench: fsdp'
  done
done
