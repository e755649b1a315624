// parse_launch_env: every launcher's variables, and clear errors for inconsistent ones; the
// check that NCCL processes do not share a GPU.
#include <accelerate/comm/detail/process_state.h>
#include <accelerate/core/error.h>
#include <accelerate/launch/detail/launch_env.h>
#include <accelerate/launch/detail/launch_settings.h>

#include <gtest/gtest.h>

using accelerate::EnvMap;
using accelerate::LaunchEnvError;
using accelerate::parse_launch_env;

namespace {

std::string error_of(const EnvMap& env) {
  try {
    parse_launch_env(env);
  } catch (const LaunchEnvError& e) {
    return e.what();
  }
  return "";
}

TEST(RuntimeEnv, NoLauncherIsSingleProcess) {
  const auto e = parse_launch_env({{"HOME", "/root"}});
  EXPECT_EQ(e.launcher, "none");
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world_size, 1);
  EXPECT_FALSE(e.distributed());
  EXPECT_FALSE(e.timeout.has_value());
}

TEST(RuntimeEnv, TorchEnvVariables) {
  const auto e = parse_launch_env({{"RANK", "3"},
                                   {"WORLD_SIZE", "4"},
                                   {"LOCAL_RANK", "1"},
                                   {"LOCAL_WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "10.0.0.1"},
                                   {"MASTER_PORT", "1234"}});
  EXPECT_EQ(e.launcher, "env");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "10.0.0.1");
  EXPECT_EQ(e.master_port, 1234);
  EXPECT_FALSE(e.agent_store);
}

