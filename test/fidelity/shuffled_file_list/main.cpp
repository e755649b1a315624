// A personal project's data set: a list of sample files, shuffled once when the data set is
// made (std::mt19937 seeded from std::random_device, the way most C++ examples shuffle),
// then read in that order by a sequential loader. The model is trained with one optimizer
// step per epoch over gradients accumulated from every batch, so the trained weights do
// not depend on the order the shuffle drew; the last epoch's sum of sample ids says which
// samples were trained on (every id once: 0 + 1 + ... + (n - 1)).
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace {

const int64_t kSamples = 96;
const int64_t kBatchSize = 8;
const int kEpochs = 4;

// "File names" sample_000 ... sample_095; a sample's features and label follow from its id
// (what reading the file would give).
std::vector<std::string> list_files(int64_t n) {
  std::vector<std::string> files;
  for (int64_t i = 0; i < n; ++i) {
    std::string id = std::to_string(i);
    files.push_back("sample_" + std::string(3 - id.size(), '0') + id);
  }
  return files;
}

class FileDataset : public torch::data::datasets::Dataset<FileDataset> {
 public:
  explicit FileDataset(std::vector<std::string> files) : files_(std::move(files)) {
    std::mt19937 gen(std::random_device{}());
    std::shuffle(files_.begin(), files_.end(), gen);
  }

  // data: two features and the sample's id (exact in float); target: the class.
  torch::data::Example<> get(size_t index) override {
    const int64_t id = std::stoll(files_[index].substr(7));
    const double a = std::sin(0.37 * id), b = std::cos(0.11 * id * id);
    auto data = torch::tensor({static_cast<float>(a), static_cast<float>(b), static_cast<float>(id)});
    return {data, torch::tensor(static_cast<int64_t>(a + 0.5 * b > 0))};
  }
  torch::optional<size_t> size() const override { return files_.size(); }

 private:
  std::vector<std::string> files_;
};

struct NetImpl : torch::nn::Module {
  NetImpl() : fc1(register_module("fc1", torch::nn::Linear(2, 16))), fc2(register_module("fc2", torch::nn::Linear(16, 2))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Net);

}  // namespace

int main() {
  torch::manual_seed(3);
  auto dataset = FileDataset(list_files(kSamples)).map(torch::data::transforms::Stack<>());
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(dataset), kBatchSize);
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));

  int64_t id_sum = 0;
  double epoch_loss = 0;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    id_sum = 0;
    epoch_loss = 0;
    optimizer.zero_grad();
    for (auto& batch : *loader) {
      auto features = batch.data.slice(1, 0, 2);
      auto loss = torch::nn::functional::cross_entropy(model->forward(features), batch.target);
      // Summed over the batches: the epoch's gradient is the same for any order of them.
      loss.backward();
      epoch_loss += loss.item<double>();
      id_sum += batch.data.select(1, 2).sum().item<int64_t>();
    }
    optimizer.step();
    std::cout << "epoch " << epoch << " loss " << epoch_loss << " ids " << id_sum << '\n';
  }
  std::cout << std::setprecision(8) << "final: id_sum=" << id_sum << " loss=" << epoch_loss << '\n';
}
