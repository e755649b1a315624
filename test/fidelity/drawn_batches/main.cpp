// Batches the program draws itself at every step, in the style of the classic polynomial
// regression example: get_batch() samples random inputs and computes their targets, the
// loop runs until the loss is small enough (or a step limit), and the parameters are
// updated by hand from their gradients. 33 samples per step: two processes hold 17 and 16.
#include <torch/torch.h>

#include <cstdio>
#include <utility>

namespace {

constexpr int64_t kDegree = 3;
constexpr int64_t kBatch = 33;

torch::Tensor make_features(const torch::Tensor& x) {
  std::vector<torch::Tensor> columns;
  for (int64_t i = 1; i <= kDegree; ++i)
    columns.push_back(x.pow(i));
  return torch::cat(columns, 1);
}

torch::Tensor f(const torch::Tensor& x) {
  static const auto w = torch::tensor({{0.5}, {-1.2}, {0.8}});
  return x.mm(w) + 0.9;
}

std::pair<torch::Tensor, torch::Tensor> get_batch(int64_t batch_size) {
  auto random = torch::randn({batch_size}).unsqueeze(1);
  auto x = make_features(random);
  return std::make_pair(x, f(x));
}

} // namespace

int main() {
  torch::manual_seed(3);
  torch::nn::Linear fc(kDegree, 1);
  float loss = 0;
  int64_t steps = 0;
  for (int64_t idx = 1;; ++idx) {
    auto batch = get_batch(kBatch);
    auto batch_x = batch.first;
    auto batch_y = batch.second;
    fc->zero_grad();
    auto output = torch::smooth_l1_loss(fc(batch_x), batch_y);
    loss = output.item<float>();
    output.backward();
    for (auto& param : fc->parameters())
      param.data().add_(-0.05 * param.grad().data());
    steps = idx;
    if (loss < 1e-3 || idx == 400)
      break;
  }
  double weight_sum = 0;
  for (const auto& p : fc->parameters())
    weight_sum += p.sum().item<double>();
  std::printf("Loss: %.6f after %ld batches\n", loss, static_cast<long>(steps));
  std::printf("final: loss=%.6g steps=%ld weight_sum=%.6g\n", loss, static_cast<long>(steps),
              weight_sum);
  return 0;
}
