// Full-batch regression in the style of tutorial collections' first programs: the whole
// training set is two tensors, and every epoch is one step on all of it. 1001 samples, so
// two processes hold 501 and 500 rows. Prints the loss every 50 epochs, keeps the last
// one, and evaluates on held-out tensors after training.
#include <torch/torch.h>

#include <cstdio>

int main() {
  torch::manual_seed(7);
  const int64_t n = 1001;
  const int64_t num_epochs = 300;
  auto x_train = torch::linspace(-2.0, 2.0, n).unsqueeze(1);
  x_train = torch::cat({x_train, x_train.pow(2), torch::sin(3 * x_train)}, 1);
  auto y_train = x_train.matmul(torch::tensor({{1.5}, {-0.7}, {0.3}})) + 0.2;
  auto x_test = torch::rand({200, 3}) * 4 - 2;
  auto y_test = x_test.matmul(torch::tensor({{1.5}, {-0.7}, {0.3}})) + 0.2;

  torch::nn::Sequential model(torch::nn::Linear(3, 16), torch::nn::Tanh(), torch::nn::Linear(16, 1));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

  double last_loss = 0;
  for (int64_t epoch = 1; epoch <= num_epochs; ++epoch) {
    auto outputs = model->forward(x_train);
    auto loss = torch::nn::functional::mse_loss(outputs, y_train);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    last_loss = loss.item<double>();
    if (epoch % 50 == 0)
      std::printf("Epoch [%ld/%ld], Loss: %.6f\n", static_cast<long>(epoch),
                  static_cast<long>(num_epochs), last_loss);
  }

  torch::NoGradGuard no_grad;
  double test_loss = torch::nn::functional::mse_loss(model->forward(x_test), y_test).item<double>();
  double weight_sum = 0;
  for (const auto& p : model->parameters())
    weight_sum += p.sum().item<double>();
  std::printf("final: train_loss=%.6g test_loss=%.6g weight_sum=%.6g\n", last_loss, test_loss,
              weight_sum);
  return 0;
}
