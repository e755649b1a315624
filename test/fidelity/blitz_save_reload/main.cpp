// "60-minute blitz" style: a small classifier trained on a synthetic data set, saved with
// torch::save, then a fresh model is made (`net = Net();`), loaded from the file and
// evaluated. Deterministic: a fixed seed, sequential sampling.
#include <torch/torch.h>

#include <iomanip>
#include <iostream>

class Blobs : public torch::data::datasets::Dataset<Blobs> {
 public:
  Blobs(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    labels_ = torch::randint(0, 3, {n}, gen, torch::kLong);
    auto centres = torch::tensor({{1.0, 0.0, 0.5, -0.5}, {-1.0, 0.5, 0.0, 0.5}, {0.0, -1.0, -0.5, 0.0}});
    features_ = centres.index_select(0, labels_) + 0.6 * torch::randn({n, 4}, gen);
  }
  torch::data::Example<> get(size_t i) override { return {features_[i], labels_[i]}; }
  torch::optional<size_t> size() const override { return features_.size(0); }

 private:
  torch::Tensor features_, labels_;
};

struct NetImpl : torch::nn::Module {
  NetImpl() : fc1(register_module("fc1", torch::nn::Linear(4, 16))), fc2(register_module("fc2", torch::nn::Linear(16, 3))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Net);

int main() {
  torch::manual_seed(0);
  const std::string PATH = "./blitz_net.pt";
  auto trainset = Blobs(384, 11).map(torch::data::transforms::Stack<>());
  auto testset = Blobs(128, 12).map(torch::data::transforms::Stack<>());
  auto num_test = testset.size().value();
  auto trainloader =
      torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(trainset), 32);
  auto testloader =
      torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(testset), 32);

  Net net;
  torch::nn::CrossEntropyLoss criterion;
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

  for (int epoch = 0; epoch < 4; ++epoch) {
    double running_loss = 0.0;
    for (auto& batch : *trainloader) {
      optimizer.zero_grad();
      auto outputs = net->forward(batch.data);
      auto loss = criterion(outputs, batch.target);
      loss.backward();
      optimizer.step();
      running_loss += loss.item<double>();
    }
    std::cout << "epoch " << epoch + 1 << " loss " << running_loss << '\n';
  }
  std::cout << "Finished Training\n";
  torch::save(net, PATH);

  net = Net();
  torch::load(net, PATH);

  torch::NoGradGuard no_grad;
  double test_loss = 0.0;
  int64_t correct = 0;
  for (auto& batch : *testloader) {
    auto outputs = net->forward(batch.data);
    test_loss += criterion(outputs, batch.target).item<double>() * batch.data.size(0);
    correct += outputs.argmax(1).eq(batch.target).sum().item<int64_t>();
  }
  double weight_sum = 0;
  for (const auto& p : net->parameters()) weight_sum += p.sum().item<double>();
  std::cout << std::setprecision(6) << "final: test_loss=" << test_loss / num_test
            << " test_accuracy=" << static_cast<double>(correct) / num_test << " weight_sum=" << weight_sum
            << '\n';
}
