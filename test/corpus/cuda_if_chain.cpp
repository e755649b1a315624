// Corpus: an if/else-if chain over CUDA availability and device count, `.cuda()` calls.
// Idioms: `if (torch::cuda::is_available()) ... else if ... else` choosing a
//   `torch::Device` by index, `torch::cuda::device_count()`, `.cuda()` on input tensors,
//   hard-coded `torch::kCUDA` placement of a tensor, `batch.data = batch.data.to(device)`,
//   AdamW, printf logging.
// Expected: fully migratable.
#include <torch/torch.h>

#include <cstdio>

struct Waves : torch::data::datasets::Dataset<Waves> {
  torch::Tensor t = torch::linspace(0, 6.28, 360).unsqueeze(1);
  torch::data::Example<> get(size_t i) override { return {t[i], torch::sin(t[i])}; }
  torch::optional<size_t> size() const override { return t.size(0); }
};

int main() {
  torch::manual_seed(2);
  torch::Device device = torch::kCPU;
  bool on_gpu = false;
  if (torch::cuda::is_available() && torch::cuda::device_count() > 1) {
    device = torch::Device(torch::kCUDA, 1);
    on_gpu = true;
  } else if (torch::cuda::is_available()) {
    device = torch::Device(torch::kCUDA, 0);
    on_gpu = true;
  } else {
    std::printf("no GPU, using the CPU\n");
  }

  torch::nn::Sequential mlp(torch::nn::Linear(1, 32), torch::nn::Tanh(), torch::nn::Linear(32, 1));
  mlp->to(device);
  torch::optim::AdamW opt(mlp->parameters(), torch::optim::AdamWOptions(5e-3));
  auto scale = on_gpu ? torch::ones({1}).to(torch::kCUDA) : torch::ones({1});

  auto loader = torch::data::make_data_loader(Waves().map(torch::data::transforms::Stack<>()),
                                              torch::data::DataLoaderOptions().batch_size(30));
  for (int epoch = 0; epoch < 20; ++epoch) {
    float last = 0;
    for (auto& batch : *loader) {
      batch.data = batch.data.to(device);
      batch.target = batch.target.to(device);
      if (on_gpu) {
        batch.target = batch.target.cuda();
      }
      opt.zero_grad();
      auto loss = torch::mse_loss(mlp->forward(batch.data) * scale, batch.target);
      loss.backward();
      opt.step();
      last = loss.item<float>();
    }
    if (epoch % 5 == 0) std::printf("epoch %2d loss %.5f\n", epoch, last);
  }
  return 0;
}
