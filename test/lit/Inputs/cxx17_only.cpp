// Valid C++17, not C++20: `requires` became a keyword.
#include <torch/torch.h>
int main() {
  int requires = 1;
  torch::Tensor loss;
  loss.backward();
  return requires - 1;
}
