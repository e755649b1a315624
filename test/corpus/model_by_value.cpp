// Corpus: a plain torch::nn::Module subclass held by value (no ModuleHolder).
// Idioms: `Net net; net.to(device);`, `net.parameters()`, `net.forward(...)`, optimizer by
//   value with a raw `Adagrad`, `torch::Device device("cpu")` upgraded to CUDA by
//   assignment, `torch::save` of the parameters, eval() + NoGradGuard, std::cout.
// Expected: fully migratable.
#include <torch/torch.h>

#include <iostream>

class Net : public torch::nn::Module {
 public:
  Net() : conv_(torch::nn::Conv1dOptions(1, 4, 3)), fc_(4 * 14, 2) {
    register_module("conv", conv_);
    register_module("fc", fc_);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(conv_(x.unsqueeze(1)));
    return fc_(x.flatten(1));
  }

 private:
  torch::nn::Conv1d conv_;
  torch::nn::Linear fc_;
};

struct Series : torch::data::datasets::Dataset<Series> {
  torch::Tensor x, y;
  explicit Series(int64_t n) {
    y = torch::randint(2, {n}, torch::kLong);
    auto freq = 0.3 + 0.4 * y.to(torch::kFloat).unsqueeze(1);
    x = torch::sin(freq * torch::arange(16).to(torch::kFloat)) + 0.2 * torch::randn({n, 16});
  }
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

int main() {
  torch::manual_seed(23);
  torch::Device device("cpu");
  if (torch::cuda::is_available()) device = torch::Device("cuda:0");

  Net net;
  net.to(device);
  torch::optim::Adagrad optimizer(net.parameters(), torch::optim::AdagradOptions(0.05));

  auto train = torch::data::make_data_loader(Series(256).map(torch::data::transforms::Stack<>()), 32);
  auto test_set = Series(128).map(torch::data::transforms::Stack<>());
  const auto test_n = test_set.size().value();
  auto test = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(test_set), 64);

  for (int epoch = 0; epoch < 4; ++epoch) {
    net.train();
    for (auto& batch : *train) {
      optimizer.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net.forward(batch.data.to(device)), batch.target.to(device));
      loss.backward();
      optimizer.step();
    }
    net.eval();
    torch::NoGradGuard no_grad;
    int64_t hits = 0;
    for (auto& batch : *test) {
      hits += net.forward(batch.data.to(device)).argmax(1).eq(batch.target.to(device)).sum().item<int64_t>();
    }
    std::cout << "epoch " << epoch << " accuracy " << static_cast<double>(hits) / test_n << std::endl;
  }
  torch::save(net.parameters(), "model_by_value_params.pt");
}
