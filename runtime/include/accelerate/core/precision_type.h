#pragma once
// The values of mixed_precision, spelled once for the runtime and for the launcher (which
// does not link LibTorch, hence no LibTorch here): the enum, its one parser and its one
// printer. Every flag, variable, config key and error message that names the values uses
// these, so that an error lists exactly the values its reader accepts.

#include <accelerate/core/error.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

namespace accelerate {

// The reference's values, in the order they are listed. FP8 is recognised (the reference's
// flags and config files use it) so that it is refused with its reason, not as a typo: the
// runtime trains in the other three (LibTorch's autocast has no fp8).
enum class PrecisionType { No, FP16, BF16, FP8 };

inline const char* to_string(PrecisionType type) {
  switch (type) {
    case PrecisionType::No:
      return "no";
    case PrecisionType::FP16:
      return "fp16";
    case PrecisionType::BF16:
      return "bf16";
    case PrecisionType::FP8:
      return "fp8";
  }
  return "no";
}

// "no", "fp16", "bf16" or "fp8", case-insensitive, blanks ignored; nullopt for anything else.
inline std::optional<PrecisionType> precision_from_string(const std::string& value) {
  std::string v;
  for (char c : value)
    if (!std::isspace(static_cast<unsigned char>(c)))
      v.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (PrecisionType t : {PrecisionType::No, PrecisionType::FP16, PrecisionType::BF16, PrecisionType::FP8})
    if (v == to_string(t)) return t;
  return std::nullopt;
}

// The values a reader accepts, for its messages: "no, fp16, bf16, fp8" (with_fp8: the
// launcher's flags, variables and config file, which pass fp8 on to be refused with its
// reason) or "no, fp16, bf16" (what trains). `separator` as in "{no,fp16,bf16}".
inline std::string precision_choices(bool with_fp8, const std::string& separator = ", ") {
  std::string list;
  for (PrecisionType t : {PrecisionType::No, PrecisionType::FP16, PrecisionType::BF16, PrecisionType::FP8}) {
    if (t == PrecisionType::FP8 && !with_fp8) continue;
    list += (list.empty() ? "" : separator) + to_string(t);
  }
  return list;
}

// What the runtime trains in: `type` itself, or for fp8 an Error (Unsupported) saying why.
// Apart from parse_precision so that a value already typed (the launch contract's) is refused
// with the same words without being spelled and read again.
inline PrecisionType trainable_precision(PrecisionType type, const std::string& origin = "mixed_precision") {
  if (type == PrecisionType::FP8) {
    throw Error(ErrorCode::Unsupported, "accelerate: " + origin +
                                            "='fp8' is not supported by this runtime (LibTorch autocast has no fp8); "
                                            "use one of " +
                                            precision_choices(false));
  }
  return type;
}

// The runtime's reading of a mixed_precision setting: fp8 is an Error (Unsupported) saying
// why, anything else unknown an Error (Config) naming `origin` and the values that train.
inline PrecisionType parse_precision(const std::string& value, const std::string& origin = "mixed_precision") {
  const std::optional<PrecisionType> type = precision_from_string(value);
  if (!type) {
    throw Error(ErrorCode::Config, "accelerate: " + origin + "='" + value +
                                       "' is not a mixed precision mode; expected one of " + precision_choices(false));
  }
  return trainable_precision(*type, origin);
}

}  // namespace accelerate
