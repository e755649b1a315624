// The flat name of <accelerate/helpers/sync_batch_norm.h>, kept so that programs written before the headers
// moved into their rooms' folders still build (docs/runtime-api.md, "Headers").
#pragma once
#include <accelerate/helpers/sync_batch_norm.h>
