#pragma once
// Migrates one source file: parses it with the given compilation database, refuses to
// touch it when it does not compile, and otherwise runs every rule over the main file.

#include <accel/rewriters/engine/Migration.h>

#include <clang/Tooling/CompilationDatabase.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace accel {

struct FileResult {
  std::string Path;
  bool Parsed = false;  // compiled without errors and rules ran
  std::string Original; // file content as read
  std::string Migrated; // content after the rules (== Original when nothing to do)
  std::vector<Finding> Findings;
  std::vector<MigrationDiagnostic> Diagnostics; // for --check and --export-fixes
  std::string Rendered; // with RenderDiagnostics: as clang prints them (line, fix-its)
  std::vector<std::string> IncludedFiles;   // real paths of every file the TU includes
  std::map<std::string, unsigned> Rewrites; // per rule id
  std::string CompilerErrors;               // the compiler's diagnostics when Parsed is false
  std::string Note;                         // e.g. how the language standard was chosen
  std::string Pch;                          // what the PCH cache did (see PchCache.h)
  double Seconds = 0;
  // Facts project mode joins across files (see UnitResult).
  bool DefinesMain = false, MainConstructsAccelerator = false, UsesCurrent = false;
  std::vector<std::string> DefinedFunctions, ExternalCalls;
  bool changed() const { return Parsed && Migrated != Original; }
};

struct MigrateSettings {
  bool ForceCxx17 = true;         // parse C++20 requests as C++17 (see CompileFlags.h)
  bool UsePch = true;             // use (and build) the LibTorch PCH cache (see PchCache.h)
  bool AnnouncePch = false;       // say on stderr when a PCH is being built (it takes seconds)
  std::string CacheDir;           // "" = the default cache directory
  bool RenderDiagnostics = false; // fill FileResult::Rendered (for --check)
  bool ColorDiagnostics = false;  // --use-color: Rendered with the terminal's colours
  // --checks: the rules whose diagnostics are kept (empty: all); the edits are all made.
  std::function<bool(llvm::StringRef)> RuleSelected;
  // Project mode: migrate this header (a real path) as part of the translation unit of the
  // source given to migrateFile, rather than the source itself; a header that is not
  // self-contained compiles only there.
  std::string Target;
  bool ForceAccelerator = false; // main() must construct the Accelerator (UnitOptions)
  bool KeepBatchNorm = false;    // --keep-batch-norm (UnitOptions)
  bool TraceOnly = false;        // --trace-only (UnitOptions)
  bool ProjectMode = false;      // UnitOptions::ProjectMode
};

struct Options;
// The settings every migrated file gets from the command line, in file and project mode
// alike (one copy of the conversion; Migrator.cpp).
MigrateSettings settingsFrom(const Options& Opts);

// Thread-safe: project mode calls it from several threads.
FileResult migrateFile(const clang::tooling::CompilationDatabase& DB, const std::string& Path,
                       const MigrateSettings& Settings);

} // namespace accel
