// Tutorial-collection style MNIST classifier: the images are 28x28 and flattened in the loop
// with the loader's batch size, as the C++ tutorials do (`images.view({batch_size, -1})`),
// hyper-parameters are constants, the data set is MNIST-like (synthetic, generated here so
// the program needs no files) and its size is not a multiple of the batch size.
#include <torch/torch.h>

#include <iomanip>
#include <iostream>

constexpr int64_t kTestBatchSize = 100;
constexpr int64_t kNumClasses = 10;

// Digits as noise plus a bright bar whose row is the label: learnable, but not at once.
class SyntheticMNIST : public torch::data::datasets::Dataset<SyntheticMNIST> {
 public:
  SyntheticMNIST(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    targets_ = torch::randint(0, kNumClasses, {n}, gen, torch::kLong);
    images_ = torch::rand({n, 1, 28, 28}, gen) * 0.8;
    for (int64_t i = 0; i < n; ++i) {
      int64_t row = 2 + 2 * targets_[i].item<int64_t>();
      images_[i][0][row] += 0.6;
    }
  }
  torch::data::Example<> get(size_t index) override { return {images_[index], targets_[index]}; }
  torch::optional<size_t> size() const override { return images_.size(0); }

 private:
  torch::Tensor images_, targets_;
};

struct NeuralNetImpl : torch::nn::Module {
  NeuralNetImpl(int64_t input_size, int64_t hidden_size, int64_t num_classes)
      : fc1(register_module("fc1", torch::nn::Linear(input_size, hidden_size))),
        fc2(register_module("fc2", torch::nn::Linear(hidden_size, num_classes))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2->forward(torch::relu(fc1->forward(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(NeuralNet);

int main() {
  std::cout << "MNIST feed-forward network\n";
  auto cuda_available = torch::cuda::is_available();
  torch::Device device(cuda_available ? torch::kCUDA : torch::kCPU);

  const int64_t input_size = 784;
  const int64_t hidden_size = 64;
  const int64_t batch_size = 64;
  const size_t num_epochs = 2;
  const double learning_rate = 0.05;

  torch::manual_seed(3);
  auto train_dataset = SyntheticMNIST(1000, 11).map(torch::data::transforms::Stack<>());
  auto num_train_samples = train_dataset.size().value();
  auto test_dataset = SyntheticMNIST(500, 12).map(torch::data::transforms::Stack<>());
  auto num_test_samples = test_dataset.size().value();

  // 1000 = 15 * 64 + 40: the short batch is dropped (the view below needs whole batches).
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(train_dataset), torch::data::DataLoaderOptions().batch_size(batch_size).drop_last(true));
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(test_dataset), kTestBatchSize);

  NeuralNet model(input_size, hidden_size, kNumClasses);
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(learning_rate));

  std::cout << std::fixed << std::setprecision(4);
  double train_loss = 0;
  for (size_t epoch = 0; epoch != num_epochs; ++epoch) {
    double running_loss = 0.0;
    size_t seen = 0;
    for (auto& batch : *train_loader) {
      auto data = batch.data.view({batch_size, -1}).to(device);
      auto target = batch.target.to(device);
      auto output = model->forward(data);
      auto loss = torch::nn::functional::cross_entropy(output, target);
      running_loss += loss.item<double>() * data.size(0);
      seen += data.size(0);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    }
    train_loss = running_loss / seen;
    std::cout << "Epoch [" << (epoch + 1) << "/" << num_epochs << "], Trainset - Loss: " << train_loss
              << " (" << seen << " of " << num_train_samples << " samples)\n";
  }

  model->eval();
  torch::NoGradGuard no_grad;
  double test_loss = 0.0;
  size_t num_correct = 0;
  for (const auto& batch : *test_loader) {
    auto images = batch.data.reshape({kTestBatchSize, input_size}).to(device);
    auto target = batch.target.to(device);
    auto output = model->forward(images);
    auto loss = torch::nn::functional::cross_entropy(output, target);
    test_loss += loss.item<double>() * images.size(0);
    // Scores of the true class, one row at a time, into a table of the batch's size.
    auto true_scores = torch::zeros({kTestBatchSize});
    for (int64_t i = 0; i < kTestBatchSize; ++i)
      true_scores[i] = output[i][target[i].item<int64_t>()];
    num_correct += (output.amax(1) == true_scores).sum().item<int64_t>();
  }
  test_loss /= num_test_samples;
  auto test_accuracy = static_cast<double>(num_correct) / num_test_samples;
  std::cout << "Testset - Loss: " << test_loss << ", Accuracy: " << test_accuracy << '\n';
  std::cout << std::setprecision(8) << "final: test_loss=" << test_loss << " train_loss=" << train_loss
            << " test_accuracy=" << test_accuracy << '\n';
}
