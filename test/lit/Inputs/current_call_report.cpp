#include "report.h"

#include <accelerate/accelerate.h>

// Migrated by hand already: code outside main reaches the Accelerator through current().
int report() {
  return accelerate::Accelerator::current().process_index() == 0 ? 0 : 1;
}
