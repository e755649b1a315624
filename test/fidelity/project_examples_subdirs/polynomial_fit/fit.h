// The training loop of the polynomial fit. Not self-contained: main.cpp includes
// <torch/torch.h> (and defines Poly) before including this file.
#pragma once

template <typename Loader>
double fit(Poly& model, torch::optim::Optimizer& optimizer, Loader& loader, int epochs,
           torch::Device device) {
  double last = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (auto& batch : loader) {
      auto x = batch.data.to(device), y = batch.target.to(device);
      optimizer.zero_grad();
      auto loss = torch::mse_loss(model->forward(x), y);
      loss.backward();
      optimizer.step();
      last = loss.template item<double>();
    }
  }
  return last;
}
