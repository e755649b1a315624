// The flat name of <accelerate/fsdp/model_file.h>, kept so that programs written before the headers
// moved into their rooms' folders still build (docs/runtime-api.md, "Headers").
#pragma once
#include <accelerate/fsdp/model_file.h>
