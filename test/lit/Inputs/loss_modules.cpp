// Evaluation sums through loss *modules* (real LibTorch headers: ModuleHolder's operator()
// reaches the module through a derived-to-base cast), a reduction configured where the
// module is declared, and a tensor accumulator summed along the batch dimension.
#include <torch/torch.h>

#include <cstdio>

struct Points : torch::data::datasets::Dataset<Points> {
  torch::data::Example<> get(size_t i) override {
    return {torch::full({2}, static_cast<double>(i)), torch::ones({1})};
  }
  torch::optional<size_t> size() const override { return 100; }
};

int main() {
  torch::nn::Linear net(2, 1);
  torch::nn::BCEWithLogitsLoss criterion;
  torch::nn::BCEWithLogitsLoss criterion_sum(
      torch::nn::BCEWithLogitsLossOptions().reduction(torch::kSum));
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Points().map(torch::data::transforms::Stack<>()), torch::data::DataLoaderOptions().batch_size(10));
  double sum_loss = 0, sum_forward = 0, mean_loss = 0;
  auto feature_sum = torch::zeros({2});
  for (auto& batch : *loader) {
    auto out = net->forward(batch.data);
    sum_loss += criterion_sum(out, batch.target).item<double>();
    sum_forward += criterion_sum->forward(out, batch.target).item<double>();
    mean_loss += criterion(out, batch.target).item<double>();
    feature_sum += batch.data.sum(0);
  }
  std::printf("final: %f %f %f %f\n", sum_loss, sum_forward, mean_loss, feature_sum[0].item<double>());
}
