cd /work/main
/tmp/exp/sample.sh > /tmp/exp/cpu.txt & S=$!
( t=$SECONDS; chrt --idle 0 nice -n 19 bash scripts/lint.sh build tidy > /tmp/exp/lint.log 2>&1; echo "lint rc=$? wall=$((SECONDS-t))" >> /tmp/exp/lint.log ) &
L=$!
t=$SECONDS
CCACHE_DISABLE=1 OMP_NUM_THREADS=1 LIT_OPTS="--show-unsupported --show-skipped --show-excluded" ctest --preset ci --timeout 900 > /tmp/exp/ctest.log 2>&1
echo "ctest rc=$? wall=$((SECONDS-t))" >> /tmp/exp/ctest.log
wait $L
kill $S
