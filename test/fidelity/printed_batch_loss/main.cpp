// A loss printed straight from the training loop, the commonest logging line of tutorials
// (`std::cout << ... << loss.item() << ...`, pytorch-cpp's and LearnLibTorch's first
// programs), with the whole training set as one batch (601 rows: 301 and 300 on two
// processes). accelerate-main-process makes the main process print alone; on N processes it
// must print the whole batch's loss, not its share's: accelerate-gather-metrics computes the
// batch's value on every process right before each print. The `final:` line is itself
// printed inside the loop, at the last epoch, from the loss tensor directly.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>

int main() {
  torch::manual_seed(3);
  const int64_t n = 601;
  const int num_epochs = 40;
  auto x = torch::linspace(-1.0, 1.0, n).unsqueeze(1);
  x = torch::cat({x, torch::cos(2 * x)}, 1);
  auto y = x.matmul(torch::tensor({{0.8}, {-1.1}})) + 0.4;

  torch::nn::Linear model(2, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  for (int epoch = 1; epoch <= num_epochs; ++epoch) {
    auto output = model->forward(x);
    auto loss = torch::mse_loss(output, y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (epoch % 10 == 0) {
      std::cout << "Epoch [" << epoch << "/" << num_epochs << "]";
      std::cout << " loss " << loss.item() << std::endl;
    }
    if (epoch == num_epochs)
      std::printf("final: loss=%.6g\n", loss.item<double>());
  }
  return 0;
}
