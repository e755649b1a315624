#!/usr/bin/env bash
# One-off diagnostic 2 for the save_state segfault on the GPU machine (2026-11-26): who calls 0x0?
P=$PWD/.gpu-prep; O=${1:?out}; T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
export LD_LIBRARY_PATH=$P/deps/usr/lib/x86_64-linux-gnu
{ for f in $T/lib/*.so* /usr/lib/x86_64-linux-gnu/libxxhash*; do n=$(nm -D --defined-only $f 2>/dev/null | grep -c ' XXH'); [ "$n" != 0 ] && echo "$f exports $n XXH symbols: $(nm -D --defined-only $f | grep ' XXH3_64bits_update\| XXH3_createState\| XXH_versionNumber')"; done; } > $O/xxh.txt 2>&1
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DACCEL_BUILD_TOOL=OFF -DACCEL_BUILD_TIDY_MODULE=OFF \
  -DACCEL_USE_CCACHE=OFF -DACCEL_MIGRATED_DIR=$P/migrated "-DCMAKE_PREFIX_PATH=$T/share/cmake;$P/deps/usr" \
  "-DCMAKE_CXX_FLAGS=-g -idirafter $P/gloo/usr/include" -DCUDAToolkit_ROOT=/usr/local/cuda > $O/build.txt 2>&1
timeout 120 cmake --build /tmp/b -j 16 -- -k 0 precision_tests runtime_api_tests >> $O/build.txt 2>&1; echo "build rc $?" >> $O/build.txt
cd /tmp/b/test/unit
ldd ./precision_tests | grep -i "xxh\|torch_cpu\|accelerate" >> $O/xxh.txt
F=--gtest_filter=CudaRuntime.Checkpoint*
timeout 60 /usr/local/cuda/bin/cuda-gdb -batch -ex run -ex 'x/6gx $sp' -ex 'info symbol *(unsigned long*)$sp' \
  -ex 'info symbol *(unsigned long*)($sp+8)' -ex 'info symbol *(unsigned long*)($sp+16)' -ex 'info symbol *(unsigned long*)($sp+24)' \
  --args ./precision_tests $F > $O/gdb.txt 2>&1
for v in "" "LD_PRELOAD=$P/deps/usr/lib/x86_64-linux-gnu/libxxhash.so.0" "CUDA_VISIBLE_DEVICES="; do
  echo "=== env: $v" >> $O/runs.txt
  timeout 60 env $v ./precision_tests $F >> $O/runs.txt 2>&1; echo "rc $?" >> $O/runs.txt
  timeout 60 env $v ./runtime_api_tests --gtest_filter=ModelFile.* >> $O/runs.txt 2>&1; echo "rc $?" >> $O/runs.txt
done
cat $O/xxh.txt; grep -v "^warning: Cuda" $O/gdb.txt | tail -15; grep "===\|^rc\|OK \]\|FAILED \]" $O/runs.txt
