// Tutorial-collection style: a feed-forward classifier on a synthetic two-moons-like data
// set wrapped in a custom torch::data::Dataset, hyper-parameters as constants at the top,
// device picked with the usual CUDA check, an evaluation pass under NoGradGuard.
#include <torch/torch.h>

#include <cmath>
#include <iomanip>
#include <iostream>

class Moons : public torch::data::datasets::Dataset<Moons> {
 public:
  explicit Moons(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    auto t = torch::rand({n}, gen) * M_PI;
    auto label = torch::randint(0, 2, {n}, gen, torch::kLong);
    auto x = torch::where(label == 0, torch::cos(t), 1 - torch::cos(t));
    auto y = torch::where(label == 0, torch::sin(t), 0.5 - torch::sin(t));
    features_ = torch::stack({x, y}, 1) + 0.1 * torch::randn({n, 2}, gen);
    labels_ = label;
  }
  torch::data::Example<> get(size_t i) override { return {features_[i], labels_[i]}; }
  torch::optional<size_t> size() const override { return features_.size(0); }

 private:
  torch::Tensor features_, labels_;
};

struct NeuralNetImpl : torch::nn::Module {
  NeuralNetImpl(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(NeuralNet);

int main() {
  std::cout << "Feed-forward network\n\n";
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  std::cout << (device.is_cuda() ? "Training on GPU." : "Training on CPU.") << '\n';

  const int64_t input_size = 2;
  const int64_t hidden_size = 32;
  const int64_t num_classes = 2;
  const int64_t batch_size = 64;
  const size_t num_epochs = 3;
  const double learning_rate = 0.05;

  torch::manual_seed(1);
  auto train_dataset = Moons(1024, 7).map(torch::data::transforms::Stack<>());
  auto num_train_samples = train_dataset.size().value();
  auto test_dataset = Moons(500, 8).map(torch::data::transforms::Stack<>());
  auto num_test_samples = test_dataset.size().value();

  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(train_dataset), batch_size);
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(test_dataset), batch_size);

  NeuralNet model(input_size, hidden_size, num_classes);
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(learning_rate));

  std::cout << std::fixed << std::setprecision(4);
  double train_loss = 0, train_accuracy = 0;
  for (size_t epoch = 0; epoch != num_epochs; ++epoch) {
    double running_loss = 0.0;
    size_t num_correct = 0;
    for (auto& batch : *train_loader) {
      auto data = batch.data.to(device);
      auto target = batch.target.to(device);
      auto output = model->forward(data);
      auto loss = torch::nn::functional::cross_entropy(output, target);
      running_loss += loss.item<double>() * data.size(0);
      auto prediction = output.argmax(1);
      num_correct += prediction.eq(target).sum().item<int64_t>();
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    }
    auto sample_mean_loss = running_loss / num_train_samples;
    auto accuracy = static_cast<double>(num_correct) / num_train_samples;
    std::cout << "Epoch [" << (epoch + 1) << "/" << num_epochs << "], Trainset - Loss: "
              << sample_mean_loss << ", Accuracy: " << accuracy << '\n';
    train_loss = sample_mean_loss;
    train_accuracy = accuracy;
  }

  model->eval();
  torch::NoGradGuard no_grad;
  size_t num_correct = 0;
  for (const auto& batch : *test_loader) {
    auto data = batch.data.to(device);
    auto target = batch.target.to(device);
    auto output = model->forward(data);
    auto prediction = output.argmax(1);
    num_correct += prediction.eq(target).sum().item<int64_t>();
  }
  auto test_accuracy = static_cast<double>(num_correct) / num_test_samples;
  double weight_sum = 0;
  for (const auto& p : model->parameters()) weight_sum += p.sum().item<double>();
  std::cout << "Testset - Accuracy: " << test_accuracy << '\n';
  std::cout << std::setprecision(6) << "final: test_accuracy=" << test_accuracy
            << " weight_sum=" << weight_sum << " train_loss=" << train_loss
            << " train_accuracy=" << train_accuracy << '\n';
}
