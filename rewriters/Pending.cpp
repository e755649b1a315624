#include "RuleSupport.h"
namespace accel {
const RuleInfo DeviceInfo = {"accelerate-device", "", ""};
const RuleInfo CustomDeviceInfo = {"accelerate-custom-device", "", ""};
const RuleInfo PrepareInfo = {"accelerate-prepare", "", ""};
const RuleInfo PlacementInfo = {"accelerate-placement", "", ""};
const RuleInfo GatherMetricsInfo = {"accelerate-gather-metrics", "", ""};
const RuleInfo MainProcessInfo = {"accelerate-main-process", "", ""};
const RuleInfo ManualBatchingInfo = {"accelerate-manual-batching", "", ""};
void runDevice(MigrationContext&, const RuleInfo&) {}
void runPrepare(MigrationContext&, const RuleInfo&) {}
void runPlacement(MigrationContext&, const RuleInfo&) {}
void runGatherMetrics(MigrationContext&, const RuleInfo&) {}
void runMainProcess(MigrationContext&, const RuleInfo&) {}
void runManualBatching(MigrationContext&, const RuleInfo&) {}
}
