#pragma once
// Kept for code that includes it: the exceptions are in <accelerate/error.h>.
#include <accelerate/core/error.h>
