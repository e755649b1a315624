#!/bin/bash
# Issue 33 item 0: phases of the MLP step at global batch 128 on this machine, and the ceiling.
cd /work/main; export OMP_NUM_THREADS=1
G=build/bench/grad_sync; O=build/bench/overhead_train; L=build/runtime/launcher/accelerate; P=build/bench/overhead_train_migrated
echo "# $(date -u '+%F %T UTC') commit $(git rev-parse --short HEAD), $(getconf _NPROCESSORS_ONLN) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2 3; do
  echo "## round $r"
  echo "### grad_sync --spawn 1 --phases 1 --batch 128 --steps 300"; $G --spawn 1 --phases 1 --batch 128 --steps 300 2>&1 | grep -v '^\[W'
  echo "### grad_sync --spawn 1 --phases 1 --batch 64 --steps 300 (one process alone, half the batch)"; $G --spawn 1 --phases 1 --batch 64 --steps 300 2>&1 | grep -v '^\[W'
  echo "### grad_sync --spawn 2 --phases 1 --batch 64 --steps 300 (shared memory)"; $G --spawn 2 --phases 1 --batch 64 --steps 300 2>&1 | grep -v '^\[W'
  echo "### two independent: grad_sync --spawn 1 --phases 1 --batch 64 --steps 300, started together"; ($G --spawn 1 --phases 1 --batch 64 --steps 300 2>&1 | grep 'bench:' & $G --spawn 1 --phases 1 --batch 64 --steps 300 2>&1 | grep 'bench:' & wait)
  echo "### the migrated job: accelerate launch --split_batches, global batch 128, 200 steps: 1 process, 2 processes; original pair at 64"
  $L launch --cpu --num_processes 1 --split_batches --main_process_port 0 $P --steps 200 --warmup 5 --batch-size 128 2>&1 | grep bench:
  $L launch --cpu --num_processes 2 --split_batches --main_process_port 0 $P --steps 200 --warmup 5 --batch-size 128 2>&1 | grep bench:
  ($O --steps 200 --warmup 5 --batch-size 64 | grep bench: & $O --steps 200 --warmup 5 --batch-size 64 | grep bench: & wait)
done
echo "# end $(date -u '+%T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
