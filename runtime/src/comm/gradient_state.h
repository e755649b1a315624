#pragma once
// Where gradient accumulation stands (Hugging Face's GradientState): how many backward
// passes make one optimizer step, whether this pass's gradients are communicated, and
// whether they are final for a step. The Accelerator owns one; its gradient
// synchronisation (GradSync, ShardedModel) asks communicate() at each backward pass.
#include <cstdint>
#include <functional>

namespace accelerate {
namespace detail {

class GradientState {
 public:
  explicit GradientState(int64_t accumulation_steps) : accumulation_steps_(accumulation_steps) {}
  GradientState(const GradientState&) = delete;  // communicate_flag() points into it
  GradientState& operator=(const GradientState&) = delete;

  int64_t accumulation_steps() const { return accumulation_steps_; }

  // False inside no_sync() and on accumulation steps: the gradients stay local.
  bool communicate() const { return communicate_; }
  void set_communicate(bool communicate) { communicate_ = communicate; }
  // What the gradient synchronisation of a prepared model asks; valid while this lives.
  std::function<bool()> communicate_flag() const {
    return [this] { return communicate_; };
  }

  // Whether the gradients are final for an optimizer step (the reference's sync_gradients).
  bool sync_gradients() const { return sync_gradients_; }
  void set_sync_gradients(bool sync) { sync_gradients_ = sync; }

  // accumulate(): one more call; its gradients are final every accumulation_steps() calls
  // and at the end of the data loader's epoch. Returns that (also sync_gradients()).
  bool begin_accumulation_step(bool end_of_dataloader) {
    ++calls_;
    sync_gradients_ = calls_ % accumulation_steps_ == 0 || end_of_dataloader;
    return sync_gradients_;
  }
  // The accumulate() calls so far: Accelerator::step(), saved and restored with the state.
  int64_t step() const { return calls_; }
  void restore_step(int64_t step) { calls_ = step; }

 private:
  int64_t accumulation_steps_;
  bool communicate_ = true;
  bool sync_gradients_ = true;
  int64_t calls_ = 0;
};

}  // namespace detail
}  // namespace accelerate
