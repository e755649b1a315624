#pragma once
// Batch normalisation over the global batch: accelerate::nn::SyncBatchNorm1d/2d/3d.
//
// On N processes a torch::nn::BatchNorm2d normalises each process's share of the batch with
// that share's statistics, so the outputs, the gradients and the running statistics differ
// from the same training on one process. These modules compute the batch statistics over the
// batches of all processes (every process gets the same mean and variance, and updates its
// running statistics with them) and all-reduce the statistics of the gradient in backward.
//
// Each Impl derives from LibTorch's own (BatchNorm2dImpl, ...): the options, the members
// (weight, bias, running_mean, running_var, num_batches_tracked) and the state-dict names are
// the torch module's, so a checkpoint saved by either loads into the other. In evaluation
// mode, and whenever fewer than two processes run (or no Accelerator exists), forward() is
// LibTorch's own, bit for bit. docs/runtime-api.md (SyncBatchNorm) has the details.

#include <torch/torch.h>

#include <ostream>
#include <string>

namespace accelerate {
namespace nn {
namespace detail {

// The members of a batch-norm module that the synchronised forward reads and updates.
struct BatchNormState {
  const torch::nn::BatchNormOptions& options;
  torch::Tensor& weight;
  torch::Tensor& bias;
  torch::Tensor& running_mean;
  torch::Tensor& running_var;
  torch::Tensor& num_batches_tracked;
};

// True when a training-mode forward must synchronise: an Accelerator exists and runs on
// more than one process.
bool sync_batch_norm_needed();
// The training-mode forward over the global batch (collective: every process calls it for
// the same layers in the same order, as data-parallel training does).
torch::Tensor sync_batch_norm_forward(const BatchNormState& state, const torch::Tensor& input);
// "NAME(num_features, eps=..., momentum=..., affine=..., track_running_stats=...)", as LibTorch prints its own.
void print_batch_norm(std::ostream& stream, const std::string& name, const torch::nn::BatchNormOptions& options);

}  // namespace detail

// Base: torch::nn::BatchNorm{1,2,3}dImpl; Self: the final class (for clone()); D: 1, 2, 3.
template <typename Base, typename Self, int D>
class SyncBatchNormImplBase : public Base {
 public:
  using Base::Base;  // the torch module's constructors: BatchNormOptions or num_features

  torch::Tensor forward(const torch::Tensor& input) {
    if (!this->is_training() || !detail::sync_batch_norm_needed()) return Base::forward(input);
    this->_check_input_dim(input);
    return detail::sync_batch_norm_forward(
        {this->options, this->weight, this->bias, this->running_mean, this->running_var, this->num_batches_tracked},
        input);
  }

  // torch::nn::Cloneable<BatchNorm2dImpl> would clone into a plain BatchNorm2dImpl: keep the type.
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override {
    torch::NoGradGuard no_grad;
    auto copy = std::make_shared<Self>(this->options);
    const auto copy_into = [&](torch::OrderedDict<std::string, torch::Tensor> from,
                               torch::OrderedDict<std::string, torch::Tensor> to) {
      for (const auto& item : from) {
        auto& target = to[item.key()];
        if (!item.value().defined()) continue;
        target.set_data(device ? item.value().to(*device).clone() : item.value().clone());
      }
    };
    copy_into(this->named_parameters(false), copy->named_parameters(false));
    copy_into(this->named_buffers(false), copy->named_buffers(false));
    copy->train(this->is_training());
    return copy;
  }

  void pretty_print(std::ostream& stream) const override {
    detail::print_batch_norm(stream, "accelerate::nn::SyncBatchNorm" + std::to_string(D) + "d", this->options);
  }
};

class SyncBatchNorm1dImpl : public SyncBatchNormImplBase<torch::nn::BatchNorm1dImpl, SyncBatchNorm1dImpl, 1> {
 public:
  using SyncBatchNormImplBase::SyncBatchNormImplBase;
};
class SyncBatchNorm2dImpl : public SyncBatchNormImplBase<torch::nn::BatchNorm2dImpl, SyncBatchNorm2dImpl, 2> {
 public:
  using SyncBatchNormImplBase::SyncBatchNormImplBase;
};
class SyncBatchNorm3dImpl : public SyncBatchNormImplBase<torch::nn::BatchNorm3dImpl, SyncBatchNorm3dImpl, 3> {
 public:
  using SyncBatchNormImplBase::SyncBatchNormImplBase;
};

TORCH_MODULE(SyncBatchNorm1d);
TORCH_MODULE(SyncBatchNorm2d);
TORCH_MODULE(SyncBatchNorm3d);

}  // namespace nn
}  // namespace accelerate
