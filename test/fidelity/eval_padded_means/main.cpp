// Evaluation in the pytorch/examples manner, on test sets that do not fill their last batch:
// the sample mean of the loss (`loss.item() * data.size(0)`), the mean of the per-batch
// losses (`loss.item()` over the number of batches), the mean of per-batch accuracies, and
// sums of outputs. 50 samples in batches of 6: the last batch has 2 samples, so on 2
// processes with --split_batches one process holds no real sample of it.
#include <torch/torch.h>

#include <cstdio>

const int64_t kBatchSize = 6;

struct Blobs : torch::data::datasets::Dataset<Blobs> {
  Blobs(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    labels = torch::randint(0, 3, {n}, gen, torch::kLong);
    points = torch::one_hot(labels, 3).to(torch::kFloat) + 0.8 * torch::randn({n, 3}, gen);
  }
  torch::data::Example<> get(size_t index) override { return {points[index], labels[index]}; }
  torch::optional<size_t> size() const override { return points.size(0); }
  torch::Tensor points, labels;
};

struct Scores {
  double sample_mean, mean_of_means, mean_accuracy, output_sum, mean_square, tensor_mean;
};

template <typename Loader>
Scores evaluate(torch::nn::Linear& model, Loader& loader, int64_t samples) {
  torch::NoGradGuard no_grad;
  double loss_sum = 0, batch_losses = 0, batch_accuracies = 0, output_sum = 0, squares = 0;
  int64_t batches = 0;
  torch::Tensor loss_tensor = torch::zeros({});
  for (auto& batch : loader) {
    auto data = batch.data, targets = batch.target;
    auto output = model->forward(data);
    auto loss = torch::nn::functional::cross_entropy(output, targets);
    loss_sum += loss.template item<double>() * data.size(0);
    batch_losses += loss.template item<double>();
    auto pred = output.argmax(1);
    batch_accuracies += pred.eq(targets).sum().template item<double>() / targets.size(0);
    output_sum += output.sum().template item<double>();
    squares += output.pow(2).mean().template item<double>();
    loss_tensor += loss;
    batches += 1;
  }
  return {loss_sum / samples, batch_losses / batches, batch_accuracies / batches, output_sum,
          squares / batches, loss_tensor.template item<double>() / batches};
}

int main() {
  torch::manual_seed(7);
  torch::nn::Linear model(3, 3);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Blobs(96, 1).map(torch::data::transforms::Stack<>()), 8);
  for (int epoch = 0; epoch < 3; ++epoch)
    for (auto& batch : *train_loader) {
      optimizer.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(model->forward(batch.data), batch.target);
      loss.backward();
      optimizer.step();
    }

  std::string line = "final:";
  for (int64_t n : {50, 53, 48}) {
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        Blobs(n, static_cast<uint64_t>(n)).map(torch::data::transforms::Stack<>()), kBatchSize);
    Scores s = evaluate(model, *loader, n);
    char text[480];
    std::snprintf(text, sizeof text,
                  " loss%lld=%.10g batch_mean%lld=%.10g accuracy%lld=%.10g out_sum%lld=%.10g "
                  "square%lld=%.10g tensor_mean%lld=%.7g",
                  static_cast<long long>(n), s.sample_mean, static_cast<long long>(n),
                  s.mean_of_means, static_cast<long long>(n), s.mean_accuracy,
                  static_cast<long long>(n), s.output_sum, static_cast<long long>(n),
                  s.mean_square, static_cast<long long>(n), s.tensor_mean);
    line += text;
  }
  std::printf("%s\n", line.c_str());
}
