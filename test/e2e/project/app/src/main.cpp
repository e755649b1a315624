#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <torch/torch.h>

#include "trainer.h"

int main(int argc, char* argv[]) {
  Config config;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--epochs")) config.epochs = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch-size")) config.batch_size = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed")) config.seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  std::printf("line_fit: %lld epochs, batch size %lld\n", static_cast<long long>(config.epochs),
              static_cast<long long>(config.batch_size));
  torch::manual_seed(config.seed);
  Trainer trainer(config);
  trainer.fit();
  print_final(trainer.evaluate(), trainer.parameter_sum());
  return 0;
}
