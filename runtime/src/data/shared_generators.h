#pragma once
// LibTorch seeds its default generators from a non-deterministic source in every process,
// so an unseeded program that draws its problem (a random target, synthetic data,
// torch::randn before training) would get a different problem in each process. The
// Accelerator gives every process process 0's generator states once, when the process
// group is made: what the program draws is then what one process would draw.
// set_seed(seed, /*device_specific=*/true) remains the way to get per-process streams.

#include <accelerate/comm/detail/process_state.h>

namespace accelerate {
namespace detail {

// Collective: overwrites this process's default CPU generator (and the CUDA generator of
// its device, when it runs on one) with process 0's state.
void share_default_generators(const ProcessState& ps);

}  // namespace detail
}  // namespace accelerate
