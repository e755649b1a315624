#pragma once
// Running every rule over one parsed translation unit: the entry point shared by
// accel-migrate (rewrite and --check) and the clang-tidy module, so both report and fix
// exactly the same things.

#include "accel/rewriters/engine/Context.h"
#include "accel/rewriters/engine/Edits.h"
#include "accel/rewriters/engine/LLVMCompat.h"

#include <map>
#include <string>
#include <vector>

namespace clang {
class ASTContext;
class SourceManager;
} // namespace clang

namespace accel {

// Records the #include directives written outside system headers (rules add or keep
// includes by those of the file they migrate) and, optionally, every file the translation
// unit includes (project mode finds headers so).
class IncludeCollector : public InclusionCallbacks {
 public:
  IncludeCollector(clang::SourceManager& SM, std::vector<IncludeSite>& Out,
                   std::vector<std::string>* IncludedFiles = nullptr)
      : SM(SM), Out(Out), IncludedFiles(IncludedFiles) {}

 protected:
  void onInclusion(clang::SourceLocation HashLoc, llvm::StringRef FileName,
                   clang::CharSourceRange FilenameRange, clang::OptionalFileEntryRef File) override;

 private:
  clang::SourceManager& SM;
  std::vector<IncludeSite>& Out;
  std::vector<std::string>* IncludedFiles;
};

// One finding as clang-tidy would print it: a warning at Offset (main file) with the
// fixes that resolve it. Rewrites carry the rule's summary and, as a note, its
// explanation; warnings for code left alone carry the comment the rewrite would add.
struct MigrationDiagnostic {
  std::string RuleId;
  std::string Message;
  std::string Note; // "" when none
  unsigned Offset = 0;
  std::vector<Edit> Fixes;
  bool Acknowledged = false; // already-migrated code: reported, not counted
  bool IsNote = false;       // a note (Finding::IsNote): printed as `note:`, not counted
};

// How many of Diags are findings (not acknowledged by an accel-migrate comment, not
// notes): what --check counts and exits 1 for.
unsigned unacknowledged(const std::vector<MigrationDiagnostic>& Diags);

struct UnitResult {
  std::string Original;
  std::string Migrated;
  std::vector<Finding> Findings;
  std::map<std::string, unsigned> Rewrites;     // per rule id
  std::vector<MigrationDiagnostic> Diagnostics; // ordered by offset
  bool NoLibTorch = false; // the unit declares no `torch` namespace: nothing was run

  // What project mode joins across units (which main() must construct the Accelerator):
  bool DefinesMain = false;               // the file defines main()
  bool MainConstructsAccelerator = false; // ... and main constructs one (after migration)
  // The migrated file's code calls accelerate::Accelerator::current(): a call it made
  // already, or one a kept change wrote (Change::CallsCurrent).
  bool UsesCurrent = false;
  std::vector<std::string> DefinedFunctions; // qualified names of functions it defines
  std::vector<std::string> ExternalCalls;    // functions it uses that the unit does not define
};

struct UnitOptions {
  clang::FileID Target; // the file to migrate; invalid: the main file
  // main() must construct the Accelerator even when nothing in its file uses it (project
  // mode: code in other files reaches it through current()). Also in a unit without
  // LibTorch, where only the Accelerator and its include are added.
  bool ForceAccelerator = false;
  bool KeepBatchNorm = false; // --keep-batch-norm (accelerate-sync-batch-norm stays off)
  // Project mode decides across files whether main must construct the Accelerator
  // (ForceAccelerator); a file migrated alone (file mode, clang-tidy) judges from the
  // program's headers it includes (accelerate-accelerator).
  bool ProjectMode = false;
  // accel-migrate --trace-only: instead of the rules, only the step trace's calls are written
  // into the original (TraceOnly.cpp; issue 48 item 2).
  bool TraceOnly = false;
};

// Runs every rule over the declarations written in the target file (the traversal scope
// is restored afterwards, so a host such as clang-tidy can keep using the AST). A unit
// that sees no LibTorch at all is left alone: the rules would otherwise give a plain C++
// program an Accelerator and guard its printing.
UnitResult migrateUnit(clang::ASTContext& AST, std::vector<IncludeSite> Includes,
                       const UnitOptions& Options = UnitOptions());

// Fills DefinesMain, DefinedFunctions, ExternalCalls and (from the calls it makes already)
// UsesCurrent of R from the target file.
void collectProgramFacts(clang::ASTContext& AST, clang::FileID Target, UnitResult& R);

} // namespace accel
