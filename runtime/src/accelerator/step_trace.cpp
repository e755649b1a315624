#include "accelerator/step_trace.h"

// The line format, shared with the traced original (accel-migrate --trace-only), so that
// both hash and print a parameter alike. It uses xxHash inline (XXH_INLINE_ALL): this file
// is compiled alone, outside the unity build (runtime/CMakeLists.txt), so that no other
// runtime file's plain <xxhash.h> meets the inline one in one translation unit.
#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/trace.h>
#include <accelerate/log/logging.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace accelerate {
namespace detail {

StepTrace& StepTrace::of_process(int64_t rank, int64_t world_size) {
  static StepTrace trace(rank, world_size);
  return trace;
}

StepTrace::StepTrace(int64_t rank, int64_t world_size) : rank_(rank), world_size_(world_size) {
  const char* dir = std::getenv(env_names::kTrace);
  if (dir == nullptr || *dir == '\0') return;
  path_ = std::string(dir) + "/trace-rank" + std::to_string(rank) + ".jsonl";
  std::error_code ec;  // made if missing (`accelerate launch --trace DIR`); every process may try
  std::filesystem::create_directories(dir, ec);
  file_ = std::fopen(path_.c_str(), "w");
  if (file_ == nullptr) {  // the run goes on untraced; a reader then finds no trace and says so
    detail::runtime_log().error("cannot write the step trace " + path_ + ": " + std::strerror(errno),
                                LogScope::all_processes);
  }
}

StepTrace::~StepTrace() {
  if (file_ != nullptr) std::fclose(file_);
}

void StepTrace::on_backward(const torch::Tensor& loss) {
  if (!enabled()) return;
  losses_.push_back(trace_format::loss_value(loss));
}

bool StepTrace::wants_grads() const { return enabled() && trace_format::detail_step(step_ + 1); }

void StepTrace::on_local_grad(const torch::Tensor& param, const torch::Tensor& grad) {
  if (wants_grads()) local_grads_[param.unsafeGetTensorImpl()] = trace_format::gradient_entry(grad);
}

void StepTrace::on_backward_done(const std::vector<torch::Tensor>& params) {
  if (!wants_grads()) return;
  for (const auto& p : params) synced_grads_[p.unsafeGetTensorImpl()] = trace_format::gradient_entry(p.grad());
}

namespace {

// The recorded texts in the line's parameter order ("null" where one was not recorded);
// empty when nothing was recorded.
std::vector<std::string> in_order(const std::map<const void*, std::string>& recorded,
                                  const std::vector<torch::Tensor>& params) {
  std::vector<std::string> out;
  if (recorded.empty()) return out;
  for (const auto& p : params) {
    const auto found = recorded.find(p.unsafeGetTensorImpl());
    out.push_back(found == recorded.end() ? "null" : found->second);
  }
  return out;
}

}  // namespace

void StepTrace::on_step(const std::vector<torch::Tensor>& params, int64_t samples, int64_t padded, bool sharded) {
  if (!enabled()) return;
  trace_format::StepFacts facts;
  facts.rank = rank_;
  facts.world_size = world_size_;
  facts.step = ++step_;
  facts.samples = samples;
  facts.padded = padded;
  facts.sharded = sharded;
  // No local gradients where no synchronisation ran (1 process, FSDP's own reduction): the
  // reader then has only "grads".
  const trace_format::StepGradients grads{in_order(synced_grads_, params), in_order(local_grads_, params)};
  const std::string line = trace_format::step_line(facts, losses_, params, &grads);
  losses_.clear();
  local_grads_.clear();
  synced_grads_.clear();
  write_line(line);
}

uint64_t StepTrace::contents(const std::vector<torch::Tensor>& params) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const auto& p : params) {
    const torch::Tensor t = p.detach().to(torch::kCPU).contiguous();
    XXH3_64bits_update(state, t.data_ptr(), t.numel() * t.element_size());
  }
  const uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return hash;
}

// Flushed at every step: a run that dies still leaves the steps it took, which is where a
// reader looks first.
void StepTrace::write_line(const std::string& line) {
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    detail::runtime_log().error(
        "cannot write the step trace " + path_ + ": " + std::strerror(errno) + " (tracing stops)",
        LogScope::all_processes);
    std::fclose(file_);
    file_ = nullptr;
  }
}

}  // namespace detail
}  // namespace accelerate
