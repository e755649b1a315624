#pragma once
// Internal (detail/). The settings `accelerate launch` hands its processes, typed, and their one
// encoding into the environment (issue 49 item 1): the launcher encodes them
// (launcher/plan/env_contract.cpp), the runtime decodes them (launch/launch_env.cpp), so that
// the two cannot spell a value differently; the unit test LaunchSettings.* round-trips every
// value. Header-only and LibTorch-free, as env_names.h, because the launcher links no LibTorch.
// Each value is parsed from text once, on its way in (a flag, a config key, a variable, an
// option given in code); the holders after that keep the enum or the bool.

#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/error.h>  // LaunchEnvError
#include <accelerate/core/precision_type.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>

namespace accelerate {

struct LaunchSettings {
  // ACCELERATE_MIXED_PRECISION; unset: the program's own choice, else no. fp8 is carried, not
  // refused, so that the Accelerator refuses it with its reason (precision_type.h).
  std::optional<PrecisionType> mixed_precision;
  bool split_batches = false;  // ACCELERATE_SPLIT_BATCHES (our launcher's --split_batches)
};

namespace detail {

// The contract's yes/no values, any case, as messages list them.
inline constexpr const char* kEnvBoolValues = "1/true/yes/on, 0/false/no/off";

// The one reading of a yes/no value of the contract: nullopt for anything else. Throws nothing
// of its own, so that a reader before main (memory_stats.cpp) can use it too.
inline std::optional<bool> env_bool(std::string value) {
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
  if (value == "1" || value == "true" || value == "yes" || value == "on") return true;
  if (value == "0" || value == "false" || value == "no" || value == "off") return false;
  return std::nullopt;
}

// env_bool, or LaunchEnvError naming the variable.
inline bool parse_env_bool(const std::string& name, const std::string& value) {
  if (const std::optional<bool> b = env_bool(value)) return *b;
  throw LaunchEnvError("accelerate: environment variable " + name + "='" + value +
                       "' is not a boolean (use true/false)");
}

}  // namespace detail

// The variables that carry `settings`; a setting at its default is left out, as the launcher
// has always done for split_batches (a program started without it reads the same).
inline std::map<std::string, std::string> encode_launch_settings(const LaunchSettings& settings) {
  std::map<std::string, std::string> env;
  if (settings.mixed_precision) env[env_names::kMixedPrecision] = to_string(*settings.mixed_precision);
  if (settings.split_batches) env[env_names::kSplitBatches] = "true";
  return env;
}

// The settings `env` carries; an empty variable counts as unset, as everywhere in the
// contract. Throws LaunchEnvError naming the variable and the values it accepts.
inline LaunchSettings decode_launch_settings(const std::map<std::string, std::string>& env) {
  LaunchSettings settings;
  const auto given = [&env](const char* name) -> const std::string* {
    const auto it = env.find(name);
    return it == env.end() || it->second.empty() ? nullptr : &it->second;
  };
  if (const std::string* v = given(env_names::kMixedPrecision)) {
    settings.mixed_precision = precision_from_string(*v);
    if (!settings.mixed_precision) {
      throw LaunchEnvError(std::string("accelerate: ") + env_names::kMixedPrecision + "='" + *v + "' is not one of " +
                           precision_choices(true));
    }
  }
  if (const std::string* v = given(env_names::kSplitBatches)) {
    settings.split_batches = detail::parse_env_bool(env_names::kSplitBatches, *v);
  }
  return settings;
}

}  // namespace accelerate
