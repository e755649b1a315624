#pragma once
// accelerate-unprepared-loader's info, for accelerate-manual-batching
// (ManualBatchingRule.cpp), whose warnings about loaders and training loops it cannot split
// carry this id. The id is registered in its own file (UnpreparedLoaderRule.cpp), one rule
// per file.

#include "accel/rewriters/engine/Rule.h"

namespace accel {

extern const RuleInfo UnpreparedLoaderInfo;

} // namespace accel
