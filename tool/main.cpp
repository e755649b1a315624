// accel-migrate: the command line. Exit codes: 0 all files migrated (or nothing to do),
// 1 some file was not migrated (compile errors, I/O), 2 usage errors. With --check: 0 no
// findings, 1 findings, 2 usage errors, 3 some file could not be checked.

#include "FileMode.h"
#include "Options.h"
#include "Project.h"

#include <accel/rewriters/engine/ProjectRule.h>
#include <accel/rewriters/engine/Rule.h>

#include <llvm/Support/InitLLVM.h>
#include <llvm/Support/raw_ostream.h>

using namespace accel;

int main(int argc, const char** argv) {
  llvm::InitLLVM X(argc, argv);
  Options Opts;
  int ExitCode = 0;
  if (!parseOptions(argc, argv, Opts, ExitCode))
    return ExitCode;
  if (Opts.RuleTable) {
    llvm::outs() << ruleTableMarkdown();
    return 0;
  }
  if (Opts.ListRules) {
    for (const auto& I : fileRuleInfos())
      llvm::outs() << I.Id << "\t" << I.Summary << "\n";
    for (const auto& R : projectRuleTable())
      llvm::outs() << R.Info.Id << "\t" << R.Info.Summary << " (project mode)\n";
    return 0;
  }
  return Opts.projectMode() ? runProject(Opts) : runFiles(Opts);
}
