// A training program in the style users write against LibTorch 2.x (real 2.x headers):
// device chosen among CUDA, MPS and CPU, a c10::Device parsed from a string, autocast by
// device type, an LRScheduler subclass, clip_grad_norm_ from torch::nn::utils.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>
#include <string>

class WarmupLR : public torch::optim::LRScheduler {
 public:
  WarmupLR(torch::optim::Optimizer& optimizer, unsigned warmup)
      : torch::optim::LRScheduler(optimizer), warmup_(warmup) {}

 private:
  std::vector<double> get_lrs() override {
    auto lrs = get_current_lrs();
    if (step_count_ < warmup_)
      for (auto& lr : lrs) lr *= static_cast<double>(step_count_ + 1) / warmup_;
    return lrs;
  }
  unsigned warmup_;
};

static torch::Device pick_device() {
  if (torch::cuda::is_available()) return torch::Device(torch::kCUDA);
  if (torch::mps::is_available()) return torch::Device(torch::kMPS);
  return torch::Device(torch::kCPU);
}

int main() {
  torch::Device device = pick_device();
  c10::Device eval_device(torch::cuda::is_available() ? "cuda:0" : "cpu");
  torch::nn::Sequential model(torch::nn::Linear(4, 8), torch::nn::ReLU(), torch::nn::Linear(8, 1));
  model->to(device);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));
  WarmupLR scheduler(optimizer, 5);
  auto x = torch::randn({64, 4}, device);
  auto y = x.sum(1, true);
  at::autocast::set_autocast_enabled(device.type(), true);
  for (int step = 0; step < 20; ++step) {
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();
    scheduler.step();
  }
  at::autocast::set_autocast_enabled(device.type(), false);
  model->to(eval_device);
  std::printf("final: loss=%f\n", torch::mse_loss(model->forward(x.to(eval_device)), y.to(eval_device)).item<float>());
}
