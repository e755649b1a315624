#pragma once
// Option resolution: what each AcceleratorOptions field is once code and the launch contract
// have both spoken (docs/runtime-api.md, "Where options come from"). It lives in the launch
// room, beside the contract it reads, rather than in comm/: it decides settings before any
// process group exists and needs nothing of one.

#include <accelerate/core/options.h>
#include <accelerate/launch/detail/launch_env.h>
#include <accelerate/launch/detail/launch_settings.h>

namespace accelerate {
namespace detail {

struct ResolvedOptions {
  AcceleratorOptions options;  // every field set, as options() shows them (for programs to read)
  // The launch settings decided (mixed_precision always set): what the Accelerator keeps and
  // its parts read (MixedPrecision, the loaders, save_state), not options' copies of them.
  LaunchSettings settings;
};

// Every option the environment can set, decided: code over environment over default
// (options.h). Throws accelerate::Error (Config) for a value the runtime does not accept.
ResolvedOptions resolve_options(AcceleratorOptions options, const LaunchEnv& env);

}  // namespace detail
}  // namespace accelerate
