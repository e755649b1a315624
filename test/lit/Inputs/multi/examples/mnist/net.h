// Not self-contained: relies on main.cpp including <torch/torch.h> first.
#pragma once

struct Step {
  static void run(torch::Tensor loss) { loss.backward(); }
};
