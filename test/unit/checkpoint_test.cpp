// Checkpoints with real processes (checkpoint_worker over Gloo on 127.0.0.1): a run stopped
// and resumed in new processes ends exactly where an uninterrupted one does, having seen the
// same batches; a process killed while saving leaves the previous checkpoint loadable;
// total_limit keeps that many; mistakes give errors that name what is wrong.
#include "spawn.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;
using accelerate::testing::spawn_workers;

namespace {

const char* const kWorker = ACCEL_CHECKPOINT_WORKER;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("accel-ckpt-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  TempDir() : TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name()) {}
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::vector<std::string> lines(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(read(path));
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "<step> <epoch> <ids>" lines by step (a replayed step overwrites the earlier one).
std::map<long, std::string> by_step(const std::string& path) {
  std::map<long, std::string> out;
  for (const auto& line : lines(path)) out[std::stol(line)] = line;
  return out;
}

// Largest |a - b| over the parameters written by two runs ("name v v v ..." per tensor, %a);
// infinity when the files do not hold the same tensors.
double max_param_diff(const std::string& a, const std::string& b) {
  const auto la = lines(a), lb = lines(b);
  if (la.empty() || la.size() != lb.size()) return INFINITY;
  double worst = 0;
  size_t values = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    std::istringstream ia(la[i]), ib(lb[i]);
    std::string name_a, name_b, va, vb;
    ia >> name_a;
    ib >> name_b;
    if (name_a != name_b) return INFINITY;
    while (ia >> va) {
      if (!(ib >> vb)) return INFINITY;
      worst = std::max(worst, std::fabs(std::strtod(va.c_str(), nullptr) - std::strtod(vb.c_str(), nullptr)));
      ++values;
    }
    if (ib >> vb) return INFINITY;
  }
  return values == 146 ? worst : INFINITY;  // 6x16 + 16 + 16x2 + 2 parameters
}

std::vector<std::string> train_args(const TempDir& t, const std::string& run, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"train", "--out", t / run, "--project", t / (run + "-project")};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::string output(const accelerate::testing::SpawnResult& r) {
  std::string s;
  for (const auto& w : r.workers) s += w.output;
  return s;
}

// The uninterrupted 2-process run every test compares with (its files are u.*).
class Checkpoint : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reference_ = new TempDir("reference");
    auto run = spawn_workers(kWorker, train_args(*reference_, "u"), 2);
    reference_ok_ = run.all_succeeded();
    if (!reference_ok_) std::cout << "the uninterrupted run failed:\n" << run.summary();
  }
  static void TearDownTestSuite() {
    delete reference_;
    reference_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(reference_ok_) << "the uninterrupted reference run failed"; }
  static std::string reference(const std::string& suffix) { return *reference_ / ("u" + suffix); }

  static TempDir* reference_;
  static bool reference_ok_;
};
TempDir* Checkpoint::reference_ = nullptr;
bool Checkpoint::reference_ok_ = false;

TEST_F(Checkpoint, StoppedAndResumedRunMatchesUninterruptedOne) {
  TempDir t;
  // Stopped after step 6 (mid-epoch 1) and after step 15 (the last batch of epoch 2), each
  // time resumed by new processes.
  for (const char* stop : {"6", "15"}) {
    auto part = spawn_workers(kWorker, train_args(t, "b", {"--stop-after", stop}), 2);
    ASSERT_TRUE(part.all_succeeded()) << part.summary();
  }
  auto rest = spawn_workers(kWorker, train_args(t, "b"), 2);
  ASSERT_TRUE(rest.all_succeeded()) << rest.summary();
  EXPECT_EQ(count(output(rest), "resumed from"), 1) << rest.summary();
  EXPECT_NE(output(rest).find("checkpoint_2 at step 15 epoch 2"), std::string::npos) << rest.summary();

  const double diff = max_param_diff(reference(".params"), t / "b.params");
  std::cout << "max |parameter difference| uninterrupted vs stopped twice and resumed: " << diff << "\n";
  EXPECT_LE(diff, 1e-7);
  for (int rank = 0; rank < 2; ++rank) {
    const auto a = lines(reference(".order" + std::to_string(rank)));
    const auto b = lines(t / ("b.order" + std::to_string(rank)));
    ASSERT_EQ(a.size(), 20u);  // 40 items, batch 4, 2 processes: 5 batches per epoch, 4 epochs
    EXPECT_EQ(a, b) << "rank " << rank << ": the resumed runs saw other batches (or repeated some)";
  }
}

