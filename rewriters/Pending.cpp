#include "RuleSupport.h"
namespace accel {
const RuleInfo GatherMetricsInfo = {"accelerate-gather-metrics", "", ""};
const RuleInfo MainProcessInfo = {"accelerate-main-process", "", ""};
const RuleInfo ManualBatchingInfo = {"accelerate-manual-batching", "", ""};
void runGatherMetrics(MigrationContext&, const RuleInfo&) {}
void runMainProcess(MigrationContext&, const RuleInfo&) {}
void runManualBatching(MigrationContext&, const RuleInfo&) {}
}
