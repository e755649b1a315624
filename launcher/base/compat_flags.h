#pragma once
// The Hugging Face `accelerate launch` flags (and config keys of the same names) that have
// no field of their own here, each with what the LibTorch launcher does with it. One table,
// read by the flag parser, the config reader, `--help` and docs/launcher.md's check, so that
// no flag is accepted and quietly does less (issue 31).

#include <string>
#include <vector>

#include "base/cli_args.h"

namespace accelerate::launcher {

enum class CompatKind {
  kTuning,     // tunes Python, torchrun's agent or speed only: results are the same; named in one warning
  kDeepSpeed,  // mapped onto FSDP (deepspeed_map.h), said in one line
  kRefused,    // asks for what this runtime cannot do: an error naming the flag
};

struct CompatFlag {
  const char* name;
  Arity arity;
  CompatKind kind;
  const char* why;  // the reason printed with the warning or the error
  // A value that asks for nothing for this flag beyond asks_for_nothing()'s ("1" for the
  // reference's parallelism sizes, whose default is 1): accepted silently.
  const char* neutral = nullptr;
};

const std::vector<CompatFlag>& compat_flags();
// nullptr when `name` is not in the table.
const CompatFlag* find_compat_flag(const std::string& name);

// A value that asks for nothing ("false", "no", "none", "0", "", or the flag's `neutral`):
// a refused flag given one is accepted, as there is nothing to refuse.
bool asks_for_nothing(const std::string& value);
bool asks_for_nothing(const CompatFlag& flag, const std::string& value);

// The error for a refused flag or key: "--NAME: WHY" (`where` replaces "--NAME" for a
// config file key).
std::string refusal(const CompatFlag& flag, const std::string& where = "");

// The one warning naming every tuning-only flag or key that was given, each with its
// reason; `spell` is "--" for flags, "" for config file keys.
std::string tuning_warning(const std::vector<std::string>& names, const std::string& spell);

}  // namespace accelerate::launcher
