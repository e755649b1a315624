// Tutorial-collection style (constants at the top, train()/test() templates over the loader
// as in the classic MNIST example): a small MLP on synthetic 8x8 "glyphs". test() sums
// `loss.item() * batch size` and correct predictions, and counts kTestBatchSize per batch.
// The test set's loss sum covers a short last batch (padded on 2 processes).
#include <torch/torch.h>

#include <cstdio>
#include <iomanip>
#include <iostream>

const int64_t kTrainBatchSize = 64;
const int64_t kTestBatchSize = 100;
const int64_t kNumberOfEpochs = 4;
const int64_t kClasses = 4;

// Four noisy prototypes of 64 pixels: each sample is one of them plus noise.
struct Glyphs : torch::data::datasets::Dataset<Glyphs> {
  Glyphs(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    auto prototypes = torch::rand({kClasses, 64}, at::detail::createCPUGenerator(99));
    labels = torch::randint(0, kClasses, {n}, gen, torch::kLong);
    images = prototypes.index_select(0, labels) + 0.45 * torch::randn({n, 64}, gen);
  }
  torch::data::Example<> get(size_t index) override { return {images[index], labels[index]}; }
  torch::optional<size_t> size() const override { return images.size(0); }
  torch::Tensor images, labels;
};

struct NetImpl : torch::nn::Module {
  NetImpl() : fc1(64, 32), fc2(32, kClasses) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  torch::Tensor forward(torch::Tensor x) { return fc2->forward(torch::relu(fc1->forward(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Net);

template <typename DataLoader>
void train(size_t epoch, Net& model, torch::Device device, DataLoader& data_loader,
           torch::optim::Optimizer& optimizer) {
  model->train();
  for (auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model->forward(data);
    auto loss = torch::nn::functional::cross_entropy(output, targets);
    loss.backward();
    optimizer.step();
  }
  std::printf("Train Epoch: %zu done\n", epoch);
}

struct TestResult {
  double loss, accuracy, loss_sum;
};

template <typename DataLoader>
TestResult test(Net& model, torch::Device device, DataLoader& data_loader) {
  torch::NoGradGuard no_grad;
  model->eval();
  double running_loss = 0;
  int64_t correct = 0, total = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model->forward(data);
    auto loss = torch::nn::functional::cross_entropy(output, targets);
    running_loss += loss.template item<double>() * data.size(0);
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
    total += kTestBatchSize;
  }
  double accuracy = static_cast<double>(correct) / total;
  std::printf("Test set: Average loss: %.4f | Accuracy: %.4f\n", running_loss / total, accuracy);
  return {running_loss / total, accuracy, running_loss};
}

int main() {
  torch::manual_seed(1);
  torch::DeviceType device_type = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  torch::Device device(device_type);

  Net model;
  model->to(device);
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Glyphs(2048, 3).map(torch::data::transforms::Stack<>()), kTrainBatchSize);
  // 1000 validation samples (whole batches) and 1030 test samples (a short last batch).
  auto valid_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Glyphs(1000, 4).map(torch::data::transforms::Stack<>()), kTestBatchSize);
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Glyphs(1030, 5).map(torch::data::transforms::Stack<>()), kTestBatchSize);

  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.5));
  TestResult valid{};
  for (size_t epoch = 1; epoch <= kNumberOfEpochs; ++epoch) {
    train(epoch, model, device, *train_loader, optimizer);
    valid = test(model, device, *valid_loader);
  }
  auto held_out = test(model, device, *test_loader);
  std::cout << "final: valid_loss=" << valid.loss << " valid_accuracy=" << valid.accuracy
            << " test_accuracy=" << held_out.accuracy << std::setprecision(10)
            << " test_loss_sum=" << held_out.loss_sum << '\n';
}
