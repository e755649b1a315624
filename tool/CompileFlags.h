#pragma once
// Compiler flags accel-migrate adds to whatever the user (or compile_commands.json) gave:
// what makes the tool work with no flags at all, and the C++20 work-around.

#include <clang/Tooling/ArgumentsAdjusters.h>

#include <memory>
#include <string>

namespace accel {

struct FlagState {
  bool ForceCxx17 = true;   // parse C++20 requests as C++17 when possible
  bool Downgraded = false;  // set by the adjuster when it replaced a -std
  std::string RequestedStd; // a C++20-or-later -std the flags ask for, e.g. "gnu++23"
};

// Adds -std=c++17 when no standard is given, clang's resource directory and LibTorch's and
// the runtime's include directories (after the user's own, so a project's headers win),
// silences warnings, and with ForceCxx17 replaces -std=c++20 and later by c++17 (otherwise
// spells it as this clang accepts, see LLVMCompat.h).
clang::tooling::ArgumentsAdjuster makeFlagsAdjuster(std::shared_ptr<FlagState> State);

} // namespace accel
