#include "accelerator/work_report.h"
#include <accelerate/core/detail/env_names.h>
#include <accelerate/log/logging.h>

#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace accelerate {
namespace detail {

void write_work_report(int64_t rank, int64_t world_size, const WorkCounts& c) {
  const char* dir = std::getenv(env_names::kWorkReport);
  if (dir == nullptr || *dir == '\0') return;
  const std::string path = std::string(dir) + "/work-rank" + std::to_string(rank) + ".json";
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const std::string text = "{\"rank\": " + std::to_string(rank) + ", \"world_size\": " + std::to_string(world_size) +
                           ", \"backward_calls\": " + std::to_string(c.backward_calls) +
                           ", \"optimizer_steps\": " + std::to_string(c.optimizer_steps) +
                           ", \"samples\": " + std::to_string(c.samples) +
                           ", \"padded_samples\": " + std::to_string(c.padded_samples) + "}\n";
  FILE* f = std::fopen(tmp.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (ok) ok = std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    detail::runtime_log().error("cannot write the work report " + path + ": " + std::strerror(errno),
                                LogScope::all_processes);
    std::remove(tmp.c_str());
  }
}

}  // namespace detail
}  // namespace accelerate
