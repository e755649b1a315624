// A small GAN learning a 2-D Gaussian: a generator and a discriminator, one Adam optimizer
// each, three backward() calls per step (real, fake, generator), evaluation losses over
// the whole evaluation set, generated samples written to a CSV file.
//
// The latent codes come with the data (each example is a real point and its own latent
// code, both drawn once from the seed), so a run is reproducible whatever order or
// partition of the examples a loader produces.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

constexpr int64_t kLatent = 4;
constexpr double kRealMean[2] = {2.0, -1.0};
constexpr double kRealStd[2] = {0.5, 1.5};

struct Args {
  int epochs = 6;
  int batch_size = 64;
  int64_t train_size = 4096;
  int64_t eval_size = 1024;
  double lr = 1e-3;
  int num_samples = 256;
  uint64_t seed = 7;
  std::string out = "./out-gan";
};

static bool parse(int argc, char** argv, Args& a) try {
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (i + 1 >= argc) return false;
    std::string v = argv[i + 1];
    if (k == "--epochs") a.epochs = std::stoi(v);
    else if (k == "--batch-size") a.batch_size = std::stoi(v);
    else if (k == "--train-size") a.train_size = std::stoll(v);
    else if (k == "--eval-size") a.eval_size = std::stoll(v);
    else if (k == "--lr") a.lr = std::stod(v);
    else if (k == "--num-samples") a.num_samples = std::stoi(v);
    else if (k == "--seed") a.seed = std::stoull(v);
    else if (k == "--out") a.out = v;
    else return false;
  }
  return a.epochs > 0 && a.batch_size > 0 && a.train_size > 0 && a.eval_size > 0 &&
         a.num_samples >= 0;
} catch (const std::exception&) {  // std::stoi and friends on a value that is not a number
  return false;
}

// Pairs of (real point, latent code).
class RealAndLatent : public torch::data::datasets::Dataset<RealAndLatent> {
 public:
  explicit RealAndLatent(int64_t n) {
    auto mean = torch::tensor({kRealMean[0], kRealMean[1]}, torch::kFloat);
    auto std = torch::tensor({kRealStd[0], kRealStd[1]}, torch::kFloat);
    real_ = torch::randn({n, 2}) * std + mean;
    latent_ = torch::randn({n, kLatent});
  }
  torch::data::Example<> get(size_t i) override { return {real_[i], latent_[i]}; }
  torch::optional<size_t> size() const override { return real_.size(0); }

 private:
  torch::Tensor real_, latent_;
};

struct GeneratorImpl : torch::nn::Module {
  GeneratorImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(kLatent, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 32));
    out = register_module("out", torch::nn::Linear(32, 2));
  }
  torch::Tensor forward(torch::Tensor z) {
    z = torch::leaky_relu(fc1->forward(z), 0.2);
    z = torch::leaky_relu(fc2->forward(z), 0.2);
    return out->forward(z);
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, out{nullptr};
};
TORCH_MODULE(Generator);

