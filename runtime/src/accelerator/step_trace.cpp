#include "accelerator/step_trace.h"

#include <xxhash.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace accelerate {
namespace detail {
namespace {

// Doubles written so that they read back to the same bits (%.17g), as JSON numbers; a NaN
// or an infinity (a diverged run) as a JSON string, which a strict reader still parses.
std::string number(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// One parameter: elements, sum, L2 norm (both in double: a distance between runs can be
// computed, not only equality) and the xxh3-64 of its bytes (equality to the bit; the hash
// the checkpoints use, checkpoint_fs.h). Under FSDP the optimizer holds this process's shard.
std::string parameter(const torch::Tensor& p) {
  const torch::Tensor t = p.detach().to(torch::kCPU).contiguous();
  const torch::Tensor d = t.to(torch::kDouble);
  const auto hash = XXH3_64bits(t.data_ptr(), t.numel() * t.element_size());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return "{\"numel\": " + std::to_string(t.numel()) + ", \"sum\": " + number(d.sum().item<double>()) +
         ", \"norm\": " + number(d.norm().item<double>()) + ", \"xxh3\": \"" + hex + "\"}";
}

}  // namespace

StepTrace& StepTrace::of_process(int64_t rank, int64_t world_size) {
  static StepTrace trace(rank, world_size);
  return trace;
}

StepTrace::StepTrace(int64_t rank, int64_t world_size) : rank_(rank), world_size_(world_size) {
  const char* dir = std::getenv("ACCELERATE_TRACE");
  if (dir == nullptr || *dir == '\0') return;
  path_ = std::string(dir) + "/trace-rank" + std::to_string(rank) + ".jsonl";
  std::error_code ec;  // made if missing (`accelerate launch --trace DIR`); every process may try
  std::filesystem::create_directories(dir, ec);
  file_ = std::fopen(path_.c_str(), "w");
  if (file_ == nullptr) {  // the run goes on untraced; a reader then finds no trace and says so
    std::fprintf(stderr, "accelerate: process %lld: cannot write the step trace %s: %s\n", static_cast<long long>(rank),
                 path_.c_str(), std::strerror(errno));
  }
}

StepTrace::~StepTrace() {
  if (file_ != nullptr) std::fclose(file_);
}

void StepTrace::on_backward(const torch::Tensor& loss) {
  if (!enabled()) return;
  const torch::Tensor l = loss.detach().to(torch::kDouble);
  losses_.push_back(l.numel() == 1 ? l.item<double>() : l.sum().item<double>());
}

void StepTrace::on_step(const std::vector<torch::Tensor>& params, int64_t samples, int64_t padded, bool sharded) {
  if (!enabled()) return;
  ++step_;
  std::string line = "{\"rank\": " + std::to_string(rank_) + ", \"world_size\": " + std::to_string(world_size_) +
                     ", \"step\": " + std::to_string(step_) + ", \"samples\": " + std::to_string(samples) +
                     ", \"padded\": " + std::to_string(padded) + ", \"sharded\": " + (sharded ? "true" : "false") +
                     ", \"loss\": [";
  for (size_t i = 0; i < losses_.size(); ++i) line += (i ? ", " : "") + number(losses_[i]);
  line += "], \"params\": [";
  for (size_t i = 0; i < params.size(); ++i) line += (i ? ", " : "") + parameter(params[i]);
  losses_.clear();
  write_line(line + "]}\n");
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
    std::fprintf(stderr, "accelerate: process %lld: cannot write the step trace %s: %s (tracing stops)\n",
                 static_cast<long long>(rank_), path_.c_str(), std::strerror(errno));
    std::fclose(file_);
    file_ = nullptr;
  }
}

}  // namespace detail
}  // namespace accelerate
