#!/bin/bash
# Issue 30: the runtime before the redesign (d94f10a) against after (HEAD), same benchmark
# program source of each commit (bench/grad_sync --phases 1: the MLP step through the
# runtime's prepared loader, prepare() and gradient sync), alternating order every round.
export OMP_NUM_THREADS=1
OLD=/work/wt-old/build; NEW=/work/main/build
echo "# $(date -u '+%F %T UTC') old=d94f10a new=$(git -C /work/main rev-parse --short HEAD) $(getconf _NPROCESSORS_ONLN) CPUs load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2 3 4 5; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for which in $order; do
    B=$OLD; [ $which = new ] && B=$NEW
    one=$($B/bench/grad_sync --spawn 1 --phases 1 --batch 128 --steps 300 2>&1 | grep -o 'bench: phases step_ms=[0-9.]*' | tail -1)
    two=$($B/bench/grad_sync --spawn 2 --phases 1 --batch 64 --steps 300 2>&1 | grep -o 'bench: phases step_ms=[0-9.]*' | tail -1)
    cnn=$($B/bench/grad_sync --spawn 2 --phases 1 --model 1 --batch 64 --steps 200 2>&1 | grep -o 'bench: phases step_ms=[0-9.]*' | tail -1)
    echo "round $r $which 1proc_b128 ${one#*step_ms=} 2proc_b64 ${two#*step_ms=} cnn_2proc_b64 ${cnn#*step_ms=}"
  done
done
echo "# end $(date -u '+%T UTC') load $(cut -d' ' -f1-3 /proc/loadavg)"
