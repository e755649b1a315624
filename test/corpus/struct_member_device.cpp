// Corpus: device and friends as members of a plain struct, with an explicit GPU index.
// Idioms: struct member `torch::Device`, `torch::Device(torch::kCUDA, 0)`, ModuleHolder
//   model and optimizer as struct members, loader with spelled-out unique_ptr type,
//   NoGradGuard eval loop summing the loss over the dataset size, puts/printf logging.
// Expected: fully migratable.
#include <torch/torch.h>

#include <cstdio>
#include <memory>

struct Blobs : torch::data::datasets::Dataset<Blobs> {
  torch::Tensor x, y;
  explicit Blobs(int64_t n) : x(torch::randn({n, 3})), y((x.select(1, 0) > x.select(1, 1)).to(torch::kLong)) {}
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

using BlobLoader = torch::data::StatelessDataLoader<
    torch::data::datasets::MapDataset<Blobs, torch::data::transforms::Stack<torch::data::Example<>>>,
    torch::data::samplers::RandomSampler>;

struct Experiment {
  torch::Device device = torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0)
                                                     : torch::Device(torch::kCPU);
  torch::nn::Linear model{3, 2};
  torch::optim::SGD optimizer{model->parameters(), torch::optim::SGDOptions(0.2)};
  std::unique_ptr<BlobLoader> loader;
  size_t dataset_size = 0;
};

int main() {
  torch::manual_seed(5);
  Experiment exp;
  exp.model->to(exp.device);
  auto data = Blobs(400).map(torch::data::transforms::Stack<>());
  exp.dataset_size = data.size().value();
  exp.loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(data), torch::data::DataLoaderOptions().batch_size(20));

  puts("training");
  for (int epoch = 0; epoch < 5; ++epoch) {
    for (auto& batch : *exp.loader) {
      exp.optimizer.zero_grad();
      auto logits = exp.model(batch.data.to(exp.device));
      auto loss = torch::cross_entropy_loss(logits, batch.target.to(exp.device));
      loss.backward();
      exp.optimizer.step();
    }
    torch::NoGradGuard no_grad;
    double loss_sum = 0;
    for (auto& batch : *exp.loader) {
      auto logits = exp.model(batch.data.to(exp.device));
      loss_sum += torch::cross_entropy_loss(logits, batch.target.to(exp.device), {},
                                       torch::Reduction::Sum).item<double>();
    }
    printf("epoch %d mean loss %.5f\n", epoch, loss_sum / exp.dataset_size);
  }
  return 0;
}
