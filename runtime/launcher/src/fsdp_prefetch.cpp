#include "fsdp_prefetch.h"

#include <algorithm>
#include <cctype>

namespace accelerate::launcher {

std::optional<std::string> backward_prefetch_from_string(const std::string& value) {
  std::string v = value;
  v.erase(0, v.find_first_not_of(" \t"));
  v.erase(v.find_last_not_of(" \t") + 1);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  if (v == "BACKWARD_PRE" || v == "BACKWARD_POST" || v == "NO_PREFETCH") return v;
  return std::nullopt;
}

const char* backward_prefetch_choices() { return "BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH"; }

}  // namespace accelerate::launcher
