#pragma once
// FSDP prefetching, as `accelerate launch --fsdp_backward_prefetch` / `--fsdp_forward_prefetch`
// and the fsdp_config keys of the same names: checked here, before any process starts, and
// passed on as FSDP_BACKWARD_PREFETCH / FSDP_FORWARD_PREFETCH (docs/fsdp.md, "Prefetch").
// The flag parser and the config reader share this one spelling rule, so that a value the
// command line accepts is accepted in the file too.

#include <optional>
#include <string>

namespace accelerate::launcher {

// The canonical spelling (BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH) of `value`, in any
// case and with surrounding blanks, as the reference reads it; nullopt for anything else.
std::optional<std::string> backward_prefetch_from_string(const std::string& value);

// The accepted values, for error messages.
const char* backward_prefetch_choices();

}  // namespace accelerate::launcher
