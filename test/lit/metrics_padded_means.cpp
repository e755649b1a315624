// Per-batch means summed over a prepared loader (#29 item 6): computed on this process's
// real samples and weighed by their count on a padded last batch (accelerate::real_mean),
// only where that is exact: the loss is read by the metrics alone, and every process runs
// the step (real_mean all-reduces on the padded batch). Otherwise left whole as before.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>
#include <iostream>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

template <typename Loader>
double evaluate(Net& model, Loader& loader) {
  double loss_sum = 0, batch_losses = 0, accuracies = 0, squares = 0;
  int64_t samples = 0;
  for (auto& batch : loader) {
    auto output = model->forward(batch.data);
    auto loss = torch::nll_loss(output, batch.target);
    // CHECK: auto loss = torch::nll_loss(accelerate::real_samples(accelerate::Accelerator::current(), output), accelerate::real_samples(accelerate::Accelerator::current(), batch.target));
    loss_sum += loss.template item<double>() * batch.target.size(0);
    // CHECK: loss_sum += accelerate::real_mean(accelerate::Accelerator::current(), loss.template item<double>(), output) * accelerate::real_samples(accelerate::Accelerator::current(), batch.target).size(0);
    // The same loss in a second metric: counted by the tensor its inputs came from.
    batch_losses += loss.template item<double>();
    // CHECK: batch_losses += accelerate::real_mean(accelerate::Accelerator::current(), loss.template item<double>(), output);
    accuracies += output.argmax(1).eq(batch.target).sum().template item<double>() / batch.target.size(0);
    // CHECK: accuracies += accelerate::real_mean(accelerate::Accelerator::current(), accelerate::real_samples(accelerate::Accelerator::current(), output).argmax(1).eq(accelerate::real_samples(accelerate::Accelerator::current(), batch.target)).sum().template item<double>() / accelerate::real_samples(accelerate::Accelerator::current(), batch.target).size(0), output);
    squares += output.mean().template item<double>();
    // CHECK: squares += accelerate::real_mean(accelerate::Accelerator::current(), accelerate::real_samples(accelerate::Accelerator::current(), output).mean().template item<double>(), output);
    samples += batch.target.size(0);
  }
  return loss_sum / samples + batch_losses + accuracies + squares;
}

int main() {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  auto loader = torch::data::make_data_loader(torch::data::datasets::MNIST("d"), 64);
  evaluate(model, *loader);
  // A loss the backward pass needs too: its inputs stay whole (the padded batch trains on
  // the repeats, as it does on N processes), so its mean is not weighed.
  double train_loss = 0;
  for (auto& batch : *loader) {
    auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
    // CHECK: auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
    train_loss += loss.item<double>() * batch.data.size(0);
    // CHECK: train_loss += loss.item<double>() * accelerate::real_samples(accelerator, batch.data).size(0);
    loss.backward();
    optimizer.step();
  }
  // A metric on some batches only: not every process would reach real_mean's all-reduce,
  // so the mean is left whole (its inputs too: a process without real samples would
  // otherwise add NaN).
  double sometimes = 0, printed = 0, derived = 0;
  int step = 0;
  for (auto& batch : *loader) {
    auto output = model->forward(batch.data);
    auto loss = torch::nll_loss(output, batch.target);
    // CHECK: auto loss = torch::nll_loss(output, batch.target);
    if (++step % 10 == 0)
      sometimes += loss.item<double>();
    // CHECK: sometimes += loss.item<double>();
    // Read by something else than the metrics: whole.
    auto shown = torch::nll_loss(output, batch.target);
    // CHECK: auto shown = torch::nll_loss(output, batch.target);
    std::cout << shown.item<double>() << '\n';
    printed += shown.item<double>();
    // CHECK: printed += shown.item<double>();
    // Made from another mean: whole.
    auto twice = torch::nll_loss(output, batch.target);
    auto half = twice.mean();
    derived += half.item<double>();
    // CHECK: derived += half.item<double>();
  }
  // CHECK: sometimes = accelerate::mean_across_processes(accelerator, sometimes);
  // CHECK-NEXT: printed = accelerate::mean_across_processes(accelerator, printed);
  // CHECK-NEXT: derived = accelerate::mean_across_processes(accelerator, derived);
  std::cout << sometimes << printed << derived << '\n';
  return 0;
}
