#include "show.h"

int main() {
  show(torch::ones({2}));
  return 0;
}
