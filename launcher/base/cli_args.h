#pragma once
// Flag parsing shared by the subcommands. Flags follow Hugging Face Accelerate's
// spelling rules: `--num_processes` and `--num-processes` are the same flag, and a value
// may be given as `--flag value` or `--flag=value`.

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.h"

namespace accelerate::launcher {

enum class Arity { kSwitch, kValue };

struct FlagSpec {
  std::string name;  // canonical: underscores, no dashes ("num_processes")
  Arity arity = Arity::kValue;
  char short_name = 0;  // e.g. 'q' for -q
  std::string help;     // empty: not listed in --help
};

struct ParsedArgs {
  // Canonical flag name -> value ("true" for switches). A repeated flag keeps the last.
  std::map<std::string, std::string> values;
  // With stop_at_positional: the first positional and everything after it, untouched.
  std::vector<std::string> positional;

  bool has(const std::string& name) const { return values.count(name) != 0; }
};

// "--num-processes" / "num-processes" -> "num_processes".
std::string canonical_flag_name(std::string_view flag);

// The candidate closest to `name` by edit distance, if it is closer than `below` edits; ""
// otherwise. The one "did you mean" of the launcher: flags here, config keys in config_file.
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates, size_t below);

// Parses `args` against `specs`. With stop_at_positional, parsing ends at the first
// argument that is not a flag (or after "--"): that is the program, and it and its own
// arguments are passed through unchanged. Unknown flags throw UsageError naming them.
ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs,
                      bool stop_at_positional);

// Parses an integer flag or config value, naming `what` in the error.
int parse_int(const std::string& text, const std::string& what);

// "--flag" text for messages, in the reference's underscore spelling.
inline std::string flag_text(const std::string& name) { return "--" + name; }

}  // namespace accelerate::launcher
