#include <cstdio>

#include <torch/torch.h>

#include "trainer.h"

void print_final(double test_mse, double parameter_sum) {
  std::printf("final: test_mse=%.6f parameter_sum=%.6f\n", test_mse, parameter_sum);
}
