#!/bin/bash
# prints: seconds busy_fraction(0..2 cores)
prev=($(head -1 /proc/stat)); t0=$SECONDS
while sleep 5; do
  cur=($(head -1 /proc/stat))
  tot=0; for i in 1 2 3 4 5 6 7 8; do tot=$((tot + cur[i] - prev[i])); done
  idle=$(( (cur[4]-prev[4]) + (cur[5]-prev[5]) ))
  echo "$((SECONDS-t0)) $(awk -v t=$tot -v i=$idle 'BEGIN{printf "%.2f", 2*(t-i)/t}')"
  prev=("${cur[@]}")
done
