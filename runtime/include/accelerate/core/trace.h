#pragma once
// The step trace's line format, and a trace for a program that does not use the Accelerator
// (issue 48 item 2). `accel-migrate --trace-only train.cpp -o train_traced.cpp` writes these
// calls into the ORIGINAL program and changes nothing else:
//
//   accelerate::trace::loss(loss).backward();                        // was loss.backward()
//   accelerate::trace::after_step(optimizer.step(), optimizer);       // was optimizer.step()
//
// With ACCELERATE_TRACE naming a directory the traced original writes
// <dir>/trace-rank0.jsonl, one line per optimizer step, as the runtime writes for a migrated
// program (docs/runtime-api.md, "The step trace"); without it every call only returns its
// argument. `accelerate verify --original` compares the two traces step by step.
//
// Header-only, so that the traced original links LibTorch and nothing of the runtime (no
// process group, no Accelerator; CMake: Accelerate::trace). The runtime's own trace
// (accelerator/step_trace.cpp) writes its lines with the same functions, so both hash and
// print a parameter alike. xxHash is used inline (XXH_INLINE_ALL): its header alone, no
// library to link.
#include <torch/torch.h>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#include <accelerate/core/detail/env_names.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace accelerate {
namespace trace_format {

// Doubles written so that they read back to the same bits (%.17g), as JSON numbers; a NaN
// or an infinity (a diverged run) as a JSON string, which a strict reader still parses.
inline std::string number(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// One parameter: elements, sum, L2 norm (both in double: a distance between runs can be
// computed, not only equality) and the xxh3-64 of its bytes (equality to the bit; the hash
// the checkpoints use). Under FSDP the optimizer holds this process's shard.
inline std::string parameter(const torch::Tensor& p) {
  const torch::Tensor t = p.detach().to(torch::kCPU).contiguous();
  const torch::Tensor d = t.to(torch::kDouble);
  const auto hash = XXH3_64bits(t.data_ptr(), t.numel() * t.element_size());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return "{\"numel\": " + std::to_string(t.numel()) + ", \"sum\": " + number(d.sum().item<double>()) +
         ", \"norm\": " + number(d.norm().item<double>()) + ", \"xxh3\": \"" + hex + "\"}";
}

// The loss as a number: a scalar's value, else the sum of its elements.
inline double loss_value(const torch::Tensor& loss) {
  const torch::Tensor l = loss.detach().to(torch::kDouble);
  return l.numel() == 1 ? l.item<double>() : l.sum().item<double>();
}

// One step's line (docs/runtime-api.md): samples / padded are the process's real and
// repeated samples since its previous step (0 where nothing counts them: a traced original).
struct StepFacts {
  int64_t rank = 0, world_size = 1, step = 0, samples = 0, padded = 0;
  bool sharded = false;
};

// `accelerate verify --detail` (ACCELERATE_TRACE_DETAIL=K, issue 48 item 4): steps 1..K
// also record every parameter's gradient as the optimizer stepped with it ("grads") and, on
// a process that synchronises gradients, as this process computed it before the
// synchronisation ("local_grads"), so that a reader can tell a forward/backward that already
// differed from a synchronisation that combined right gradients wrongly. "all": every step.
inline bool detail_step(int64_t step) {
  const char* v = std::getenv(env_names::kTraceDetail);
  if (v == nullptr || *v == '\0') return false;
  if (std::strcmp(v, "all") == 0) return true;
  return step <= std::strtoll(v, nullptr, 10);
}

// A gradient as a parameter is written, or null where it has none.
inline std::string gradient_entry(const torch::Tensor& g) { return g.defined() ? parameter(g) : "null"; }

// A detailed line's gradients, one gradient_entry() text per parameter in the line's order, as the
// runtime recorded them (empty: not recorded, the entry is left out).
struct StepGradients {
  std::vector<std::string> synced;  // at the end of the last backward pass before the step
  std::vector<std::string> local;   // this process's, just before the synchronisation
};

inline std::string text_list(const char* key, const std::vector<std::string>& items) {
  std::string text = std::string(", \"") + key + "\": [";
  for (size_t i = 0; i < items.size(); ++i) text += (i ? ", " : "") + items[i];
  return text + "]";
}

// The step's line. Without `grads` (a traced original, which steps right after its backward
// pass) a detailed step's gradients are read from the parameters now.
inline std::string step_line(const StepFacts& f, const std::vector<double>& losses,
                             const std::vector<torch::Tensor>& params, const StepGradients* grads = nullptr) {
  std::string line = "{\"rank\": " + std::to_string(f.rank) + ", \"world_size\": " + std::to_string(f.world_size) +
                     ", \"step\": " + std::to_string(f.step) + ", \"samples\": " + std::to_string(f.samples) +
                     ", \"padded\": " + std::to_string(f.padded) + ", \"sharded\": " + (f.sharded ? "true" : "false") +
                     ", \"loss\": [";
  for (size_t i = 0; i < losses.size(); ++i) line += (i ? ", " : "") + number(losses[i]);
  line += "], \"params\": [";
  for (size_t i = 0; i < params.size(); ++i) line += (i ? ", " : "") + parameter(params[i]);
  line += "]";
  if (detail_step(f.step)) {
    if (grads == nullptr) {
      std::vector<std::string> now;
      for (const auto& p : params) now.push_back(gradient_entry(p.grad()));
      line += text_list("grads", now);
    } else {
      if (!grads->synced.empty()) line += text_list("grads", grads->synced);
      if (!grads->local.empty()) line += text_list("local_grads", grads->local);
    }
  }
  return line + "}\n";
}

// An optimizer's parameters in its groups' order (what a line lists).
inline std::vector<torch::Tensor> optimizer_params(const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (const auto& group : optimizer.param_groups())
    for (const auto& p : group.params()) params.push_back(p);
  return params;
}

}  // namespace trace_format

namespace trace {
namespace detail {

// The traced original's trace: one per process, opened at the first call when
// ACCELERATE_TRACE names a directory (which must exist: `accelerate verify` makes it).
class OriginalTrace {
 public:
  static OriginalTrace& get() {
    static OriginalTrace trace;
    return trace;
  }
  bool enabled() const { return file_ != nullptr; }
  void loss(const torch::Tensor& l) {
    if (enabled()) losses_.push_back(trace_format::loss_value(l));
  }
  void step(const torch::optim::Optimizer& optimizer) {
    if (!enabled()) return;
    trace_format::StepFacts facts;
    facts.step = ++step_;
    const std::string line = trace_format::step_line(facts, losses_, trace_format::optimizer_params(optimizer));
    losses_.clear();
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
      std::fprintf(stderr, "accelerate: cannot write the step trace %s: %s (tracing stops)\n", path_.c_str(),
                   std::strerror(errno));
      std::fclose(file_);
      file_ = nullptr;
    }
  }
  ~OriginalTrace() {
    if (file_ != nullptr) std::fclose(file_);
  }
  OriginalTrace(const OriginalTrace&) = delete;
  OriginalTrace& operator=(const OriginalTrace&) = delete;

