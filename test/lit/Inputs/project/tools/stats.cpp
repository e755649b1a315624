// No LibTorch here: left as it is, although main prints (its target does not link
// Accelerate either).
#include <cmath>
#include <cstdio>

int main() {
  std::printf("%f\n", std::sqrt(2.0));
  return 0;
}
