#pragma once
#include <torch/torch.h>

struct Config {
  int steps = 3;
};
int train(const Config& config);
