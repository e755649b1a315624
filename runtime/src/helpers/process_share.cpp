// process_share (<accelerate/process_share.h>).
#include <accelerate/helpers/process_share.h>

#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/data/data_split.h>

namespace accelerate {
namespace {

// An order control run (AcceleratorOptions::batch_order_control): the rows of this process's
// share in another order, as a prepared loader yields them; on 1 process the share is the
// whole batch, on N it is the N-process configuration's own control (verify's control-nN-*).
// The permutation is the batch's number (the backward passes so far), so the inputs and the
// targets of one step, shared one after the other before their backward pass, are permuted
// alike.
torch::Tensor order_controlled(Accelerator& accelerator, const torch::Tensor& batch) {
  const uint64_t seed = accelerator.options().batch_order_control().value_or(0);
  if (seed == 0 || batch.size(0) < 2) return batch;
  const auto number = static_cast<uint64_t>(detail::AcceleratorAccess::backward_calls(accelerator));
  const auto order = order_control_permutation(seed, number, static_cast<size_t>(batch.size(0)));
  std::vector<int64_t> index(order.begin(), order.end());
  return batch.index_select(0, torch::tensor(index, torch::kLong).to(batch.device()));
}

}  // namespace

torch::Tensor process_share(Accelerator& accelerator, const torch::Tensor& batch) {
  if (batch.dim() == 0) return batch;
  const int64_t n = batch.size(0);
  // One process keeps every row, and counts them too: the work report's 1-process samples
  // are what the N-process shares must add up to (scripts/verify/verdicts.py, judge_split).
  if (accelerator.num_processes() == 1) {
    detail::AcceleratorAccess::note_share(accelerator, n, 0, n);
    return order_controlled(accelerator, batch);
  }
  const auto [first, last] = accelerator.process_range(0, n);
  // The shares differ by one row when n is not a multiple of the processes, and a process
  // with no row gets a copy: the next backward pass weights the loss by the real rows, as
  // for a prepared loader's short last batch (docs/data-loader.md "Short last batches").
  const bool copied = first == last && n > 0;
  detail::AcceleratorAccess::note_share(accelerator, last - first, copied ? 1 : 0, n);
  if (copied) return batch.narrow(0, n - 1, 1);
  return order_controlled(accelerator, batch.narrow(0, first, last - first));
}

}  // namespace accelerate
