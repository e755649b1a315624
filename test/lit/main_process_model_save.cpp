// accelerate-main-process: a prepared model is saved by every process with
// accelerator.save(model, path): the runtime writes on the main process, and under FSDP
// full sharding gathers the other processes' shards first. An unprepared model, an
// optimizer, and a save already under a main-process test keep torch::save (guarded).
// RUN: %check-rule
#include <torch/torch.h>
#include <iostream>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

bool epoch_done();

int main() {
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  Net model, teacher;
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  for (int epoch = 0; epoch < 2; ++epoch) {
    // DIAG: main_process_model_save.cpp:[[@LINE-1]]:3: warning: this training loop does not iterate {{.*}} [accelerate-unprepared-loader]
    optimizer.zero_grad();
    auto loss = model->forward(torch::Tensor()).mean();
    loss.backward();
    optimizer.step();
    std::cout << "epoch " << epoch << "\n";
    torch::save(model, "model.pt");
    // CHECK: if (accelerator.is_main_process()) {
    // CHECK-NEXT: std::cout << "epoch " << epoch << "\n";
    // CHECK-NEXT: }
    // CHECK-NEXT: accelerator.save(model, "model.pt");
    torch::save(optimizer, "optimizer.pt");
    // CHECK-NEXT: if (accelerator.is_main_process()) {
    // CHECK-NEXT: torch::save(optimizer, "optimizer.pt");
  }
  torch::save(teacher, "teacher.pt");
  // CHECK: if (accelerator.is_main_process()) {
  // CHECK-NEXT: torch::save(teacher, "teacher.pt");
  if (epoch_done()) torch::save(model, "last.pt");
  // CHECK: if (epoch_done()) accelerator.save(model, "last.pt");
  return 0;
}