 private:
  OriginalTrace() {
    const char* dir = std::getenv(env_names::kTrace);
    if (dir == nullptr || *dir == '\0') return;
    path_ = std::string(dir) + "/trace-rank0.jsonl";
    file_ = std::fopen(path_.c_str(), "w");
    if (file_ == nullptr)  // the run goes on untraced; a reader then finds no trace and says so
      std::fprintf(stderr, "accelerate: cannot write the step trace %s: %s\n", path_.c_str(), std::strerror(errno));
  }
  FILE* file_ = nullptr;
  std::string path_;
  int64_t step_ = 0;
  std::vector<double> losses_;  // since the previous step
};

}  // namespace detail

// The loss about to be passed to backward, recorded for the next step's line; returns it,
// so that `loss.backward()` becomes `accelerate::trace::loss(loss).backward()`.
inline const torch::Tensor& loss(const torch::Tensor& l) {
  detail::OriginalTrace::get().loss(l);
  return l;
}

// After `optimizer.step()`: the step's line (the optimizer's parameters as the step left
// them). Takes the step's result so that the call wraps it: the optimizer is only named as
// the second argument (no evaluation), so its parameters are read after the step.
inline torch::Tensor after_step(torch::Tensor result, const torch::optim::Optimizer& optimizer) {
  detail::OriginalTrace::get().step(optimizer);
  return result;
}

}  // namespace trace
}  // namespace accelerate
