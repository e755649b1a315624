// The flat name of <accelerate/comm/grad_sync_stats.h>, kept so that programs written before the headers
// moved into their rooms' folders still build (docs/runtime-api.md, "Headers").
#pragma once
#include <accelerate/comm/grad_sync_stats.h>
