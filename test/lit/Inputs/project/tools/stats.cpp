// No LibTorch here: nothing to migrate.
#include <cmath>
#include <cstdio>

int main() {
  std::printf("%f\n", std::sqrt(2.0));
  return 0;
}
