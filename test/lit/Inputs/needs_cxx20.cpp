// Uses a C++20 feature (abbreviated function template): does not parse as C++17.
#include <torch/torch.h>
void step(auto& loss) { loss.backward(); }
int main() {
  torch::Tensor loss;
  loss.backward();
  step(loss);
}