TEST(RuntimeEnv, TorchrunAgentStore) {
  const auto e = parse_launch_env({{"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {"LOCAL_RANK", "1"},
                                   {"LOCAL_WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "127.0.0.1"},
                                   {"MASTER_PORT", "29500"},
                                   {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                   {"TORCHELASTIC_RESTART_COUNT", "2"},
                                   {"TORCHELASTIC_RUN_ID", "x"}});
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_TRUE(e.agent_store);
  EXPECT_EQ(e.store_prefix, "/worker/attempt_2");
}

// `accelerate launch` on several machines with a job token: machine 0's launcher serves the
// store, each attempt under its own prefix; a malformed key is refused, not used.
TEST(RuntimeEnv, StoreKeyOfAJobWithAToken) {
  const std::string key(64, 'f');
  const auto e = parse_launch_env({{"RANK", "2"},
                                   {"WORLD_SIZE", "4"},
                                   {"MASTER_ADDR", "10.0.0.1"},
                                   {"MASTER_PORT", "29500"},
                                   {"ACCELERATE_STORE_KEY", key},
                                   {"TORCHELASTIC_RESTART_COUNT", "1"}});
  EXPECT_EQ(e.launcher, "accelerate");
  EXPECT_EQ(e.store_key, key);
  EXPECT_EQ(e.store_prefix, "/accelerate/attempt_1");
  EXPECT_FALSE(e.agent_store);
  for (const std::string& bad : std::vector<std::string>{"short", std::string(64, 'G'), std::string(65, 'a')}) {
    try {
      (void)parse_launch_env({{"RANK", "0"},
                              {"WORLD_SIZE", "2"},
                              {"MASTER_ADDR", "h"},
                              {"MASTER_PORT", "5"},
                              {"ACCELERATE_STORE_KEY", bad}});
      ADD_FAILURE() << "accepted ACCELERATE_STORE_KEY=" << bad;
    } catch (const LaunchEnvError& err) {
      EXPECT_NE(std::string(err.what()).find("ACCELERATE_STORE_KEY"), std::string::npos) << err.what();
    }
  }
}

// An outer job's key seen by torchrun's processes (torchrun started from inside a job of
// ours) is not theirs: they keep torchrun's store.
TEST(RuntimeEnv, StoreKeyIsIgnoredUnderTorchrun) {
  const auto e = parse_launch_env({{"RANK", "0"},
                                   {"WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "h"},
                                   {"MASTER_PORT", "5"},
                                   {"TORCHELASTIC_RUN_ID", "x"},
                                   {"ACCELERATE_STORE_KEY", std::string(64, 'f')}});
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.store_key, "");
}

TEST(RuntimeEnv, TorchrunWithoutAgentStore) {
  const auto e = parse_launch_env({{"RANK", "0"},
                                   {"WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "h"},
                                   {"MASTER_PORT", "5"},
                                   {"TORCHELASTIC_USE_AGENT_STORE", "False"},
                                   {"TORCHELASTIC_RESTART_COUNT", "0"}});
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_FALSE(e.agent_store);
  EXPECT_EQ(e.store_prefix, "");
  EXPECT_EQ(e.local_rank, 0);  // defaults: one machine
  EXPECT_EQ(e.local_world_size, 2);
}

// `accelerate launch --max_restarts 2 --project_dir DIR` (restart count without a torchrun
// agent next to the ACCELERATE_* variables).
TEST(RuntimeEnv, AccelerateLaunchWithRestartsAndProjectDir) {
  const auto e = parse_launch_env({{"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "127.0.0.1"},
                                   {"MASTER_PORT", "29501"},
                                   {"ACCELERATE_USE_CPU", "true"},
                                   {"ACCELERATE_PROJECT_DIR", "/runs/exp1"},
                                   {"TORCHELASTIC_RESTART_COUNT", "1"},
                                   {"TORCHELASTIC_MAX_RESTARTS", "2"}});
  EXPECT_EQ(e.launcher, "accelerate");
  EXPECT_FALSE(e.agent_store);
  EXPECT_EQ(e.store_prefix, "");
  EXPECT_EQ(e.project_dir, "/runs/exp1");
  EXPECT_EQ(parse_launch_env({{"HOME", "/root"}}).project_dir, "");
}

TEST(RuntimeEnv, HuggingFaceAccelerateLaunch) {
  const auto e = parse_launch_env({{"RANK", "0"},
                                   {"WORLD_SIZE", "2"},
                                   {"LOCAL_RANK", "0"},
                                   {"MASTER_ADDR", "127.0.0.1"},
                                   {"MASTER_PORT", "29501"},
                                   {"ACCELERATE_MIXED_PRECISION", "bf16"},
                                   {"ACCELERATE_USE_CPU", "True"},
                                   {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4"},
                                   {"ACCELERATE_TIMEOUT_SECONDS", "7"},
                                   {"ACCELERATE_SPLIT_BATCHES", "true"}});
  EXPECT_EQ(e.launcher, "accelerate");
  EXPECT_TRUE(e.settings.split_batches);
  EXPECT_FALSE(parse_launch_env({}).settings.split_batches);
  EXPECT_EQ(e.settings.mixed_precision, accelerate::PrecisionType::BF16);
  EXPECT_TRUE(e.use_cpu);
  EXPECT_EQ(e.gradient_accumulation_steps, 4);
  ASSERT_TRUE(e.timeout.has_value());
  EXPECT_EQ(e.timeout->count(), 7000);
}

TEST(RuntimeEnv, Slurm) {
  const auto e = parse_launch_env({{"SLURM_PROCID", "5"},
                                   {"SLURM_STEP_ID", "0"},
                                   {"SLURM_NODEID", "1"},
                                   {"SLURM_NTASKS", "8"},
                                   {"SLURM_LOCALID", "1"},
                                   {"SLURM_NTASKS_PER_NODE", "4(x2)"},
                                   {"SLURM_JOB_NODELIST", "gpu[07-08],cpu1"}});
  EXPECT_EQ(e.launcher, "slurm");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.master_addr, "gpu07");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(RuntimeEnv, SlurmMasterAddrWins) {
  const auto e = parse_launch_env({{"SLURM_PROCID", "0"},
                                   {"SLURM_STEP_ID", "0"},
                                   {"SLURM_NTASKS", "2"},
                                   {"SLURM_LOCALID", "0"},
                                   {"SLURM_JOB_NODELIST", "n1"},
                                   {"MASTER_ADDR", "head"},
                                   {"MASTER_PORT", "4000"}});
  EXPECT_EQ(e.master_addr, "head");
  EXPECT_EQ(e.master_port, 4000);
}

// What Slurm 22.05/24.11's srun sets (seen under a real slurmd, multinode.Slurm): the
// step's per-node counts always, SLURM_NTASKS_PER_NODE only with --ntasks-per-node, and the
// job's value of it inside a smaller step.
TEST(RuntimeEnv, SlurmTasksOnThisNodeComeFromTheStep) {
  const auto two_nodes = parse_launch_env({{"SLURM_PROCID", "1"},
                                           {"SLURM_STEP_ID", "0"},
                                           {"SLURM_NODEID", "1"},
                                           {"SLURM_NTASKS", "2"},
                                           {"SLURM_LOCALID", "0"},
                                           {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
                                           {"SLURM_TASKS_PER_NODE", "1(x2)"},
                                           {"SLURM_STEP_NODELIST", "n[1-2]"}});
  EXPECT_EQ(two_nodes.local_world_size, 1);  // was 2 without SLURM_NTASKS_PER_NODE: one machine
  EXPECT_EQ(two_nodes.master_addr, "n1");
  const auto smaller_step = parse_launch_env({{"SLURM_PROCID", "0"},
                                              {"SLURM_STEP_ID", "1"},
                                              {"SLURM_NTASKS", "1"},
                                              {"SLURM_LOCALID", "0"},
                                              {"SLURM_NTASKS_PER_NODE", "2"},
                                              {"SLURM_STEP_TASKS_PER_NODE", "1"},
                                              {"SLURM_STEP_NODELIST", "n1"}});
  EXPECT_EQ(smaller_step.world_size, 1);  // was an error: SLURM_NTASKS_PER_NODE=2 must be in 1..1
  const auto uneven = parse_launch_env({{"SLURM_PROCID", "2"},
                                        {"SLURM_STEP_ID", "0"},
                                        {"SLURM_NODEID", "1"},
                                        {"SLURM_NTASKS", "3"},
                                        {"SLURM_LOCALID", "0"},
                                        {"SLURM_STEP_TASKS_PER_NODE", "2,1"},
                                        {"SLURM_STEP_NODELIST", "n[1-2]"}});
  EXPECT_EQ(uneven.local_world_size, 1);
  EXPECT_EQ(accelerate::slurm_tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(accelerate::slurm_tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(accelerate::slurm_tasks_on_node("2(x3),1", 4), -1);
  EXPECT_EQ(accelerate::slurm_tasks_on_node("2(x", 0), -1);
}

TEST(RuntimeEnv, SlurmBatchScriptWithoutSrunRunsAlone) {
  const auto e = parse_launch_env(
      {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NTASKS_PER_NODE", "2"}, {"SLURM_JOB_NODELIST", "n1"}});
  EXPECT_EQ(e.launcher, "none");
  EXPECT_EQ(e.world_size, 1);
  EXPECT_NE(e.note.find("not started by srun"), std::string::npos) << e.note;
}

TEST(RuntimeEnv, TorchVariablesWinOverSlurm) {
  const auto e = parse_launch_env({{"SLURM_PROCID", "0"},
                                   {"SLURM_NTASKS", "1"},
                                   {"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "a"},
                                   {"MASTER_PORT", "1"}});
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
}

TEST(RuntimeEnv, OpenMpi) {
  const auto e = parse_launch_env({{"OMPI_COMM_WORLD_RANK", "2"},
                                   {"OMPI_COMM_WORLD_SIZE", "4"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                   {"MASTER_ADDR", "node0"}});
  EXPECT_EQ(e.launcher, "openmpi");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "node0");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(RuntimeEnv, SlurmNodeLists) {
  EXPECT_EQ(accelerate::first_slurm_host("node1"), "node1");
  EXPECT_EQ(accelerate::first_slurm_host("a[3,5-7]"), "a3");
  EXPECT_EQ(accelerate::first_slurm_host("b12,a[1-2]"), "b12");
  EXPECT_EQ(accelerate::first_slurm_host("x[010-012]y"), "x010");
}

TEST(RuntimeEnv, ErrorsNameTheVariable) {
  EXPECT_NE(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}})
                .find("RANK=2 is out of range for WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}).find("MASTER_ADDR is not set"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}).find("MASTER_PORT is not set"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "70000"}})
                .find("MASTER_PORT=70000"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "zero"}, {"WORLD_SIZE", "2"}}).find("RANK='zero' is not an integer"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}}).find("WORLD_SIZE"), std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "2"}}).find("RANK is not"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"},
                      {"WORLD_SIZE", "2"},
                      {"LOCAL_RANK", "3"},
                      {"LOCAL_WORLD_SIZE", "2"},
                      {"MASTER_ADDR", "a"},
                      {"MASTER_PORT", "1"}})
                .find("LOCAL_RANK=3"),
            std::string::npos);
  EXPECT_NE(error_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}).find("MASTER_ADDR"),
            std::string::npos);
  EXPECT_NE(error_of({{"ACCELERATE_TIMEOUT_SECONDS", "-1"}}).find("ACCELERATE_TIMEOUT_SECONDS"), std::string::npos);
  EXPECT_NE(error_of({{"ACCELERATE_MIXED_PRECISION", "fp64"}}).find("ACCELERATE_MIXED_PRECISION"), std::string::npos);
  EXPECT_NE(error_of({{"ACCELERATE_SPLIT_BATCHES", "maybe"}}).find("ACCELERATE_SPLIT_BATCHES"), std::string::npos);
}

TEST(RuntimeEnv, SingleProcessNeedsNoMaster) {
  const auto e = parse_launch_env({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  EXPECT_FALSE(e.distributed());
  EXPECT_EQ(e.master_addr, "");
}

}  // namespace

// `accelerate launch --rdzv_timeout` and `--debug` reach the runtime through these.
TEST(RuntimeEnv, RendezvousTimeoutAndDebugMode) {
  const auto e = parse_launch_env({{"ACCELERATE_RDZV_TIMEOUT", "45"}, {"ACCELERATE_DEBUG_MODE", "true"}});
  ASSERT_TRUE(e.rdzv_timeout.has_value());
  EXPECT_EQ(e.rdzv_timeout->count(), 45000);
  EXPECT_TRUE(e.debug);
  const auto plain = parse_launch_env({});
  EXPECT_FALSE(plain.rdzv_timeout.has_value());
  EXPECT_FALSE(plain.debug);
  EXPECT_NE(error_of({{"ACCELERATE_RDZV_TIMEOUT", "0"}}).find("ACCELERATE_RDZV_TIMEOUT must be > 0"),
            std::string::npos);
  EXPECT_NE(error_of({{"ACCELERATE_RDZV_TIMEOUT", "soon"}}).find("ACCELERATE_RDZV_TIMEOUT='soon'"), std::string::npos);
  EXPECT_NE(error_of({{"ACCELERATE_DEBUG_MODE", "maybe"}}).find("ACCELERATE_DEBUG_MODE"), std::string::npos);
}

// Two NCCL processes on one GPU: NCCL itself says only "invalid usage" (the one-GPU machine,
// docs/gpu.md); the runtime names the counts and the ways out before the rendezvous.
TEST(RuntimeEnv, MoreNcclProcessesThanGpusIsAClearError) {
  EXPECT_NO_THROW(accelerate::detail::check_one_gpu_per_process(1, 1));
  EXPECT_NO_THROW(accelerate::detail::check_one_gpu_per_process(2, 8));
  try {
    accelerate::detail::check_one_gpu_per_process(2, 1);
    ADD_FAILURE() << "2 processes on 1 GPU were accepted";
  } catch (const accelerate::DistributedError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("2 processes on this machine would share 1 GPU,"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--num_processes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--cpu"), std::string::npos) << msg;
  }
}

// ACCELERATE_MIXED_PRECISION reads with the shared parser: fp8 passes here (the Accelerator
// refuses it with its reason), so a bad value's error lists it; any case reads as one spelling.
TEST(RuntimeEnv, MixedPrecisionListsExactlyTheAcceptedValues) {
  EXPECT_NE(error_of({{"ACCELERATE_MIXED_PRECISION", "fp32"}})
                .find("ACCELERATE_MIXED_PRECISION='fp32' is not one of no, fp16, bf16, fp8"),
            std::string::npos)
      << error_of({{"ACCELERATE_MIXED_PRECISION", "fp32"}});
  EXPECT_EQ(parse_launch_env({{"ACCELERATE_MIXED_PRECISION", "fp8"}}).settings.mixed_precision,
            accelerate::PrecisionType::FP8);
  EXPECT_EQ(parse_launch_env({{"ACCELERATE_MIXED_PRECISION", "BF16"}}).settings.mixed_precision,
            accelerate::PrecisionType::BF16);
}

// The launcher's encoder (env_contract.cpp's job_variables) and the runtime's decoder
// (parse_launch_env) are one contract: every value the launcher can hand over comes back as it
// left, so a spelling changed on one side alone fails here.
TEST(LaunchSettings, EveryValueRoundTrips) {
  using accelerate::PrecisionType;
  for (const PrecisionType precision :
       {PrecisionType::No, PrecisionType::FP16, PrecisionType::BF16, PrecisionType::FP8}) {
    for (const bool split : {false, true}) {
      const accelerate::LaunchSettings sent{precision, split};
      const EnvMap env = accelerate::encode_launch_settings(sent);
      const accelerate::LaunchSettings got = parse_launch_env(env).settings;
      EXPECT_EQ(got.mixed_precision, sent.mixed_precision) << accelerate::to_string(precision);
      EXPECT_EQ(got.split_batches, split) << accelerate::to_string(precision);
    }
  }
  // Unset stays unset: the program's own mixed_precision then decides.
  EXPECT_FALSE(parse_launch_env(accelerate::encode_launch_settings({})).settings.mixed_precision.has_value());
}

// A bad value names its variable and the values it accepts, in the words docs/launcher.md's
// variables table and the runtime's errors have always used.
TEST(LaunchSettings, BadValuesGiveTheDocumentedErrors) {
  EXPECT_EQ(error_of({{"ACCELERATE_MIXED_PRECISION", "fp32"}}),
            "accelerate: ACCELERATE_MIXED_PRECISION='fp32' is not one of no, fp16, bf16, fp8");
  EXPECT_EQ(error_of({{"ACCELERATE_SPLIT_BATCHES", "maybe"}}),
            "accelerate: environment variable ACCELERATE_SPLIT_BATCHES='maybe' is not a boolean (use true/false)");
}
