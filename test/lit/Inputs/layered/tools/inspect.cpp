#include <torch/torch.h>

int main() {
  return torch::ones({2}).size(0) == 2 ? 0 : 1;
}
