// Corpus (NOT safely migratable): custom device logic.
// Idioms: device index taken from an environment variable (`MY_GPU`), a model split over
//   two devices (pipeline/model parallel: `torch::Device(torch::kCUDA, 1)` for the second
//   half), activations moved between devices in forward(), a device string parsed from
//   the command line.
// Expected: the tool must not replace these devices with the accelerator's device; it
//   leaves them as they are and reports them with its rule id and an
//   `accel-migrate(...)` comment.
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <string>

struct TwoStage : torch::nn::Module {
  TwoStage(torch::Device first, torch::Device second) : first_(first), second_(second) {
    front = register_module("front", torch::nn::Linear(8, 64));
    back = register_module("back", torch::nn::Linear(64, 1));
    front->to(first_);
    back->to(second_);
  }
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::relu(front(x.to(first_)));
    return back(h.to(second_));
  }
  torch::Device first_, second_;
  torch::nn::Linear front{nullptr}, back{nullptr};
};

torch::Device pick_device(int argc, char** argv) {
  if (argc > 1) return torch::Device(std::string(argv[1]));  // e.g. "cuda:3"
  if (const char* gpu = std::getenv("MY_GPU"); gpu && torch::cuda::is_available()) {
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(std::atoi(gpu)));
  }
  return torch::Device(torch::kCPU);
}

int main(int argc, char** argv) {
  torch::manual_seed(37);
  const torch::Device primary = pick_device(argc, argv);
  const torch::Device secondary = torch::cuda::device_count() > 1
                                      ? torch::Device(torch::kCUDA, 1)
                                      : primary;
  TwoStage model(primary, secondary);
  torch::optim::SGD optimizer(model.parameters(), 0.01);

  auto x = torch::randn({128, 8});
  auto y = x.sum(1, true);
  for (int step = 0; step < 50; ++step) {
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model.forward(x), y.to(secondary));
    loss.backward();
    optimizer.step();
    if (step % 10 == 0) std::cout << "step " << step << " loss " << loss.item<float>() << "\n";
  }
  return 0;
}
