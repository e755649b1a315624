// Corpus: device as a function-local static behind an accessor, and as a file-static.
// Idioms: `static torch::Device` (function-local and file scope), shared_ptr model
//   (std::make_shared<NetImpl>), `(*model).to(device())`, Adam by value,
//   `.cuda()` on tensors behind a flag, std::cout logging.
// Expected: fully migratable.
#include <torch/torch.h>

#include <iostream>
#include <memory>

static const bool kUseCuda = torch::cuda::is_available();

static torch::Device& device() {
  static torch::Device dev = kUseCuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  return dev;
}

struct NetImpl : torch::nn::Module {
  NetImpl() : fc1(register_module("fc1", torch::nn::Linear(10, 32))),
              fc2(register_module("fc2", torch::nn::Linear(32, 1))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};

struct Rows : torch::data::datasets::Dataset<Rows> {
  torch::Tensor x = torch::randn({256, 10});
  torch::Tensor y = x.narrow(1, 0, 1) * 3 - 1;
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

int main() {
  torch::manual_seed(1);
  auto model = std::make_shared<NetImpl>();
  (*model).to(device());
  torch::optim::Adam optimizer(model->parameters(), 1e-2);

  auto loader = torch::data::make_data_loader(Rows().map(torch::data::transforms::Stack<>()),
                                              torch::data::DataLoaderOptions(16));
  for (int epoch = 0; epoch < 4; ++epoch) {
    double total = 0;
    for (auto& batch : *loader) {
      torch::Tensor x = batch.data, y = batch.target;
      if (kUseCuda) {
        x = x.cuda();
        y = y.cuda();
      }
      optimizer.zero_grad();
      auto loss = torch::mse_loss(model->forward(x), y);
      loss.backward();
      optimizer.step();
      total += loss.item<double>();
    }
    std::cout << "epoch " << epoch << " loss " << total << std::endl;
  }
  torch::save(model, "static_device_model.pt");
}
