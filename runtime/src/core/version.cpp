#include <accelerate/core/version.h>

namespace accelerate {
// Lets a program check at run time which libaccelerate it loaded.
const char* version() { return ACCELERATE_VERSION; }
}  // namespace accelerate
