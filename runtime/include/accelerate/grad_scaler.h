// The flat name of <accelerate/precision/grad_scaler.h>, kept so that programs written before the headers
// moved into their rooms' folders still build (docs/runtime-api.md, "Headers").
#pragma once
#include <accelerate/precision/grad_scaler.h>
