// Corpus: an autoencoder plus a classifier head: several models, several optimizers,
// one LR scheduler per optimizer, two backward() calls per step.
// Idioms: three ModuleHolder models, two optimizers by value (SGD, Adam), two StepLR
//   schedulers, `loss.backward()` twice per step (reconstruction then classification),
//   eval() + NoGradGuard accuracy, torch::save of each model, std::cout logging.
// Expected: fully migratable.
#include <torch/torch.h>

#include <iostream>

struct Digits : torch::data::datasets::Dataset<Digits> {
  torch::Tensor x, y;
  explicit Digits(int64_t n) {
    y = torch::randint(4, {n}, torch::kLong);
    x = torch::one_hot(y, 4).to(torch::kFloat).repeat({1, 4}) + 0.3 * torch::randn({n, 16});
  }
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

int main() {
  torch::manual_seed(9);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);

  torch::nn::Linear encoder(16, 4);
  torch::nn::Linear decoder(4, 16);
  torch::nn::Linear head(4, 4);
  encoder->to(device);
  decoder->to(device);
  head->to(device);

  std::vector<torch::Tensor> ae_params = encoder->parameters();
  for (auto& p : decoder->parameters()) ae_params.push_back(p);
  torch::optim::SGD ae_opt(ae_params, torch::optim::SGDOptions(0.05).momentum(0.9));
  torch::optim::Adam head_opt(head->parameters(), torch::optim::AdamOptions(1e-2));
  torch::optim::StepLR ae_sched(ae_opt, /*step_size=*/2, /*gamma=*/0.5);
  torch::optim::StepLR head_sched(head_opt, /*step_size=*/2, /*gamma=*/0.5);

  auto train_data = Digits(512).map(torch::data::transforms::Stack<>());
  auto test_data = Digits(256).map(torch::data::transforms::Stack<>());
  const auto test_size = test_data.size().value();
  auto train_loader = torch::data::make_data_loader(std::move(train_data), 32);
  auto test_loader = torch::data::make_data_loader(std::move(test_data), 64);

  for (int epoch = 0; epoch < 4; ++epoch) {
    for (auto& batch : *train_loader) {
      auto x = batch.data.to(device);
      auto y = batch.target.to(device);
      ae_opt.zero_grad();
      head_opt.zero_grad();
      auto code = encoder(x);
      auto recon_loss = torch::mse_loss(decoder(code), x);
      recon_loss.backward({}, /*retain_graph=*/true);
      auto cls_loss = torch::cross_entropy_loss(head(code.detach()), y);
      cls_loss.backward();
      ae_opt.step();
      head_opt.step();
    }
    ae_sched.step();
    head_sched.step();

    encoder->eval();
    head->eval();
    torch::NoGradGuard no_grad;
    int64_t correct = 0;
    for (auto& batch : *test_loader) {
      auto pred = head(encoder(batch.data.to(device))).argmax(1);
      correct += pred.eq(batch.target.to(device)).sum().item<int64_t>();
    }
    encoder->train();
    head->train();
    std::cout << "epoch " << epoch << " accuracy " << double(correct) / test_size << std::endl;
  }
  torch::save(encoder, "encoder.pt");
  torch::save(decoder, "decoder.pt");
  torch::save(head, "head.pt");
}
