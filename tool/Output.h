#pragma once
// Writing results: atomically (a temporary file in the same directory, then rename), so
// an interrupted run never leaves a half-written source; and unified diffs for --diff.

#include <llvm/Support/Error.h>

#include <string>

namespace accel {

llvm::Error writeFileAtomically(const std::string& Path, const std::string& Content);
// Unified diff of two texts as `diff -u` prints it (labels a/Path and b/Path).
std::string unifiedDiff(const std::string& Path, const std::string& Before,
                        const std::string& After);

} // namespace accel
