#include "experiment.h"

#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  ExperimentConfig config;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--epochs"))
      config.epochs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--lr"))
      config.learning_rate = std::atof(argv[i + 1]);
  }
  return run_experiment(config);
}
