// Checkpoint content hashes with real files and real processes (checkpoint_worker): a flipped
// byte, a truncated file, a missing or damaged manifest are refused with an error naming the
// file and the checkpoint; a resume skips a damaged newest checkpoint for the one before it
// and ends where an uninterrupted run does; a disk that fills up during a save (a small tmpfs
// in a private mount namespace) fails that save clearly and leaves the previous checkpoint
// byte for byte as it was.
#include <accelerate/core/error.h>

#include "checkpoint/checkpoint_fs.h"
#include "spawn.h"

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;
using accelerate::testing::InnerRun;
using accelerate::testing::run_in_mount_namespace;
using accelerate::testing::spawn_workers;
using accelerate::testing::SpawnOptions;

namespace {

const char* const kWorker = ACCEL_CHECKPOINT_WORKER;

struct TempDir {
  fs::path path;
  TempDir() {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path = fs::temp_directory_path() / ("accel-ckpt-integrity-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Every file of a checkpoint directory with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out[e.path().filename().string()] = read(e.path());
  return out;
}

void flip_byte(const fs::path& file) {
  std::string bytes = read(file);
  ASSERT_FALSE(bytes.empty()) << file;
  bytes[bytes.size() / 2] ^= 0x01;
  write(file, bytes);
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string output(const accelerate::testing::SpawnResult& r) {
  std::string s;
  for (const auto& w : r.workers) s += w.output;
  return s;
}

std::vector<std::string> train_args(const TempDir& t, const std::string& run, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"train", "--out", t / run, "--project", t / (run + "-project")};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

fs::path checkpoint(const TempDir& t, const std::string& run, int n) {
  return fs::path(t / (run + "-project")) / "checkpoints" / ("checkpoint_" + std::to_string(n));
}

// Loads `dir` in a new process with the training program's objects.
accelerate::testing::SpawnResult load(const fs::path& dir) {
  return spawn_workers(kWorker, {"train", "--load", dir.string()}, 1);
}

// Saves checkpoint_0 of run "a" (1 process, step 6).
fs::path save_one(const TempDir& t) {
  auto run = spawn_workers(kWorker, train_args(t, "a", {"--stop-after", "6"}), 1);
  EXPECT_TRUE(run.all_succeeded()) << run.summary();
  return checkpoint(t, "a", 0);
}

TEST(CheckpointIntegrity, AFlippedByteInAnyFileIsRefusedNamingFileAndCheckpoint) {
  TempDir t;
  const fs::path saved = save_one(t);
  ASSERT_TRUE(load(saved).all_succeeded()) << "the undamaged checkpoint must load";
  const auto files = snapshot(saved);
  ASSERT_GE(files.size(), 6u);  // model, optimizer, scheduler, 2 objects, process_0, manifest
  for (const auto& [name, bytes] : files) {
    const fs::path copy = t.path / ("flipped-" + name);
    fs::copy(saved, copy, fs::copy_options::recursive);
    flip_byte(copy / name);
    auto run = load(copy);
    const auto& out = run.workers[0].output;
    EXPECT_NE(run.workers[0].exit_code, 0) << name << ": a flipped byte was loaded\n" << out;
    if (name == "checkpoint_manifest.txt") {
      EXPECT_TRUE(contains(out, "checkpoint '" + copy.string() + "': checkpoint_manifest.txt was changed")) << out;
      continue;
    }
    EXPECT_TRUE(contains(out, "load_state: checkpoint '" + copy.string() + "': '" + (copy / name).string() +
                                  "' is corrupt: its content hash (xxh3-64) is"))
        << name << ":\n"
        << out;
  }
}

TEST(CheckpointIntegrity, ATruncatedFileOrManifestIsRefused) {
  TempDir t;
  const fs::path saved = save_one(t);
  const fs::path other = t.path / "copy";
  fs::copy(saved, other, fs::copy_options::recursive);
  const fs::path file = saved / "process_0.pt";
  const auto size = fs::file_size(file);
  fs::resize_file(file, size / 2);
  auto run = load(saved);
  EXPECT_NE(run.workers[0].exit_code, 0) << run.summary();
  EXPECT_TRUE(contains(run.workers[0].output, "checkpoint '" + saved.string() + "': '" + file.string() + "' has " +
                                                  std::to_string(size / 2) + " bytes, the manifest says " +
                                                  std::to_string(size)))
      << run.summary();

  // The manifest cut before its closing hash line (a cut file list looks the same).
  const fs::path manifest = other / "checkpoint_manifest.txt";
  std::string text = read(manifest);
  write(manifest, text.substr(0, text.rfind("end ")));
  auto cut = load(other);
  EXPECT_NE(cut.workers[0].exit_code, 0) << cut.summary();
  EXPECT_TRUE(contains(cut.workers[0].output, "checkpoint_manifest.txt is cut short")) << cut.summary();
}

TEST(CheckpointIntegrity, AMissingManifestIsRefusedClearly) {
  TempDir t;
  const fs::path saved = save_one(t);
  fs::remove(saved / "checkpoint_manifest.txt");
  auto run = load(saved);
  EXPECT_NE(run.workers[0].exit_code, 0) << run.summary();
  EXPECT_TRUE(contains(run.workers[0].output, "load_state: '" + saved.string() +
                                                  "' is not a complete checkpoint: checkpoint_manifest.txt is missing"))
      << run.summary();
}

// A manifest as libaccelerate wrote it before hashes (format 1: "file <size> <name>", no
// hash lines) still loads, with a note that contents are not checked.
TEST(CheckpointIntegrity, AFormatOneManifestStillLoadsWithANote) {
  TempDir t;
  const fs::path saved = save_one(t);
  std::istringstream in(read(saved / "checkpoint_manifest.txt"));
  std::ostringstream old;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("accelerate-libtorch checkpoint ", 0) == 0) line = "accelerate-libtorch checkpoint 1";
    if (line.rfind("hash ", 0) == 0 || line.rfind("end ", 0) == 0) continue;
    if (line.rfind("file ", 0) == 0) {  // drop the hash field
      const auto first = line.find(' ', 5);
      line = line.substr(0, first) + line.substr(line.find(' ', first + 1));
    }
    old << line << '\n';
  }
  write(saved / "checkpoint_manifest.txt", old.str());
  auto run = load(saved);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_TRUE(contains(run.workers[0].output, "loaded " + saved.string() + " at step 6")) << run.summary();
  EXPECT_TRUE(contains(run.workers[0].output,
                       "has checkpoint format 1 (written before checkpoints carried content "
                       "hashes): file sizes are checked, contents are not"))
      << run.summary();
}

// A manifest naming a file outside its checkpoint ("../x", found reading the manifest's
// parser for fuzz/) is refused, even where that file exists with the listed size: format 1
// (no hashes) so that the edited manifest needs no new hash.
TEST(CheckpointIntegrity, AManifestNamingAFileOutsideTheCheckpointIsRefused) {
  TempDir t;
  const fs::path saved = save_one(t);
  fs::copy_file(saved / "process_0.pt", t.path / "process_0.pt");  // the escape would find it
  std::istringstream in(read(saved / "checkpoint_manifest.txt"));
  std::ostringstream edited;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("accelerate-libtorch checkpoint ", 0) == 0) line = "accelerate-libtorch checkpoint 1";
    if (line.rfind("hash ", 0) == 0 || line.rfind("end ", 0) == 0) continue;
    if (line.rfind("file ", 0) == 0) {  // drop the hash field; send process_0.pt one level up
      const auto first = line.find(' ', 5);
      line = line.substr(0, first) + line.substr(line.find(' ', first + 1));
      const auto at = line.find("process_0.pt");
      if (at != std::string::npos) line.insert(at, "../");
    }
    edited << line << '\n';
  }
  ASSERT_TRUE(contains(edited.str(), " ../process_0.pt"));
  write(saved / "checkpoint_manifest.txt", edited.str());
  auto run = load(saved);
  EXPECT_NE(run.workers[0].exit_code, 0) << run.summary();
  EXPECT_TRUE(contains(run.workers[0].output, "'../process_0.pt', a file outside the checkpoint")) << run.summary();
}

