// Corpus: training code written as generic templates over the model, loss and loader.
// Idioms: `template <typename Model, typename Loader>` epoch function with `loss.backward()`
//   inside a template, `model->to(device)` in a templated setup helper, a templated
//   evaluation returning (loss, accuracy) with eval() + NoGradGuard, `*loader` arguments,
//   std::cout logging.
// Expected: fully migratable (edits in the template definitions, not per instantiation).
#include <torch/torch.h>

#include <iostream>
#include <utility>

struct Xor : torch::data::datasets::Dataset<Xor> {
  torch::Tensor x, y;
  explicit Xor(int64_t n) {
    x = torch::randint(0, 2, {n, 2}).to(torch::kFloat);
    y = (x.select(1, 0) != x.select(1, 1)).to(torch::kLong);
    x = x + 0.1 * torch::randn({n, 2});
  }
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

template <typename Model>
void place(Model& model, const torch::Device& device) {
  model->to(device);
}

template <typename Model, typename Loader, typename LossFn>
double run_epoch(Model& model, Loader& loader, torch::optim::Optimizer& opt, LossFn loss_fn,
                 torch::Device device) {
  double total = 0;
  int batches = 0;
  for (auto& batch : loader) {
    opt.zero_grad();
    auto loss = loss_fn(model->forward(batch.data.to(device)), batch.target.to(device));
    loss.backward();
    opt.step();
    total += loss.template item<double>();
    ++batches;
  }
  return total / batches;
}

template <typename Model, typename Loader>
std::pair<double, double> evaluate(Model& model, Loader& loader, torch::Device device, size_t size) {
  model->eval();
  torch::NoGradGuard no_grad;
  double loss = 0;
  int64_t correct = 0;
  for (auto& batch : loader) {
    auto logits = model->forward(batch.data.to(device));
    auto target = batch.target.to(device);
    loss += torch::cross_entropy_loss(logits, target, {}, torch::Reduction::Sum).template item<double>();
    correct += logits.argmax(1).eq(target).sum().template item<int64_t>();
  }
  model->train();
  return {loss / size, static_cast<double>(correct) / size};
}

int main() {
  torch::manual_seed(17);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  torch::nn::Sequential model(torch::nn::Linear(2, 8), torch::nn::ReLU(), torch::nn::Linear(8, 2));
  place(model, device);
  torch::optim::Adam opt(model->parameters(), 0.02);

  auto train_loader = torch::data::make_data_loader(Xor(400).map(torch::data::transforms::Stack<>()), 20);
  auto test_set = Xor(200).map(torch::data::transforms::Stack<>());
  const size_t test_size = *test_set.size();
  auto test_loader = torch::data::make_data_loader(std::move(test_set), 100);

  auto ce = [](const torch::Tensor& out, const torch::Tensor& y) { return torch::cross_entropy_loss(out, y); };
  for (int epoch = 0; epoch < 5; ++epoch) {
    const double train_loss = run_epoch(model, *train_loader, opt, ce, device);
    const auto [test_loss, acc] = evaluate(model, *test_loader, device, test_size);
    std::cout << epoch << ": train " << train_loss << " test " << test_loss << " acc " << acc << "\n";
  }
}
