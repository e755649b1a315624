// The flat name of <accelerate/checkpoint/checkpoint.h>, kept so that programs written before the headers
// moved into their rooms' folders still build (docs/runtime-api.md, "Headers").
#pragma once
#include <accelerate/checkpoint/checkpoint.h>
