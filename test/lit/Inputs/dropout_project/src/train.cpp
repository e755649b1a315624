// per_sample_randomness_project.test: the source drops out per batch itself.
#include "model.h"

int main() {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto loader = torch::data::make_data_loader(torch::data::datasets::MNIST("data"), 64);
  for (auto& batch : *loader) {
    optimizer.zero_grad();
    auto loss = torch::nll_loss(model->forward(torch::nn::functional::dropout(batch.data)), batch.target);
    loss.backward();
    optimizer.step();
  }
  return 0;
}
