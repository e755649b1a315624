#pragma once
// accelerate-custom-device's info, for accelerate-device (DeviceRule.cpp), whose warnings
// about device logic it leaves as it was carry this id. The id is registered in its own file
// (CustomDeviceRule.cpp), one rule per file.

#include "accel/rewriters/engine/Rule.h"

namespace accel {

extern const RuleInfo CustomDeviceInfo;

} // namespace accel
