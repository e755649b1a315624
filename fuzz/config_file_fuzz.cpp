// Fuzz target: the launcher's config file reader (launcher/config/config_file.cpp).
// Any bytes may be a config file (edited by hand, cut short, written by another tool): the
// reader must return a config or refuse it with a ConfigError. A crash, a sanitizer report
// or any other exception escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/config_file.h"

using accelerate::launcher::config_to_yaml;
using accelerate::launcher::ConfigError;
using accelerate::launcher::parse_config;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string written;
  try {
    written = config_to_yaml(parse_config(text, "fuzz.yaml").config);
  } catch (const ConfigError&) {
    return 0;
  }
  // `accelerate config` writes what it read: the file it writes must read back to the same
  // settings, or a saved config would change, or be refused, at the next launch.
  try {
    const std::string again = config_to_yaml(parse_config(written, "written.yaml").config);
    if (again == written) return 0;
    std::fprintf(stderr, "config written back reads differently:\n%s---\n%s", written.c_str(), again.c_str());
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "config written back is refused: %s\n%s", e.what(), written.c_str());
  }
  std::abort();
}
