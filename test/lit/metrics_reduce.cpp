// Sums of per-batch scalars over sharded loops, in training and in evaluation: reduced once
// after the loop (or at every step when the accumulator is read in the loop or outlives
// it), never gathered; a constant batch size next to a sum over samples counts real samples.
// RUN: %check-rule
// RUN: %accel-migrate %t.cpp -o %t2.cpp -- %stub-flags 2> %t2.err
// RUN: diff %t.cpp %t2.cpp
// RUN: FileCheck %s --check-prefix=AGAIN < %t2.err
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

#include <iostream>

const int64_t kTestBatchSize = 100;

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

double accuracy_of(const torch::Tensor& output, const torch::Tensor& target);

int main() {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  auto train_loader = torch::data::make_data_loader(torch::data::datasets::MNIST("d"), 64);
  auto test_loader = torch::data::make_data_loader(
      torch::data::datasets::MNIST("d", torch::data::datasets::MNIST::Mode::kTest), kTestBatchSize);

  double all_epochs_loss = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    double running_loss = 0.0;
    size_t num_correct = 0;
    for (auto& batch : *train_loader) {
      auto data = batch.data, target = batch.target;
      auto output = model->forward(data);
      auto loss = torch::cross_entropy_loss(output, target);
      running_loss += loss.item<double>() * data.size(0);
      // CHECK: running_loss += loss.item<double>() * accelerate::real_samples(accelerator, data).size(0);
      auto prediction = output.argmax(1);
      num_correct += prediction.eq(target).sum().item<int64_t>();
      // CHECK: num_correct += accelerate::real_samples(accelerator, prediction).eq(accelerate::real_samples(accelerator, target)).sum().item<int64_t>();
      // Never reset: it outlives the loop, so it is averaged at every step.
      all_epochs_loss += loss.item<double>();
      // CHECK: all_epochs_loss += accelerate::mean_across_processes(accelerator, loss.item<double>());
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    }
    // CHECK: running_loss = accelerate::sum_across_processes(accelerator, running_loss);
    // CHECK-NEXT: num_correct = accelerate::sum_across_processes(accelerator, num_correct);
    // CHECK-NOT: all_epochs_loss =
    std::cout << running_loss / 60000 << ' ' << num_correct << '\n';
  }

  {
    torch::NoGradGuard no_grad;
    int64_t correct = 0, total = 0;
    double loss_sum = 0;
    for (const auto& batch : *test_loader) {
      total += kTestBatchSize;
      // CHECK: // accel-migrate(accelerate-gather-metrics): counts the samples of each batch (kTestBatchSize is not the size of every batch on every process)
      // CHECK-NEXT: total += accelerate::real_samples(accelerator, batch.data).size(0);
      auto output = model->forward(batch.data);
      // Only the metrics read this loss: computed on the real samples (a process may hold
      // none of a padded batch: real_mean leaves its NaN out).
      auto loss = torch::cross_entropy_loss(output, batch.target);
      // CHECK: auto loss = torch::cross_entropy_loss(accelerate::real_samples(accelerator, output), accelerate::real_samples(accelerator, batch.target));
      loss_sum += loss.item<double>() * batch.data.size(0);
      // CHECK: loss_sum += accelerate::real_mean(accelerator, loss.item<double>(), output) * accelerate::real_samples(accelerator, batch.data).size(0);
      correct += output.argmax(1).eq(batch.target).sum().item<int64_t>();
      // CHECK: correct += accelerate::real_samples(accelerator, output).argmax(1).eq(accelerate::real_samples(accelerator, batch.target)).sum().item<int64_t>();
    }
    // CHECK: total = accelerate::sum_across_processes(accelerator, total);
    // CHECK-NEXT: loss_sum = accelerate::sum_across_processes(accelerator, loss_sum);
    // CHECK-NEXT: correct = accelerate::sum_across_processes(accelerator, correct);
    std::cout << static_cast<double>(correct) / total << ' ' << loss_sum / total << '\n';
  }

  {
    // Read inside the loop: reduced at every step, so the progress line is global too.
    double seen = 0;
    int64_t batches = 0;
    for (auto& batch : *test_loader) {
      seen += batch.target.size(0);
      // CHECK: seen += accelerate::sum_across_processes(accelerator, accelerate::real_samples(accelerator, batch.target).size(0));
      if (++batches % 10 == 0)
        std::cout << seen << '\n';
    }
    // A count of batches is the same on every process: left alone.
    int64_t steps = 0;
    for (auto& batch : *test_loader) {
      steps += 1;
      // CHECK: steps += 1;
    }
    // CHECK-NOT: steps = accelerate
  }

  {
    double acc = 0;
    for (auto& batch : *test_loader) {
      acc += accuracy_of(model->forward(batch.data), batch.target);
    }
    // CHECK: // accel-migrate(accelerate-gather-metrics): this value is summed over the batches of a sharded loop, but it is not recognised
    // CHECK-NEXT: acc += accuracy_of(model->forward(batch.data), batch.target);
    std::cout << acc << '\n';
  }
  return 0;
}
// DIAG: metrics_reduce.cpp:[[@LINE-8]]:7: warning: this value is summed over the batches of a sharded loop{{.*}} [accelerate-gather-metrics]
// DIAG-NOT: warning:
// AGAIN: already migrated or nothing to migrate
