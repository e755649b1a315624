// Nonlinear regression with a ModuleHolder MLP (TORCH_MODULE) on a custom
// torch::data::Dataset, Adam with a StepLR schedule, evaluation MSE over the whole test
// split, and a checkpoint (model + optimizer) at the end.
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Config {
  int epochs = 8;
  int batch_size = 32;
  double lr = 3e-3;
  int lr_step = 3;
  double lr_gamma = 0.5;
  int64_t train_size = 2048;
  int64_t test_size = 512;
  int64_t features = 8;
  int64_t hidden = 64;
  int64_t layers = 1;  // hidden layers
  uint64_t seed = 42;
  std::string out_dir = "./out-regression";
};

Config parse_config(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help") {
      std::cout << "usage: regression [--epochs N] [--batch-size N] [--lr X] [--lr-step N]"
                   " [--lr-gamma X] [--train-size N] [--test-size N] [--hidden N] [--layers N] [--seed N]"
                   " [--out DIR]\n";
      std::exit(0);
    }
    if (i + 1 == argc) {
      std::cerr << "missing value for " << flag << "\n";
      std::exit(2);
    }
    const std::string value = argv[++i];
    try {
      if (flag == "--epochs") c.epochs = std::stoi(value);
      else if (flag == "--batch-size") c.batch_size = std::stoi(value);
      else if (flag == "--lr") c.lr = std::stod(value);
      else if (flag == "--lr-step") c.lr_step = std::stoi(value);
      else if (flag == "--lr-gamma") c.lr_gamma = std::stod(value);
      else if (flag == "--train-size") c.train_size = std::stoll(value);
      else if (flag == "--test-size") c.test_size = std::stoll(value);
      else if (flag == "--hidden") c.hidden = std::stoll(value);
      else if (flag == "--layers") c.layers = std::stoll(value);
      else if (flag == "--seed") c.seed = std::stoull(value);
      else if (flag == "--out") c.out_dir = value;
      else {
        std::cerr << "unknown option " << flag << " (try --help)\n";
        std::exit(2);
      }
    } catch (const std::logic_error&) {  // std::stoi and friends: not a number, out of range
      std::cerr << "bad value '" << value << "' for " << flag << "\n";
      std::exit(2);
    }
  }
  if (c.epochs < 1 || c.batch_size < 1 || c.lr_step < 1 || c.train_size < 1 || c.test_size < 1 || c.hidden < 1 ||
      c.layers < 1) {
    std::cerr << "epochs, batch size, lr step, split sizes, hidden width and layers must be positive\n";
    std::exit(2);
  }
  return c;
}

}  // namespace

// y = sin(x . w1) + 0.5 (x . w2)^2 + noise, with w1, w2 drawn once per seed, so both
// splits describe the same function.
class SyntheticRegression : public torch::data::datasets::Dataset<SyntheticRegression> {
 public:
  SyntheticRegression(torch::Tensor inputs, torch::Tensor targets)
      : inputs_(std::move(inputs)), targets_(std::move(targets)) {}

  static std::pair<SyntheticRegression, SyntheticRegression> make_splits(
      int64_t train_size, int64_t test_size, int64_t features) {
    auto w1 = torch::randn({features, 1}) / std::sqrt(static_cast<double>(features));
    auto w2 = torch::randn({features, 1}) / std::sqrt(static_cast<double>(features));
    auto make = [&](int64_t n) {
      auto x = torch::randn({n, features});
      auto y = torch::sin(x.matmul(w1) * 2) + 0.5 * x.matmul(w2).pow(2) +
               0.05 * torch::randn({n, 1});
      return SyntheticRegression(x, y);
    };
    auto train = make(train_size);
    auto test = make(test_size);
    return {train, test};
  }

  torch::data::Example<> get(size_t index) override {
    return {inputs_[index], targets_[index]};
  }

  torch::optional<size_t> size() const override { return inputs_.size(0); }

 private:
  torch::Tensor inputs_;
  torch::Tensor targets_;
};

struct RegressionNetImpl : torch::nn::Module {
  RegressionNetImpl(int64_t in_features, int64_t hidden, int64_t layers)
      : input(register_module("input", torch::nn::Linear(in_features, hidden))),
        hidden1(register_module("hidden1", torch::nn::Linear(hidden, hidden))),
        output(register_module("output", torch::nn::Linear(hidden, 1))) {
    for (int64_t i = 2; i <= layers; ++i) {
      more.push_back(register_module("hidden" + std::to_string(i), torch::nn::Linear(hidden, hidden)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::tanh(input(x));
    h = torch::tanh(hidden1(h));
    for (auto& layer : more) h = torch::tanh(layer(h));
    return output(h);
  }

  torch::nn::Linear input, hidden1, output;
  std::vector<torch::nn::Linear> more;  // hidden2 .. hiddenN (--layers N)
};
TORCH_MODULE(RegressionNet);

int main(int argc, char** argv) {
  const Config cfg = parse_config(argc, argv);
  torch::manual_seed(cfg.seed);

  const torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;

  auto splits = SyntheticRegression::make_splits(cfg.train_size, cfg.test_size, cfg.features);
  const auto test_size = splits.second.size().value();
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      splits.first.map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(cfg.batch_size));
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      splits.second.map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(256));

  RegressionNet net(cfg.features, cfg.hidden, cfg.layers);
  net->to(device);

  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(cfg.lr));
  torch::optim::StepLR scheduler(optimizer, cfg.lr_step, cfg.lr_gamma);

  double test_mse = 0.0;
  double train_loss = 0.0;
  for (int epoch = 0; epoch < cfg.epochs; ++epoch) {
    net->train();
    double loss_sum = 0.0;
    int64_t batches = 0;
    for (auto& batch : *train_loader) {
      auto x = batch.data.to(device);
      auto y = batch.target.to(device);
      optimizer.zero_grad();
      auto loss = torch::mse_loss(net(x), y);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      ++batches;
    }
    scheduler.step();
    train_loss = loss_sum / batches;

    net->eval();
    torch::NoGradGuard no_grad;
    double squared_error = 0.0;
    for (auto& batch : *test_loader) {
      auto prediction = net(batch.data.to(device));
      squared_error +=
          torch::mse_loss(prediction, batch.target.to(device), torch::Reduction::Sum)
              .item<double>();
    }
    test_mse = squared_error / test_size;
    std::cout << "epoch " << epoch + 1 << "/" << cfg.epochs << "  train_loss " << train_loss
              << "  test_mse " << test_mse << "  lr "
              << optimizer.param_groups()[0].options().get_lr() << std::endl;
  }

  std::filesystem::create_directories(cfg.out_dir);
  const std::filesystem::path out(cfg.out_dir);
  torch::save(net, (out / "regression_model.pt").string());
  torch::save(optimizer, (out / "regression_optimizer.pt").string());
  std::cout << "checkpoint written to " << out.string() << std::endl;

  std::printf("final: test_mse=%.6f\n", test_mse);
  return 0;
}