// A count out of range or not a number is refused by the manifest reader itself (seen while
// writing fuzz/manifest_fuzz.cpp: `num_processes 0` was read as written and met later as
// "processes 0..-1"). Format 1, so that the text needs no closing hash; the reader is called
// directly (the loader refuses such a checkpoint through it, as the tests above show).
TEST(CheckpointIntegrity, AManifestCountOutOfRangeIsRefused) {
  namespace ckpt = accelerate::detail::ckpt;
  const std::string head = "accelerate-libtorch checkpoint 1\n";
  const std::string good = head + "num_processes 2\nstep 3\nmodels 1\noptimizers 1\nschedulers 0\nscaler 0\n" +
                           "objects 0\nloaders 1\nfile 10 model_0.pt\n";
  const ckpt::Manifest m = ckpt::parse_manifest(good, "/c/checkpoint_manifest.txt");
  EXPECT_EQ(m.num_processes, 2);
  EXPECT_EQ(m.step, 3);
  EXPECT_EQ(m.loaders, 1);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"num_processes 0", "says num_processes 0, expected 1 or more"},
      {"models -1", "says models -1, expected 0 or more"},
      {"step -5", "says step -5, expected 0 or more"},
      {"loaders many", "the line 'loaders ...' does not hold one whole number"},
      {"objects 2 3", "the line 'objects ...' does not hold one whole number"},
      {"scaler 7", "says scaler 7, expected 0 or 1"},
      {"models 1\nmodels 2", "says 'models' twice"},
      {"file 10 model_0.pt\nfile 10 model_0.pt", "says 'file model_0.pt' twice"},
  };
  for (const auto& [line, message] : bad) {
    try {
      (void)ckpt::parse_manifest(head + line + "\n", "/c/checkpoint_manifest.txt");
      ADD_FAILURE() << "accepted: " << line;
    } catch (const accelerate::CheckpointError& e) {
      EXPECT_TRUE(contains(e.what(), message)) << line << ": " << e.what();
      EXPECT_TRUE(contains(e.what(), "the manifest is damaged or was not written by accelerate")) << e.what();
    }
  }
  // A key this reader does not know (a later format's) is skipped, not refused.
  EXPECT_EQ(ckpt::parse_manifest(head + "future_key x y\nnum_processes 4\n", "/c/m.txt").num_processes, 4);
}

