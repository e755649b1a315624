#pragma once
// The accel-migrate command line, parsed into a plain struct (no option globals are
// read outside Options.cpp).

#include <clang/Tooling/CompilationDatabase.h>
#include <llvm/ADT/StringRef.h>

#include <memory>
#include <string>
#include <vector>

namespace accel {

struct Options {
  std::vector<std::string> Files;
  std::string Output;     // -o (one input file)
  bool InPlace = false;   // -i (FILE.orig keeps the original)
  bool DryRun = false;    // report only
  bool Diff = false;      // print a unified diff instead of writing
  bool ForceCxx17 = true; // --keep-std turns the C++20 work-around off
  bool ListRules = false;
  bool RuleTable = false;
  bool Quiet = false;      // no per-file summary lines
  bool Check = false;      // report as clang-tidy would; write nothing
  std::string ExportFixes; // --export-fixes: YAML for clang-apply-replacements
  std::string BuildPath;   // -p
  // Project mode (--in-root/--out-root with -p): every translation unit under InRoot.
  std::string InRoot, OutRoot;
  unsigned Jobs = 0;  // -j; 0: one per core
  bool Force = false; // --force: write into a non-empty --out-root (nothing deleted)
  // --accelerate-prefix: HINTS for the find_package(Accelerate) the CMake migration adds
  // ("" = where the tool is installed, "none" = no HINTS).
  std::string AcceleratePrefix;
  // The precompiled-header cache of LibTorch's headers (see PchCache.h).
  bool UsePch = true;
  // --keep-batch-norm: leave torch::nn::BatchNorm* alone (per-process batch statistics).
  bool KeepBatchNorm = false;
  // --trace-only: write only the step trace's calls into the original (issue 48 item 2).
  bool TraceOnly = false;
  std::string CacheDir; // --cache-dir, else $ACCEL_MIGRATE_CACHE_DIR, else ~/.cache
  // --extra-arg / --extra-arg-before: appended / prepended to every compile command.
  std::vector<std::string> ExtraArgs, ExtraArgsBefore;
  // --checks: clang-tidy's glob list ('-*,accelerate-backward'); "" selects every rule.
  // Only --check reports a selection (see Options.cpp).
  std::string Checks;
  // --use-color: colours in --check's diagnostics (unset: when stdout is a terminal).
  bool UseColor = false;
  // Where the compile commands came from when neither -p nor `--` was given: the
  // compile_commands.json found above the first source (empty: none was used).
  std::string FoundDatabase;
  // Whether rule Id is selected by Checks (every rule when Checks is empty).
  bool ruleSelected(llvm::StringRef Id) const;
  bool projectMode() const { return !InRoot.empty() || !OutRoot.empty(); }
  std::unique_ptr<clang::tooling::CompilationDatabase> DB;
};

// Parses argv (including `-- <compiler flags>`). Returns false after printing the reason;
// ExitCode is then what main should return.
bool parseOptions(int argc, const char** argv, Options& Opts, int& ExitCode);

} // namespace accel
