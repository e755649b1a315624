// A small regression network trained with Adam on a data set that is not a multiple of its
// batch (1001 samples in batches of 64, in order), launched with FSDP full sharding: the
// short last batch must count the same with sharded parameters and gradients as without.
#include <torch/torch.h>

#include <cstdio>

struct Rows : torch::data::datasets::Dataset<Rows> {
  Rows(torch::Tensor x, torch::Tensor y) : x(std::move(x)), y(std::move(y)) {}
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
  torch::Tensor x, y;
};

struct Net : torch::nn::Module {
  Net() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 24));
    fc2 = register_module("fc2", torch::nn::Linear(24, 24));
    fc3 = register_module("fc3", torch::nn::Linear(24, 1));
  }
  torch::Tensor forward(torch::Tensor x) {
    return fc3->forward(torch::relu(fc2->forward(torch::relu(fc1->forward(x)))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

int main() {
  torch::manual_seed(9);
  auto x = torch::randn({1001, 6});
  auto y = (x.pow(2).sum(1, true) - 6).tanh() + 0.05 * torch::randn({1001, 1});
  auto model = std::make_shared<Net>();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(3e-3));
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Rows(x, y).map(torch::data::transforms::Stack<>()), 64);
  for (int epoch = 0; epoch < 3; ++epoch)
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto loss = torch::mse_loss(model->forward(batch.data), batch.target);
      loss.backward();
      optimizer.step();
    }
  double weights = 0;
  {
    torch::NoGradGuard no_grad;
    weights = model->forward(x).sum().item<double>();  // a function of every parameter
  }
  std::printf("final: outputs=%.10g\n", weights);
}
