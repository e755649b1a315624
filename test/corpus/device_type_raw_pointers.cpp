// Corpus: DeviceType variable, model and optimizer through raw pointers.
// Idioms: `torch::DeviceType device_type` set by an if/else chain, `torch::Device
//   device(device_type)`, raw `new`/`delete` model and optimizer, `model->to(device)`
//   through a raw pointer, RMSprop, InferenceMode evaluation, std::cout logging.
// Expected: fully migratable.
#include <torch/torch.h>

#include <iostream>

struct Regressor : torch::nn::Module {
  torch::nn::Linear a{nullptr}, b{nullptr};
  Regressor() {
    a = register_module("a", torch::nn::Linear(6, 24));
    b = register_module("b", torch::nn::Linear(24, 1));
  }
  torch::Tensor forward(torch::Tensor x) { return b(torch::tanh(a(x))); }
};

struct Table : torch::data::datasets::Dataset<Table> {
  torch::Tensor features = torch::rand({300, 6});
  torch::Tensor labels = features.pow(2).sum(1, /*keepdim=*/true);
  torch::data::Example<> get(size_t i) override { return {features[i], labels[i]}; }
  torch::optional<size_t> size() const override { return features.size(0); }
};

int main() {
  torch::manual_seed(11);
  torch::DeviceType device_type;
  if (torch::cuda::is_available()) {
    device_type = torch::kCUDA;
  } else {
    device_type = torch::kCPU;
  }
  torch::Device device(device_type);

  Regressor* model = new Regressor();
  model->to(device);
  torch::optim::Optimizer* optimizer =
      new torch::optim::RMSprop(model->parameters(), torch::optim::RMSpropOptions(1e-3));

  auto train_loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      Table().map(torch::data::transforms::Stack<>()), 25);
  auto eval_data = Table().map(torch::data::transforms::Stack<>());
  const auto eval_size = *eval_data.size();
  auto eval_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(eval_data), 100);

  for (int epoch = 1; epoch <= 3; ++epoch) {
    model->train();
    for (auto& batch : *train_loader) {
      optimizer->zero_grad();
      auto loss = torch::smooth_l1_loss(model->forward(batch.data.to(device)),
                                        batch.target.to(device));
      loss.backward();
      optimizer->step();
    }
    c10::InferenceMode inference;
    model->eval();
    double sse = 0;
    for (auto& batch : *eval_loader) {
      auto pred = model->forward(batch.data.to(device));
      sse += (pred - batch.target.to(device)).pow(2).sum().item<double>();
    }
    std::cout << "epoch " << epoch << " eval mse " << sse / eval_size << "\n";
  }

  delete optimizer;
  delete model;
  return 0;
}
