// The order control (AcceleratorOptions::batch_order_control, ACCELERATE_BATCH_ORDER_CONTROL)
// of batches a program cuts by hand: process_share on one process permutes the rows as a
// prepared loader permutes a batch's items (data_split_test.cpp, BatchOrderControl), so that
// `accelerate verify`'s controls also move hand-batched programs (issue 47: a hand-batched
// fidelity program's five controls all moved by 0, and its 5e-8 two-process gap failed).
#include <accelerate/accelerator/accelerator.h>
#include <accelerate/helpers/process_share.h>

#include <torch/torch.h>

#include <gtest/gtest.h>

namespace {

TEST(OrderControl, ProcessSharePermutesTheRowsOfOneStepAlike) {
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true).batch_order_control(7));
  const torch::Tensor x = torch::arange(10), y = torch::arange(10) * 3;
  const torch::Tensor px = accelerate::process_share(acc, x), py = accelerate::process_share(acc, y);
  EXPECT_FALSE(torch::equal(px, x)) << "the rows are permuted";
  EXPECT_TRUE(torch::equal(std::get<0>(px.sort()), x)) << "the same rows, each once";
  EXPECT_TRUE(torch::equal(py, px * 3)) << "inputs and targets of one step alike";
  // The next step (after a backward pass) draws another permutation.
  const torch::Tensor w = torch::ones({1}, torch::requires_grad());
  acc.backward((w * 2).sum());
  EXPECT_FALSE(torch::equal(accelerate::process_share(acc, x), px));
}

TEST(OrderControl, ProcessShareLeavesTheRowsWhenOff) {
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true));
  const torch::Tensor x = torch::arange(10);
  EXPECT_TRUE(torch::equal(accelerate::process_share(acc, x), x));
}

}  // namespace