int main(int argc, char** argv) {
  Args args;
  const bool help = argc == 2 && std::string(argv[1]) == "--help";
  if (help || !parse(argc, argv, args)) {
    (help ? std::cout : std::cerr)
        << "usage: gan [--epochs N] [--batch-size N] [--train-size N] [--eval-size N]"
           " [--lr X] [--num-samples N] [--seed N] [--out DIR]\n";
    return help ? 0 : 2;
  }
  torch::manual_seed(args.seed);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);

  Generator generator;
  torch::nn::Sequential discriminator(
      torch::nn::Linear(2, 32), torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Linear(32, 32), torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Linear(32, 1));
  generator->to(device);
  discriminator->to(device);

  torch::optim::Adam g_optimizer(
      generator->parameters(), torch::optim::AdamOptions(args.lr).betas(std::make_tuple(0.5, 0.999)));
  torch::optim::Adam d_optimizer(
      discriminator->parameters(), torch::optim::AdamOptions(args.lr).betas(std::make_tuple(0.5, 0.999)));

  auto train_set = RealAndLatent(args.train_size).map(torch::data::transforms::Stack<>());
  auto eval_set = RealAndLatent(args.eval_size).map(torch::data::transforms::Stack<>());
  const int64_t eval_size = static_cast<int64_t>(eval_set.size().value());
  auto loader = torch::data::make_data_loader(
      std::move(train_set), torch::data::DataLoaderOptions().batch_size(args.batch_size));
  auto eval_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(eval_set), torch::data::DataLoaderOptions().batch_size(256));

  torch::nn::BCEWithLogitsLoss criterion;
  torch::nn::BCEWithLogitsLoss criterion_sum(
      torch::nn::BCEWithLogitsLossOptions().reduction(torch::kSum));

  for (int epoch = 1; epoch <= args.epochs; ++epoch) {
    int64_t step = 0;
    for (auto& batch : *loader) {
      auto real = batch.data.to(device);
      auto z = batch.target.to(device);
      auto ones = torch::ones({real.size(0), 1}, device);
      auto zeros = torch::zeros({real.size(0), 1}, device);

      d_optimizer.zero_grad();
      auto d_real_loss = criterion(discriminator->forward(real), ones);
      d_real_loss.backward();
      auto fake = generator->forward(z);
      auto d_fake_loss = criterion(discriminator->forward(fake.detach()), zeros);
      d_fake_loss.backward();
      d_optimizer.step();

      g_optimizer.zero_grad();
      auto g_loss = criterion(discriminator->forward(fake), ones);
      g_loss.backward();
      g_optimizer.step();

      if (++step % 32 == 0) {
        std::printf("[%d/%d][%3lld] d_loss: %.4f g_loss: %.4f\n", epoch, args.epochs,
                    static_cast<long long>(step),
                    d_real_loss.item<float>() + d_fake_loss.item<float>(), g_loss.item<float>());
      }
    }
  }

  // Evaluation: both losses and the mean of the generated distribution, over every
  // evaluation example.
  torch::NoGradGuard no_grad;
  generator->eval();
  discriminator->eval();
  double d_loss_sum = 0, g_loss_sum = 0;
  auto generated_sum = torch::zeros({2}, device);
  for (auto& batch : *eval_loader) {
    auto real = batch.data.to(device);
    auto fake = generator->forward(batch.target.to(device));
    auto ones = torch::ones({real.size(0), 1}, device);
    auto zeros = torch::zeros({real.size(0), 1}, device);
    auto d_fake = discriminator->forward(fake);
    d_loss_sum += criterion_sum(discriminator->forward(real), ones).item<double>() +
                  criterion_sum(d_fake, zeros).item<double>();
    g_loss_sum += criterion_sum(d_fake, ones).item<double>();
    generated_sum += fake.sum(0);
  }
  auto generated_mean = (generated_sum / eval_size).cpu();
  const double mean_err =
      std::hypot(generated_mean[0].item<double>() - kRealMean[0],
                 generated_mean[1].item<double>() - kRealMean[1]);

  std::filesystem::create_directories(args.out);
  const std::filesystem::path out_dir(args.out);
  torch::save(generator, (out_dir / "generator.pt").string());
  torch::save(discriminator, (out_dir / "discriminator.pt").string());
  if (args.num_samples > 0) {
    auto samples = generator->forward(torch::randn({args.num_samples, kLatent}, device)).cpu();
    std::ofstream csv(out_dir / "samples.csv");
    csv << "x,y\n";
    for (int64_t i = 0; i < samples.size(0); ++i) {
      csv << samples[i][0].item<float>() << "," << samples[i][1].item<float>() << "\n";
    }
    std::cout << "wrote " << samples.size(0) << " samples to " << (out_dir / "samples.csv").string()
              << std::endl;
  }

  std::printf("final: d_loss=%.6f g_loss=%.6f mean_err=%.6f\n", d_loss_sum / eval_size,
              g_loss_sum / eval_size, mean_err);
  return 0;
}
