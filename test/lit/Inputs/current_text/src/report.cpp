#include "report.h"

#include <torch/torch.h>

// Nothing here trains: once migrated, code outside main would call
// accelerate::Accelerator::current(), but this file has no such code.
const char* const kHowTo = "outside main, use accelerate::Accelerator::current()";

int report() {
  return torch::ones({2}).size(0) == 2 && kHowTo[0] == 'o' ? 0 : 1;
}
