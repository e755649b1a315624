// Corpus: LibTorch calls inside macros.
// Idioms: `TORCH_CHECK(torch::cuda::is_available() || ...)`, `AT_ASSERT` around
//   expressions that use the model and the device, TORCH_CHECK with a message built
//   from the loss, a `LOG_STEP` user macro wrapping printf, `.to(device)` inside a macro
//   argument. The tool must not produce broken edits inside macro expansions.
// Expected: migratable outside the macros; edits inside macro arguments only where the
//   spelling is in the file.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#define LOG_STEP(step, loss) std::printf("step %d loss %.5f\n", (step), (loss))
#define MOVE_TO(t, dev) (t).to(dev)

struct Signal : torch::data::datasets::Dataset<Signal> {
  torch::Tensor x = torch::randn({160, 4});
  torch::Tensor y = x.abs().sum(1, true);
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

int main() {
  torch::manual_seed(13);
  const bool use_gpu = torch::cuda::is_available();
  torch::Device device = use_gpu ? torch::kCUDA : torch::kCPU;
  TORCH_CHECK(use_gpu || device.is_cpu(), "device selection is inconsistent");

  torch::nn::Linear model(4, 1);
  model->to(device);
  AT_ASSERT(model->weight.device() == device);
  torch::optim::SGD opt(model->parameters(), 0.02);

  auto loader = torch::data::make_data_loader(Signal().map(torch::data::transforms::Stack<>()), 16);
  int step = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (auto& batch : *loader) {
      auto x = MOVE_TO(batch.data, device);
      auto y = batch.target.to(device);
      opt.zero_grad();
      auto loss = torch::mse_loss(model(x), y);
      TORCH_CHECK(std::isfinite(loss.item<float>()), "non-finite loss ", loss.item<float>());
      loss.backward();
      opt.step();
      if (step++ % 10 == 0) LOG_STEP(step, loss.item<float>());
    }
  }
  AT_ASSERT(!torch::isnan(model->weight).any().item<bool>());
  return 0;
}
