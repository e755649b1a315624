#!/usr/bin/env bash
# One-off diagnostic for the segfault in CudaRuntime.CheckpointRestoresTheCudaGenerator (2026-11-26).
set -x
P=$PWD/.gpu-prep; O=${1:?out}; T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
export LD_LIBRARY_PATH=$P/deps/usr/lib/x86_64-linux-gnu
( g++ -std=c++17 -O1 -g $P/diag/probe_rng.cpp -o /tmp/probe_rng -I$T/include -I$T/include/torch/csrc/api/include \
   -L$T/lib -Wl,--no-as-needed -ltorch -ltorch_cpu -ltorch_cuda -lc10 -lc10_cuda -Wl,-rpath,$T/lib > $O/probe_build.txt 2>&1 &&
  timeout 60 /tmp/probe_rng >> $O/probe_build.txt 2>&1; echo "probe rc $?" >> $O/probe_build.txt ) &
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DACCEL_BUILD_TOOL=OFF -DACCEL_BUILD_TIDY_MODULE=OFF \
  -DACCEL_USE_CCACHE=OFF -DACCEL_MIGRATED_DIR=$P/migrated "-DCMAKE_PREFIX_PATH=$T/share/cmake;$P/deps/usr" \
  "-DCMAKE_CXX_FLAGS=-g -idirafter $P/gloo/usr/include" -DCUDAToolkit_ROOT=/usr/local/cuda > $O/build.txt 2>&1
timeout 150 cmake --build /tmp/b -j 16 -- -k 0 >> $O/build.txt 2>&1; echo "build rc $?" >> $O/build.txt
wait
cd /tmp/b/test/unit && timeout 60 /usr/local/cuda/bin/cuda-gdb -batch -ex run -ex bt -ex 'info threads' \
  --args ./precision_tests --gtest_filter=CudaRuntime.Checkpoint* > $O/gdb.txt 2>&1; echo "gdb rc $?" >> $O/gdb.txt
cd /tmp/b && timeout 90 ctest -j 8 --timeout 60 --output-junit $O/ctest-junit.xml > $O/ctest.txt 2>&1
echo "ctest rc $?" >> $O/ctest.txt; tail -40 $O/ctest.txt; tail -30 $O/gdb.txt; cat $O/probe_build.txt | tail -12