TEST_F(Checkpoint, ProcessKilledWhileSavingLeavesThePreviousCheckpoint) {
  TempDir t;
  // Saves happen at steps 6, 12, 15, 18: process 0 dies inside the second one.
  auto killed = spawn_workers(kWorker, train_args(t, "b", {"--kill-in-save", "12"}), 2);
  EXPECT_EQ(killed.workers[0].exit_code, 128 + 9) << killed.summary();
  EXPECT_NE(killed.workers[1].exit_code, 0) << killed.summary();
  const fs::path checkpoints = fs::path(t / "b-project") / "checkpoints";
  EXPECT_TRUE(fs::exists(checkpoints / "checkpoint_0" / "checkpoint_manifest.txt"));
  EXPECT_FALSE(fs::exists(checkpoints / "checkpoint_1"));
  EXPECT_TRUE(fs::exists(checkpoints / ".checkpoint_1.incomplete"));  // the half-written one, hidden
  EXPECT_FALSE(fs::exists(checkpoints / ".checkpoint_1.incomplete" / "checkpoint_manifest.txt"));

  auto resumed = spawn_workers(kWorker, train_args(t, "b"), 2);
  ASSERT_TRUE(resumed.all_succeeded()) << resumed.summary();
  EXPECT_NE(output(resumed).find("checkpoint_0 at step 6"), std::string::npos) << resumed.summary();
  EXPECT_LE(max_param_diff(reference(".params"), t / "b.params"), 1e-7);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string r = std::to_string(rank);
    EXPECT_EQ(by_step(reference(".order" + r)), by_step(t / ("b.order" + r))) << "rank " << rank;
  }
  EXPECT_FALSE(fs::exists(checkpoints / ".checkpoint_1.incomplete"));
}

TEST_F(Checkpoint, TotalLimitKeepsExactlyThatMany) {
  TempDir t;
  auto run = spawn_workers(kWorker, train_args(t, "a", {"--total-limit", "2"}), 1);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(t / "a-project") / "checkpoints")) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  // 1 process: 10 batches per epoch; saves at steps 6, 12, 18, 24, 30, 36 -> checkpoint_0..5.
  EXPECT_EQ(names, (std::vector<std::string>{"checkpoint_4", "checkpoint_5"}));
}

TEST_F(Checkpoint, MistakesGiveErrorsNamingWhatIsWrong) {
  TempDir t;
  auto run = spawn_workers(kWorker, {"errors", t.path.string()}, 2);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_EQ(count(run.workers[0].output, "OK "), 7) << run.summary();
  EXPECT_EQ(count(output(run), "FAIL"), 0) << run.summary();
}

TEST_F(Checkpoint, ResumesOnAnotherNumberOfProcessesAtTheSameGlobalBatch) {
  TempDir t;
  auto two = spawn_workers(kWorker, train_args(t, "a", {"--stop-after", "6"}), 2);
  ASSERT_TRUE(two.all_succeeded()) << two.summary();
  // 2 processes stopped one batch into epoch 1: global batches 0 and 1 are done, so one
  // process continues with global batch 2 (process 0's next) and 3 (process 1's next).
  const fs::path copy = fs::path(t / "c-project");
  fs::copy(fs::path(t / "a-project"), copy, fs::copy_options::recursive);
  auto one = spawn_workers(kWorker, {"train", "--out", t / "c", "--project", copy.string(), "--epochs", "2"}, 1);
  ASSERT_TRUE(one.all_succeeded()) << one.summary();
  EXPECT_NE(output(one).find("saved by 2 processes, this run has 1"), std::string::npos) << one.summary();
  const auto resumed = lines(t / "c.order0");
  const auto rank0 = by_step(reference(".order0")), rank1 = by_step(reference(".order1"));
  ASSERT_GE(resumed.size(), 2u);
  auto ids = [](const std::string& line) { return line.substr(line.rfind(' ') + 1); };
  EXPECT_EQ(ids(resumed[0]), ids(rank0.at(7))) << "first batch after resuming on 1 process";
  EXPECT_EQ(ids(resumed[1]), ids(rank1.at(7))) << "second batch after resuming on 1 process";

  // 2 global batches cannot be shared by 3 processes: a clear error on every process.
  auto three = spawn_workers(kWorker, train_args(t, "a"), 3);
  for (const auto& w : three.workers) {
    EXPECT_NE(w.exit_code, 0) << three.summary();
  }
  EXPECT_NE(three.workers[0].output.find("not a whole number of batches for each of 3 processes"), std::string::npos)
      << three.summary();
}

}  // namespace
