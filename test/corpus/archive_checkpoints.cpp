// Corpus: checkpointing and file output from the training loop.
// Idioms: std::filesystem::create_directories, torch::serialize::OutputArchive +
//   `model->save(archive)` + `archive.save_to(path)`, `torch::save(optimizer, ...)`,
//   a metrics CSV via std::ofstream, `puts` and `std::cout` logging, torch::load on resume
//   (loads stay on every process).
// Expected: fully migratable.
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

struct Pairs : torch::data::datasets::Dataset<Pairs> {
  torch::Tensor x = torch::randn({200, 3});
  torch::Tensor y = x.sum(1, true).sin();
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

int main(int argc, char** argv) {
  const std::string run_dir = argc > 1 ? argv[1] : "runs/archive_checkpoints";
  torch::manual_seed(8);
  torch::Device device(torch::kCUDA);
  if (!torch::cuda::is_available()) device = torch::Device(torch::kCPU);

  torch::nn::Sequential net(torch::nn::Linear(3, 16), torch::nn::Tanh(), torch::nn::Linear(16, 1));
  net->to(device);
  torch::optim::Adam optimizer(net->parameters(), 1e-2);

  const std::filesystem::path dir(run_dir);
  if (std::filesystem::exists(dir / "optimizer.pt")) {
    torch::serialize::InputArchive in;
    in.load_from((dir / "model.pt").string());
    net->load(in);
    torch::load(optimizer, (dir / "optimizer.pt").string());
    puts("resumed from checkpoint");
  }
  std::filesystem::create_directories(dir);
  std::ofstream metrics(dir / "metrics.csv");
  metrics << "epoch,loss\n";

  auto loader = torch::data::make_data_loader(Pairs().map(torch::data::transforms::Stack<>()), 20);
  for (int epoch = 0; epoch < 3; ++epoch) {
    double sum = 0;
    int count = 0;
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto loss = torch::l1_loss(net->forward(batch.data.to(device)), batch.target.to(device));
      loss.backward();
      optimizer.step();
      sum += loss.item<double>();
      ++count;
    }
    metrics << epoch << "," << sum / count << "\n";
    std::cout << "epoch " << epoch << " mean loss " << sum / count << std::endl;

    torch::serialize::OutputArchive archive;
    net->save(archive);
    archive.save_to((dir / "model.pt").string());
    torch::save(optimizer, (dir / "optimizer.pt").string());
  }
  puts("done");
  return 0;
}
