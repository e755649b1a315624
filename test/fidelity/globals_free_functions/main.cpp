// One-file personal project: everything the helpers need is a global (the device, the model,
// its optimizer, the data tensors), so the free functions take no parameters; main only
// calls them in order.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <memory>

torch::Device device(torch::kCPU);
torch::nn::Sequential model{nullptr};
std::unique_ptr<torch::optim::Adam> optimizer;
torch::Tensor features, labels;

const int64_t kSamples = 600;
const int64_t kBatch = 40;
const int kEpochs = 3;

void make_data() {
  auto gen = at::detail::createCPUGenerator(11);
  features = torch::randn({kSamples, 4}, gen);
  auto score = features.select(1, 0) - features.select(1, 1) + 0.5 * features.select(1, 2);
  labels = (score > 0.6).to(torch::kLong) + (score > -0.6).to(torch::kLong);
}

void build_model() {
  torch::manual_seed(4);
  model = torch::nn::Sequential(torch::nn::Linear(4, 12), torch::nn::ReLU(),
                                torch::nn::Linear(12, 3));
  model->to(device);
  optimizer = std::make_unique<torch::optim::Adam>(model->parameters(),
                                                   torch::optim::AdamOptions(1e-2));
}

struct Points : torch::data::datasets::Dataset<Points> {
  torch::data::Example<> get(size_t i) override { return {features[i], labels[i]}; }
  torch::optional<size_t> size() const override { return features.size(0); }
};

template <typename Loader>
double train_epoch(Loader& loader) {
  model->train();
  double last = 0;
  for (auto& batch : loader) {
    auto x = batch.data.to(device), y = batch.target.to(device);
    optimizer->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    optimizer->step();
    last = loss.template item<double>();
  }
  return last;
}

double accuracy() {
  torch::NoGradGuard no_grad;
  model->eval();
  auto predicted = model->forward(features.to(device)).argmax(1);
  return predicted.eq(labels.to(device)).to(torch::kDouble).mean().item<double>();
}

void report(int epoch, double loss) { std::printf("epoch %d: last batch loss %.4f\n", epoch, loss); }

int main() {
  if (torch::cuda::is_available())
    device = torch::Device(torch::kCUDA);
  make_data();
  build_model();
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Points().map(torch::data::transforms::Stack<>()), kBatch);
  for (int epoch = 1; epoch <= kEpochs; ++epoch)
    report(epoch, train_epoch(*loader));
  double weight_sum = 0;
  for (const auto& p : model->parameters())
    weight_sum += p.sum().item<double>();
  double acc = accuracy();
  std::cout << "final: accuracy=" << acc << " weight_sum=" << weight_sum << std::endl;
}
