#include "trainer.h"

int main() {
  Trainer trainer;
  torch::Device device(torch::kCUDA);
  auto x = torch::ones({4, 2});
  for (int epoch = 0; epoch < 3; ++epoch) {
    trainer.step(x);
    torch::Tensor extra = trainer.model()->forward(x.to(device)).mean();
    extra.backward();
  }
  return 0;
}
