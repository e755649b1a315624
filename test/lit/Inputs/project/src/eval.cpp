// Uses the trainer but has no training code of its own: copied as it is.
#include "trainer.h"

int main() {
  Trainer trainer;
  trainer.step(torch::ones({4, 2}));
  return 0;
}
