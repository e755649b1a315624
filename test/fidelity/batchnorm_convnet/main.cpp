// A small convolutional classifier with batch normalisation, written as a user would: the
// layers are members set in the constructor, the head is a Sequential, and the data are
// 8x8 synthetic images whose class is the position of a bright bar. On 2 processes with
// --split_batches every batch norm must see the statistics of the whole batch, or the
// loss, the parameters and the running statistics drift away from the 1-process run.
#include <torch/torch.h>

#include <iomanip>
#include <iostream>

class Bars : public torch::data::datasets::Dataset<Bars> {
 public:
  Bars(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    labels_ = torch::randint(0, 3, {n}, gen, torch::kLong);
    images_ = torch::randn({n, 1, 8, 8}, gen) * 0.8 + 0.3;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = 1 + 3 * labels_[i].item<int64_t>();
      images_[i][0][row] += 2.0;
    }
  }
  torch::data::Example<> get(size_t i) override { return {images_[i], labels_[i]}; }
  torch::optional<size_t> size() const override { return images_.size(0); }

 private:
  torch::Tensor images_, labels_;
};

struct ConvNetImpl : torch::nn::Module {
  ConvNetImpl() {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 6, 3).padding(1)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(6));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 8, 3).stride(2)));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(8).momentum(0.2)));
    head = register_module("head", torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::BatchNorm1d(16),
                                                         torch::nn::ReLU(), torch::nn::Linear(16, 3)));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn1(conv1(x)));
    x = torch::relu(bn2(conv2(x)));
    x = x.mean({2, 3});
    return head->forward(x);
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential head{nullptr};
};
TORCH_MODULE(ConvNet);

int main() {
  torch::manual_seed(5);
  const int64_t batch_size = 32;
  auto train_set = Bars(256, 11).map(torch::data::transforms::Stack<>());
  const auto num_train = train_set.size().value();
  auto test_set = Bars(96, 12).map(torch::data::transforms::Stack<>());
  const auto num_test = test_set.size().value();
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(train_set), batch_size);
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(test_set), batch_size);

  ConvNet model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

  double train_loss = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    model->train();
    double running_loss = 0;
    for (auto& batch : *train_loader) {
      auto output = model->forward(batch.data);
      auto loss = torch::nn::functional::cross_entropy(output, batch.target);
      running_loss += loss.item<double>() * batch.data.size(0);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    }
    train_loss = running_loss / num_train;
    std::cout << "epoch " << epoch + 1 << " train loss " << train_loss << '\n';
  }

  model->eval();
  torch::NoGradGuard no_grad;
  double test_loss = 0;
  for (const auto& batch : *test_loader) {
    auto output = model->forward(batch.data);
    test_loss += torch::nn::functional::cross_entropy(output, batch.target).item<double>() * batch.data.size(0);
  }
  test_loss /= num_test;
  double param_sum = 0, stats_sum = 0;
  for (const auto& p : model->parameters()) param_sum += p.abs().sum().item<double>();
  for (const auto& b : model->named_buffers()) {
    if (b.key().find("running_") != std::string::npos) stats_sum += b.value().sum().item<double>();
  }
  std::cout << std::setprecision(9) << "final: train_loss=" << train_loss << " test_loss=" << test_loss
            << " param_sum=" << param_sum << " running_stats_sum=" << stats_sum << '\n';
}
