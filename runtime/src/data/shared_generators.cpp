// Process 0's default generator states for every process (see shared_generators.h).
#include "data/shared_generators.h"

#include <ATen/Context.h>

#include <mutex>

namespace accelerate {
namespace detail {

void share_default_generators(const ProcessState& ps) {
  if (!ps.distributed()) return;
  CommScope scope;
  std::vector<at::Generator> generators{at::globalContext().defaultGenerator(c10::Device(c10::kCPU))};
  if (ps.device.is_cuda()) generators.push_back(at::globalContext().defaultGenerator(ps.device));
  // States are byte tensors on the CPU; they travel on the process group's device (NCCL
  // sends only CUDA tensors).
  std::vector<torch::Tensor> states;
  for (auto& gen : generators) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    states.push_back(gen.get_state().to(ps.device));
  }
  broadcast_tensors(ps, states, 0, "broadcast of the default random generators' state from process 0");
  for (size_t i = 0; i < generators.size(); ++i) {
    std::lock_guard<std::mutex> lock(generators[i].mutex());
    generators[i].set_state(states[i].cpu());
  }
}

}  // namespace detail
}  // namespace accelerate