TEST(CheckpointIntegrity, ResumeSkipsADamagedNewestCheckpointForThePreviousOne) {
  TempDir t;
  auto uninterrupted = spawn_workers(kWorker, train_args(t, "u"), 2);
  ASSERT_TRUE(uninterrupted.all_succeeded()) << uninterrupted.summary();
  // Saves at steps 6 and 12 (checkpoint_0, checkpoint_1), then stops; checkpoint_1 is damaged.
  auto first = spawn_workers(kWorker, train_args(t, "b", {"--stop-after", "12"}), 2);
  ASSERT_TRUE(first.all_succeeded()) << first.summary();
  const fs::path good = checkpoint(t, "b", 0), damaged = checkpoint(t, "b", 1);
  const auto good_before = snapshot(good);
  flip_byte(damaged / "optimizer_0.pt");
  const auto damaged_before = snapshot(damaged);

  auto resumed = spawn_workers(kWorker, train_args(t, "b"), 2);
  ASSERT_TRUE(resumed.all_succeeded()) << resumed.summary();
  const auto out = output(resumed);
  EXPECT_TRUE(contains(out, "skipping the damaged checkpoint '" + damaged.string() + "'")) << out;
  EXPECT_TRUE(contains(out, "optimizer_0.pt' is corrupt")) << out;
  EXPECT_TRUE(contains(out, "resumed from " + good.string() + " at step 6")) << out;
  // The final parameters (one line per tensor, %a): equal text is equal bits.
  EXPECT_EQ(read(t / "u.params"), read(t / "b.params"))
      << "the resumed run did not end where the uninterrupted one did";
  EXPECT_FALSE(read(t / "b.params").empty());

  // Nothing was overwritten: the previous checkpoint is byte for byte as saved, the damaged
  // one is kept for inspection, and the resumed run's saves went after it.
  EXPECT_EQ(snapshot(good), good_before);
  EXPECT_EQ(snapshot(damaged), damaged_before);
  EXPECT_TRUE(fs::exists(checkpoint(t, "b", 2) / "checkpoint_manifest.txt"));
  auto reload = spawn_workers(kWorker, {"train", "--load", good.string()}, 2);
  ASSERT_TRUE(reload.all_succeeded()) << reload.summary();
  EXPECT_TRUE(contains(output(reload), "loaded " + good.string() + " at step 6 epoch 1")) << reload.summary();
}

