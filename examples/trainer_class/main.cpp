// Class-based training: everything lives in Trainer (trainer.h); main parses options,
// seeds, runs fit() and prints the final evaluation.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "trainer.h"

int main(int argc, char* argv[]) {
  TrainerConfig config;
  for (int i = 1; i < argc; ++i) try {
    const std::string opt = argv[i];
    const bool has_value = i + 1 < argc;
    if (opt == "--epochs" && has_value) config.epochs = std::stoll(argv[++i]);
    else if (opt == "--batch-size" && has_value) config.batch_size = std::stoll(argv[++i]);
    else if (opt == "--train-size" && has_value) config.train_size = std::stoll(argv[++i]);
    else if (opt == "--test-size" && has_value) config.test_size = std::stoll(argv[++i]);
    else if (opt == "--lr" && has_value) config.lr = std::stod(argv[++i]);
    else if (opt == "--max-grad-norm" && has_value) config.max_grad_norm = std::stod(argv[++i]);
    else if (opt == "--optimizer" && has_value) config.optimizer = argv[++i];
    else if (opt == "--seed" && has_value) config.seed = std::stoull(argv[++i]);
    else if (opt == "--out" && has_value) config.out_dir = argv[++i];
    else {
      std::cerr << "usage: " << argv[0]
                << " [--epochs N] [--batch-size N] [--train-size N] [--test-size N] [--lr X]"
                   " [--max-grad-norm X] [--optimizer sgd|adam] [--seed N] [--out DIR]\n";
      return opt == "--help" ? 0 : 2;
    }
  } catch (const std::logic_error&) {  // std::stoll and friends: not a number, out of range
    std::cerr << "bad value for " << argv[i - 1] << ": " << argv[i] << "\n";
    return 2;
  }
  if (config.epochs < 1 || config.batch_size < 1 || config.train_size < 1 ||
      config.test_size < 1) {
    std::cerr << "epochs, batch size and split sizes must be positive\n";
    return 2;
  }

  torch::manual_seed(config.seed);
  Trainer trainer(config);
  trainer.fit();
  trainer.save_checkpoint();

  const EvalResult& result = trainer.last_result();
  std::printf("final: test_loss=%.6f accuracy=%.6f\n", result.loss, result.accuracy);
  return 0;
}
