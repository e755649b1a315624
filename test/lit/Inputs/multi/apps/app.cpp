#include <torch/torch.h>

int main() {
  auto loss = torch::ones({2}).sum();
  loss.backward();
  return 0;
}
