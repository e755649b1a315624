#!/bin/sh
# The original MLP program (batch 64, 300 steps) alone, pinned to CPU 0 or CPU 1, alternating; then
# the independent pair (unpinned) with each member's step. OMP_NUM_THREADS=1.
export OMP_NUM_THREADS=1
B=/work/main/build/bench/overhead_train
for r in 1 2 3 4 5 6; do
  for c in 0 1; do printf "round %s cpu %s: " $r $c; taskset -c $c $B --steps 300 --warmup 5 --batch-size 64 | grep -o "step_ms=[0-9.]*"; done
done
for r in 1 2 3 4 5 6; do
  printf "pair round %s: " $r; ( $B --steps 300 --warmup 5 --batch-size 64 & $B --steps 300 --warmup 5 --batch-size 64 & wait ) | grep -o "step_ms=[0-9.]*" | paste -sd' '
done
