// Corpus (invalid on purpose): this file does not compile. accel-migrate must print the
// compiler's errors and a clear "not migrated" message, exit non-zero, and write no output
// (an existing output file is left untouched). Mistakes: an undeclared identifier
// (`devcie`), a call to a member that does not exist (`model->forwrd`), and a missing `;`
// (compilers may report fewer errors than there are mistakes).
#include <torch/torch.h>

int main() {
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  torch::nn::Linear model(4, 2);
  model->to(devcie);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto x = torch::randn({8, 4}).to(device);
  auto loss = model->forwrd(x).sum()
  loss.backward();
  optimizer.step();
  return 0;
}
