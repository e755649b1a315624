#include "train.h"

int train(const Config& config) {
  for (int i = 0; i < config.steps; ++i) {
    auto loss = torch::ones({2}).sum();
    loss.backward();
  }
  return 0;
}
