// accelerate-custom-device: device logic the tool cannot map (device counts, explicit
// device indices from variables, set_device) is left alone with a warning. The warnings are
// written by accelerate-device (DeviceRule.cpp), which finds that logic while it maps the
// rest; this id runs nothing itself.

#include "rules/CustomDeviceRule.h"

#include "analyses/RuleSupport.h"

namespace accel {

const RuleInfo CustomDeviceInfo = {
    "accelerate-custom-device", "device logic left as it was",
    "custom device logic (device counts, explicit device indices, set_device) conflicts "
    "with the launcher's device assignment: use accelerator.device() / "
    "accelerator.local_process_index()"};

// The id's entry in the rule table (RegisterRule.h): no run function, no analyses.
static const RegisterRule CustomDeviceEntry({
    CustomDeviceInfo,
    nullptr,
    /*Needs=*/{},
    /*Provides=*/{},
    /*Rank=*/40,
});

} // namespace accel
