// Saving, file writes, directory creation and logging run on the main process only;
// loads stay on every process.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

double evaluate(Net& model);

void log_epoch(int epoch, double loss) {
  std::printf("epoch %d loss %f\n", epoch, loss);
  // CHECK: if (accelerate::Accelerator::current().is_main_process()) {
  // CHECK-NEXT: std::printf("epoch %d loss %f\n", epoch, loss);
  // CHECK-NEXT: }
}

int main() {
  Net model;
  torch::load(model, "init.pt");
  // CHECK: torch::load(model, "init.pt");
  std::filesystem::create_directories("out");
  torch::save(model, "out/model.pt");
  // CHECK: if (accelerator.is_main_process()) {
  // CHECK-NEXT: std::filesystem::create_directories("out");
  // CHECK-NEXT: torch::save(model, "out/model.pt");
  // CHECK-NEXT: }
  torch::serialize::OutputArchive archive;
  archive.save_to("out/archive.pt");
  // CHECK: if (accelerator.is_main_process()) {
  // CHECK-NEXT: archive.save_to("out/archive.pt");
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::cout << "epoch " << epoch
              << " done" << std::endl;
    // CHECK: if (accelerator.is_main_process()) {
    // CHECK-NEXT: std::cout << "epoch " << epoch
    // CHECK-NEXT: << " done" << std::endl;
    // CHECK-NEXT: }
    log_epoch(epoch, 0.5);
    // CHECK: log_epoch(epoch, 0.5);
    if (epoch == 1) std::puts("last");
    else std::puts("more");
    // CHECK: if (epoch == 1) { if (accelerator.is_main_process()) { std::puts("last"); } }
    // CHECK-NEXT: else { if (accelerator.is_main_process()) { std::puts("more"); } }
  }
  std::ofstream log("train.log", std::ios::app);
  // CHECK: std::ofstream log;
  // CHECK-NEXT: if (accelerator.is_main_process()) log.open("train.log", std::ios::app);
  log << "done\n";
  // CHECK: log << "done\n";
  std::ofstream checked("checked.txt");
  if (!checked) return 1;
  // CHECK: std::ofstream checked("checked.txt");
  std::cout << "accuracy " << evaluate(model) << std::endl;
  // CHECK: // accel-migrate(accelerate-main-process): this output statement also does work
  // CHECK-NEXT: std::cout << "accuracy " << evaluate(model) << std::endl;
  std::cerr << "errors stay on every process" << std::endl;
  // CHECK: std::cerr << "errors stay on every process" << std::endl;
  return 0;
}
// DIAG: main_process.cpp:[[@LINE-10]]:3: warning: this file is written by every process and its state is checked
// DIAG: main_process.cpp:[[@LINE-8]]:3: warning: this output statement also does work
