// One-file regression experiment: everything lives at namespace scope so that train() and
// test() need no parameters. The loaders are made during static initialisation, before
// main: the random sampler of the training loader draws its first order there, and the
// model (declared after it) draws its initial weights after that, from the generator
// seeded before them.
#include <torch/torch.h>

#include <cstdio>
#include <memory>

namespace {

// A noisy linear target with a fixed generator, so the data do not depend on the order
// in which globals draw from the default generator.
struct Curve : torch::data::datasets::Dataset<Curve> {
  Curve(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    inputs = torch::rand({n, 3}, gen) * 4 - 2;
    auto noise = torch::randn({n, 1}, gen) * 0.1;
    targets = inputs.matmul(torch::tensor({{0.7}, {-1.2}, {0.4}})) + inputs.pow(2).sum(1, true) * 0.3 + noise;
  }
  torch::data::Example<> get(size_t i) override { return {inputs[i], targets[i]}; }
  torch::optional<size_t> size() const override { return inputs.size(0); }
  torch::Tensor inputs, targets;
};

struct Net : torch::nn::Module {
  Net() : hidden(register_module("hidden", torch::nn::Linear(3, 16))),
          out(register_module("out", torch::nn::Linear(16, 1))) {}
  torch::Tensor forward(torch::Tensor x) { return out(torch::tanh(hidden(x))); }
  torch::nn::Linear hidden, out;
};

}  // namespace

const int64_t kBatch = 24;
const int kEpochs = 4;

// LibTorch seeds its default generator from the system at start: seed it before the
// globals below draw from it (the model's initial weights, the sampler's first order).
int seed_everything(int seed) {
  torch::manual_seed(seed);
  return seed;
}
const int kSeed = seed_everything(7);

auto train_set = Curve(480, 5).map(torch::data::transforms::Stack<>());
auto test_set = Curve(120, 6).map(torch::data::transforms::Stack<>());

auto train_loader = torch::data::make_data_loader(
    std::move(train_set), torch::data::DataLoaderOptions().batch_size(kBatch));
std::unique_ptr<torch::data::StatelessDataLoader<decltype(test_set),
                                                 torch::data::samplers::SequentialSampler>>
    test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        test_set, 40);

auto model = std::make_shared<Net>();
torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

double train() {
  model->train();
  double last = 0;
  for (auto& batch : *train_loader) {
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model->forward(batch.data), batch.target);
    loss.backward();
    optimizer.step();
    last = loss.item<double>();
  }
  return last;
}

double test() {
  torch::NoGradGuard no_grad;
  model->eval();
  double sum = 0;
  int64_t count = 0;
  for (const auto& batch : *test_loader) {
    sum += torch::mse_loss(model->forward(batch.data), batch.target,
                           torch::Reduction::Sum).item<double>();
    count += batch.data.size(0);
  }
  return sum / count;
}

int main() {
  double train_loss = 0;
  for (int epoch = 1; epoch <= kEpochs; ++epoch) {
    train_loss = train();
    std::printf("epoch %d: train %.5f\n", epoch, train_loss);
  }
  double checksum = 0;
  for (const auto& p : model->parameters())
    checksum += p.abs().sum().item<double>();
  double test_loss = test();
  std::printf("final: test_loss=%.8f param_sum=%.8f\n", test_loss, checksum);
}
