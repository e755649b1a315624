#include "base/cli_args.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>

namespace accelerate::launcher {

std::string canonical_flag_name(std::string_view flag) {
  while (!flag.empty() && flag.front() == '-') flag.remove_prefix(1);
  std::string name(flag);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// A close spelling makes the error actionable ("did you mean --num_processes?").
std::string suggestion(const std::string& name, const std::vector<FlagSpec>& specs) {
  std::vector<std::string> names;
  for (const auto& spec : specs) names.push_back(spec.name);
  const std::string best = nearest_name(name, names, 4);
  return best.empty() ? "" : " (did you mean --" + best + "?)";
}

const FlagSpec* find_spec(const std::vector<FlagSpec>& specs, const std::string& name, char short_name) {
  for (const auto& spec : specs) {
    if (short_name ? spec.short_name == short_name : spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace

std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates, size_t below) {
  std::string best;
  for (const auto& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (d < below) {
      below = d;
      best = candidate;
    }
  }
  return best;
}

ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs,
                      bool stop_at_positional) {
  ParsedArgs out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (stop_at_positional) break;
      out.positional.push_back(arg);
      continue;
    }
    std::string name;
    std::optional<std::string> inline_value;
    const FlagSpec* spec = nullptr;
    if (arg[1] == '-') {
      size_t eq = arg.find('=');
      name = canonical_flag_name(arg.substr(0, eq));
      if (eq != std::string::npos) inline_value = arg.substr(eq + 1);
      spec = find_spec(specs, name, 0);
      if (!spec) throw UsageError("unrecognized option '" + arg.substr(0, eq) + "'" + suggestion(name, specs));
    } else {
      spec = find_spec(specs, "", arg[1]);
      if (!spec) throw UsageError("unrecognized option '" + arg + "'");
      name = spec->name;
      if (arg.size() > 2) {
        if (spec->arity == Arity::kSwitch) throw UsageError("unrecognized option '" + arg + "'");
        inline_value = arg.substr(arg[2] == '=' ? 3 : 2);
      }
    }
    if (spec->arity == Arity::kSwitch) {
      if (inline_value) throw UsageError("option --" + name + " takes no value");
      out.values[name] = "true";
      continue;
    }
    if (inline_value) {
      out.values[name] = *inline_value;
    } else if (i + 1 < args.size()) {
      out.values[name] = args[++i];
    } else {
      throw UsageError("option --" + name + " needs a value");
    }
  }
  for (; i < args.size(); ++i) out.positional.push_back(args[i]);
  return out;
}

int parse_int(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || value < INT_MIN || value > INT_MAX) {
    throw UsageError(what + ": expected an integer, got '" + text + "'");
  }
  return static_cast<int>(value);
}

}  // namespace accelerate::launcher