// Bytes a directory's files take on a tmpfs (whole pages).
uint64_t pages_of(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir)) total += (fs::file_size(e.path()) + 4095) / 4096 * 4096;
  return total;
}

TEST(CheckpointIntegrity, FullDiskInner) {
  if (std::getenv("ACCEL_FULL_DISK_INNER") == nullptr) GTEST_SKIP() << "started by FullDiskDuringASave";
  TempDir t;
  // A file system with room for one checkpoint and a half: the second save runs out of space.
  const uint64_t one = pages_of(save_one(t));
  const fs::path small = t.path / "small";
  fs::create_directories(small);
  const std::string size = "size=" + std::to_string((one + one / 2 + 4095) / 4096 * 4096);
  ASSERT_EQ(::mount("accel-ckpt-full", small.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, size.c_str()), 0)
      << std::strerror(errno);
  const std::string project = (small / "p").string();
  auto first = spawn_workers(kWorker, {"train", "--out", t / "f", "--project", project, "--stop-after", "6"}, 1);
  ASSERT_TRUE(first.all_succeeded()) << first.summary();
  const fs::path good = small / "p" / "checkpoints" / "checkpoint_0";
  const auto before = snapshot(good);

  auto full = spawn_workers(kWorker, {"train", "--out", t / "f", "--project", project, "--stop-after", "12"}, 1);
  const auto& out = full.workers[0].output;
  EXPECT_NE(full.workers[0].exit_code, 0) << out;
  EXPECT_TRUE(contains(
      out, "save_state: cannot write '" + (small / "p" / "checkpoints").string() + "/.checkpoint_1.incomplete/"))
      << out;
  EXPECT_TRUE(contains(out, "No space left on device (")) << out;
  EXPECT_TRUE(contains(out, "bytes free on the file system that holds it)")) << out;
  EXPECT_TRUE(contains(out, "note: save_state failed: removed")) << out;
  EXPECT_FALSE(fs::exists(small / "p" / "checkpoints" / "checkpoint_1"));
  EXPECT_FALSE(fs::exists(small / "p" / "checkpoints" / ".checkpoint_1.incomplete"));
  EXPECT_EQ(snapshot(good), before) << "the previous checkpoint changed";
  auto reload = load(good);
  ASSERT_TRUE(reload.all_succeeded()) << reload.summary();
  EXPECT_TRUE(contains(reload.workers[0].output, "loaded " + good.string() + " at step 6")) << reload.summary();
  ::umount(small.c_str());
}

TEST(CheckpointIntegrity, FullDiskDuringASaveKeepsThePreviousCheckpoint) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs in a private mount namespace";
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.distributed_env = false;
  opts.env = {{"ACCEL_FULL_DISK_INNER", "1"}};
  opts.timeout = std::chrono::seconds(200);
  // The inner test mounts its small tmpfs under /tmp itself (the Debian 13 root's /tmp is a
  // mount point of its own: made private alone where / cannot be).
  const InnerRun inner = run_in_mount_namespace("/tmp", "", "CheckpointIntegrity.FullDiskInner", opts);
  if (!inner.entered) GTEST_SKIP() << "cannot make a private mount namespace here: " << inner.run.summary();
  EXPECT_TRUE(inner.passed()) << inner.run.summary();
}

}  // namespace
