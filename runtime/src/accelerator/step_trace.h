#pragma once
// The step trace (ACCELERATE_TRACE, docs/runtime-api.md; issue 48, item 1): at every optimizer
// step this process takes through the Accelerator, one line of what the step did (its real
// samples, the losses passed to backward, a checksum and a norm of every parameter the
// optimizer holds), so that a reader can compare a migrated run with 1 or N processes step by
// step and say where two runs part, not only that their final numbers differ. Private to the
// accelerator room; one per process (a program may make more than one Accelerator).
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {

class StepTrace {
 public:
  // The process's trace: opened on the first call with ACCELERATE_TRACE naming a directory
  // (<dir>/trace-rank<rank>.jsonl, truncated), else disabled for the whole process: then
  // each hook below costs the one branch on enabled().
  static StepTrace& of_process(int64_t rank, int64_t world_size);
  ~StepTrace();
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;

  bool enabled() const { return file_ != nullptr; }
  // A backward pass since the last line: a step the program took after it is not traced yet.
  bool backward_pending() const { return !losses_.empty(); }
  // The loss as the program passed it to backward (before any weighting or scaling).
  void on_backward(const torch::Tensor& loss);
  // After optimizer.step(): the step's line. samples / padded: this process's real and
  // repeated samples since the previous step (the work report's counts, work_report.h);
  // sharded: the optimizer holds this process's FSDP shards (a reader combines the ranks'
  // lines instead of expecting equal replicas).
  // params: the optimizer's parameters in its groups' order (or a prepared model's, when the
  // program prepared no optimizer).
  void on_step(const std::vector<torch::Tensor>& params, int64_t samples, int64_t padded, bool sharded);
  // --detail: `grad`, this process's gradient of `param` just before the gradient
  // synchronisation (the bucket about to be all-reduced), recorded for the next step's line
  // when that step is detailed (trace_format::detail_step).
  void on_local_grad(const torch::Tensor& param, const torch::Tensor& grad);
  // --detail: at the end of a backward pass, the gradients of `params` as the optimizer will
  // step with them (synchronised), for the next step's line. Recorded here rather than at the
  // step because a program's own optimizer.step() is noticed only at the next backward pass,
  // after zero_grad() has cleared them.
  void on_backward_done(const std::vector<torch::Tensor>& params);
  // Whether the next step is detailed (tracing with ACCELERATE_TRACE_DETAIL covering it).
  bool wants_grads() const;
  // An xxh3-64 of the bytes of every tensor of `params`: a changed value means the
  // parameters were written since (a step the program took with optimizer.step() itself).
  // Not the tensors' version counters: LibTorch's optimizers may write through .data(),
  // which the counters do not see (SGD in LibTorch 1.13 does).
  static uint64_t contents(const std::vector<torch::Tensor>& params);

 private:
  StepTrace(int64_t rank, int64_t world_size);
  void write_line(const std::string& line);

  FILE* file_ = nullptr;
  std::string path_;
  int64_t rank_ = 0, world_size_ = 1, step_ = 0;
  std::vector<double> losses_;  // since the previous step
  // --detail: the gradients before synchronisation since the previous step, by parameter.
  std::map<const void*, std::string> local_grads_, synced_grads_;
};

}  // namespace detail
}  // namespace accelerate
