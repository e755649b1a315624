// The all-reduce kernel alone, in the shape of a 2-process MLP step (issue 51): two processes
// (fork) share two slots of 1.6 M floats (the MLP's gradients); each step every process writes
// its slot ("backward"), waits at a spinning barrier, reduces its half of both slots into both
// (the runtime's in-place scheme), waits again and reads its slot ("optimizer"). THRASH=MB
// reads and writes that many MB of other memory per step first, to evict the caches.
//   scheme 0: the same arithmetic written inline here (compiled with the command below)
//   scheme 5: libaccelerate's own accelerate::detail::shm_reduce (whichever build is loaded:
//             LD_LIBRARY_PATH picks the -O1 or the -O3 copy)
//   schemes 1, 2: other layouts, not used in the published figures
// clang++-16 -O2 -std=c++17 -mavx2 -isystem /usr/include/torch/csrc/api/include \
//   -I runtime/src kernel_twoproc.cpp -o two3 -L build/runtime -laccelerate -Wl,-rpath,build/runtime
// two processes, shared slots; each step: write own slot (like backward), barrier, reduce, barrier, read own slot (like optimizer)
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <algorithm>
#include <immintrin.h>
#include "shm/shm_reduce.h"
constexpr long N = 1600000;
struct Ctl { alignas(64) std::atomic<int> arrived; alignas(64) std::atomic<int> gen; };
static void barrier(Ctl* c) { int g = c->gen.load(); if (c->arrived.fetch_add(1) == 1) { c->arrived = 0; c->gen.fetch_add(1); } else while (c->gen.load() == g) _mm_pause(); }
using C = std::chrono::steady_clock;
int main(int argc, char** argv) {
  int scheme = atoi(argv[1]);
  size_t slot = N * 4;
  char* p = (char*)mmap(0, 2 * slot + 4096 + 2*slot, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0);
  Ctl* c = (Ctl*)p; float* s[2] = {(float*)(p + 4096), (float*)(p + 4096 + slot)};
  int me = fork() == 0 ? 1 : 0;
  float* priv = (float*)aligned_alloc(4096, slot); memset(priv, 0, slot);
  float* out = (float*)aligned_alloc(4096, slot); memset(out, 0, slot);
  double tred = 0, tall = 0, topt = 0; int it = 300; volatile float sink = 0;
  for (int step = 0; step < it + 20; ++step) {
    auto t0 = C::now();
    // "backward": compute into private buffer then write own slot
    float* mine = s[me];
    for (long i = 0; i < N; ++i) mine[i] = priv[i] * 0.5f + step;
    static char* junk = (char*)aligned_alloc(4096, 64 << 20);
    if (getenv("THRASH")) { size_t n = size_t(atoi(getenv("THRASH"))) << 20; long* j = (long*)junk; long acc = 0; for (size_t i = 0; i < n / 8; i += 8) { acc += j[i]; j[i] = acc; } sink = acc; }
    barrier(c);
    auto t1 = C::now();
    long lo = me * N / 2, hi = (me + 1) * N / 2;
    if (scheme == 5) {
      accelerate::detail::shm_reduce(c10::ScalarType::Float, accelerate::detail::ShmOp::Sum, {s[0] + lo, s[1] + lo}, {s[0] + lo, s[1] + lo}, hi - lo, 2.0);
    } else if (scheme == 0) {          // current: my half of both, write both
      constexpr long K = 2048; alignas(64) float acc[K];
      for (long b = lo; b < hi; b += K) { long m = std::min(K, hi - b);
        for (long i = 0; i < m; ++i) acc[i] = (s[0][b+i] + s[1][b+i]) / 2.0f;
        memcpy(s[0] + b, acc, m * 4); memcpy(s[1] + b, acc, m * 4); }
    } else if (scheme == 1) {   // read all of both, write own into a private out, barrier, copy into own slot
      for (long i = 0; i < N; ++i) out[i] = (s[0][i] + s[1][i]) / 2.0f;
    } else if (scheme == 2) {   // current with non-temporal stores to the other's slot
      constexpr long K = 2048; alignas(64) float acc[K];
      float* other = s[1 - me];
      for (long b = lo; b < hi; b += K) { long m = std::min(K, hi - b);
        for (long i = 0; i < m; ++i) acc[i] = (s[0][b+i] + s[1][b+i]) / 2.0f;
        memcpy(mine + b, acc, m * 4);
        for (long i = 0; i < m; i += 8) _mm256_stream_ps(other + b + i, _mm256_load_ps(acc + i)); }
      _mm_sfence();
    }
    barrier(c);
    if (scheme == 1) memcpy(mine, out, slot);
    auto t2 = C::now();
    float acc2 = 0; for (long i = 0; i < N; i += 16) acc2 += mine[i]; sink = acc2;  // "optimizer" reads own grads
    auto t3 = C::now();
    if (step >= 20) { tred += std::chrono::duration<double, std::milli>(t2 - t1).count();
      topt += std::chrono::duration<double, std::milli>(t3 - t2).count();
      tall += std::chrono::duration<double, std::milli>(t3 - t0).count(); }
  }
  printf("scheme %d rank %d: reduce %.3f ms, read-after %.3f ms, step %.3f ms\n", scheme, me, tred / it, topt / it, tall / it);
  if (me == 0) wait(nullptr);
}
