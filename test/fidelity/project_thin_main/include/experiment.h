#pragma once
// Plain settings: no LibTorch types, so main.cpp compiles without LibTorch's headers.

struct ExperimentConfig {
  int epochs = 2;
  int batch_size = 48;
  double learning_rate = 0.1;
  unsigned long seed = 5;
};

// Trains and evaluates; returns the process exit code.
int run_experiment(const ExperimentConfig& config);
