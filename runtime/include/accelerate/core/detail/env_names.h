#pragma once
// The environment variables of the launch contract, spelled once (issue 49): `accelerate
// launch` writes them (launcher/plan/env_contract.cpp, cmd_launch.cpp), the runtime reads them
// (launch/launch_env.cpp, and the few rooms that read a variable of their own), a traced
// original reads the trace's (trace.h). No other C++ file of the product spells one in a
// string literal, messages and help lines included, but launch_settings.h beside it
// (test/ci/test_env_names.py, in ctest ci.report_parsers); comments may. Plain C strings:
// LibTorch-free, usable by the launcher and by header-only trace.h alike.

namespace accelerate {
namespace env_names {

// What every name of the contract starts with but the FSDP ones (the reference's).
inline constexpr const char* kPrefix = "ACCELERATE_";

// What `accelerate launch` writes for every process (env_contract.cpp) and launch_env.cpp reads.
inline constexpr const char* kMixedPrecision = "ACCELERATE_MIXED_PRECISION";
inline constexpr const char* kUseCpu = "ACCELERATE_USE_CPU";
inline constexpr const char* kGradientAccumulationSteps = "ACCELERATE_GRADIENT_ACCUMULATION_STEPS";
inline constexpr const char* kGradientClipping = "ACCELERATE_GRADIENT_CLIPPING";
inline constexpr const char* kDebugMode = "ACCELERATE_DEBUG_MODE";
inline constexpr const char* kSplitBatches = "ACCELERATE_SPLIT_BATCHES";
inline constexpr const char* kCpuAffinity = "ACCELERATE_CPU_AFFINITY";
inline constexpr const char* kProjectDir = "ACCELERATE_PROJECT_DIR";
inline constexpr const char* kLogWith = "ACCELERATE_LOG_WITH";
inline constexpr const char* kRdzvTimeout = "ACCELERATE_RDZV_TIMEOUT";
inline constexpr const char* kTimeoutSeconds = "ACCELERATE_TIMEOUT_SECONDS";
inline constexpr const char* kUseFsdp = "ACCELERATE_USE_FSDP";
inline constexpr const char* kBatchOrderControl = "ACCELERATE_BATCH_ORDER_CONTROL";

// Sharded data parallel (FSDP), the reference's names.
inline constexpr const char* kFsdpAutoWrapPolicy = "FSDP_AUTO_WRAP_POLICY";
inline constexpr const char* kFsdpBackwardPrefetch = "FSDP_BACKWARD_PREFETCH";
inline constexpr const char* kFsdpForwardPrefetch = "FSDP_FORWARD_PREFETCH";
inline constexpr const char* kFsdpMinNumParams = "FSDP_MIN_NUM_PARAMS";
inline constexpr const char* kFsdpOffloadParams = "FSDP_OFFLOAD_PARAMS";
inline constexpr const char* kFsdpShardingStrategy = "FSDP_SHARDING_STRATEGY";
inline constexpr const char* kFsdpStateDictType = "FSDP_STATE_DICT_TYPE";
inline constexpr const char* kFsdpTransformerClsToWrap = "FSDP_TRANSFORMER_CLS_TO_WRAP";

// The step trace and the work report (`accelerate launch --trace`, `accelerate verify`).
inline constexpr const char* kTrace = "ACCELERATE_TRACE";
inline constexpr const char* kTraceDetail = "ACCELERATE_TRACE_DETAIL";
inline constexpr const char* kWorkReport = "ACCELERATE_WORK_REPORT";
inline constexpr const char* kVerifyLauncher = "ACCELERATE_VERIFY_LAUNCHER";

// One host's shared memory, the store and the job.
inline constexpr const char* kShm = "ACCELERATE_SHM";
inline constexpr const char* kShmPrefix = "ACCELERATE_SHM_PREFIX";
inline constexpr const char* kShmKeepNames = "ACCELERATE_SHM_KEEP_NAMES";
inline constexpr const char* kStoreKey = "ACCELERATE_STORE_KEY";
inline constexpr const char* kJobToken = "ACCELERATE_JOB_TOKEN";
inline constexpr const char* kLaunchGraceSeconds = "ACCELERATE_LAUNCH_GRACE_SECONDS";
inline constexpr const char* kTestHostId = "ACCELERATE_TEST_HOST_ID";

// Output and measurement.
inline constexpr const char* kTty = "ACCELERATE_TTY";
inline constexpr const char* kLogLevel = "ACCELERATE_LOG_LEVEL";
inline constexpr const char* kMemoryStats = "ACCELERATE_MEMORY_STATS";
inline constexpr const char* kGradSyncOverlap = "ACCELERATE_GRAD_SYNC_OVERLAP";

}  // namespace env_names
}  // namespace accelerate
