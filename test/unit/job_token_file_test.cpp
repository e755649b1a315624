// The job token file machine 0's launcher writes (launcher/link/job_token.cpp). Two
// launchers may race to create it, and other machines may read it (a shared home) while it
// is being made: every reader must see either no file or the whole token. multinode.Strangers
// once read it empty in the moment between its creation and the write (CI of 2026-11-28).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>  // mkdtemp
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "link/job_token.h"

namespace {

using accelerate::launcher::load_job_token;

std::string temp_dir() {
  char tmpl[] = "/tmp/job_token_file_test.XXXXXX";
  const char* dir = mkdtemp(tmpl);
  EXPECT_NE(dir, nullptr);
  return dir ? dir : "/tmp";
}

// 300 rounds of four launchers creating the same file while a reader watches it; with the
// file created in place and then written, the losing launchers read it empty in most rounds.
TEST(JobTokenFile, RacingLaunchersAndReadersSeeOnlyTheWholeToken) {
  const std::string dir = temp_dir();
  std::atomic<int> partial_reads{0}, refused{0};
  int disagreed = 0;
  for (int round = 0; round < 300; ++round) {
    const std::string path = dir + "/job.token." + std::to_string(round);
    std::atomic<bool> done{false};
    std::thread reader([&] {
      while (!done) {
        std::ifstream in(path);
        if (!in) continue;
        std::stringstream text;
        text << in.rdbuf();
        if (text.str().size() != 65) ++partial_reads;  // 64 hex digits and a newline
      }
    });
    std::vector<std::string> secrets(4);
    std::vector<std::thread> launchers;
    for (auto& secret : secrets) {
      launchers.emplace_back([&path, &secret, &refused] {
        std::vector<std::string> notes;
        try {
          secret = load_job_token(path, nullptr, true, &notes)->secret;
        } catch (const accelerate::launcher::PlanError&) {
          ++refused;
        }
      });
    }
    for (auto& t : launchers) t.join();
    done = true;
    reader.join();
    for (const auto& secret : secrets) disagreed += secret != secrets[0] ? 1 : 0;
    unlink(path.c_str());
  }
  EXPECT_EQ(partial_reads, 0) << "reads of a token file that was not whole";
  EXPECT_EQ(refused, 0) << "launchers that lost the race and read an unfinished file";
  EXPECT_EQ(disagreed, 0) << "launchers that came away with another token";
  // No partial file of ours is left beside the tokens.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".partial-"), std::string::npos) << entry.path();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
