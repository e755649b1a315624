// Corpus: optimizer and scheduler behind std::unique_ptr, chosen at run time.
// Idioms: `std::unique_ptr<torch::optim::Optimizer>` from make_unique of SGD/Adam,
//   `std::unique_ptr<torch::optim::StepLR>` scheduler, `optimizer->step()`,
//   clip_grad_norm_, TORCH_CHECK on the loss, std::cout logging.
// Expected: fully migratable.
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <string>

struct Line : torch::data::datasets::Dataset<Line> {
  torch::Tensor x = torch::randn({256, 2});
  torch::Tensor y = x.matmul(torch::tensor({{1.5f}, {-2.0f}})) + 0.5;
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name,
                                                        std::vector<torch::Tensor> params) {
  if (name == "adam") {
    return std::make_unique<torch::optim::Adam>(std::move(params), torch::optim::AdamOptions(0.05));
  }
  return std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(0.05));
}

int main(int argc, char** argv) {
  torch::manual_seed(4);
  const std::string which = argc > 1 ? argv[1] : "sgd";
  auto device = torch::cuda::is_available() ? torch::Device("cuda") : torch::Device("cpu");

  torch::nn::Linear model(2, 1);
  model->to(device);
  std::unique_ptr<torch::optim::Optimizer> optimizer = make_optimizer(which, model->parameters());
  auto scheduler = std::make_unique<torch::optim::StepLR>(*optimizer, 3, 0.3);

  auto loader = torch::data::make_data_loader(
      Line().map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(16).drop_last(true));
  for (int epoch = 0; epoch < 6; ++epoch) {
    for (auto& batch : *loader) {
      optimizer->zero_grad();
      auto loss = torch::mse_loss(model(batch.data.to(device)), batch.target.to(device));
      TORCH_CHECK(std::isfinite(loss.item<double>()), "loss diverged at epoch ", epoch);
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 5.0);
      optimizer->step();
    }
    scheduler->step();
    std::cout << "epoch " << epoch << " weight " << model->weight.cpu() << std::endl;
  }
  return 0;
}
