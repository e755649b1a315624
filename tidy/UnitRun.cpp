#include "UnitRun.h"

#include <clang/AST/ASTContext.h>
#include <clang/Lex/Preprocessor.h>

#include <map>
#include <mutex>

namespace accel::tidy {

std::shared_ptr<UnitRun> UnitRun::forPreprocessor(clang::Preprocessor& PP) {
  static std::mutex Lock;
  // Weak: a preprocessor's address may be reused by a later translation unit once this
  // one's checks (the only owners) are gone.
  static std::map<const clang::Preprocessor*, std::weak_ptr<UnitRun>> Runs;
  std::lock_guard<std::mutex> Guard(Lock);
  for (auto It = Runs.begin(); It != Runs.end();)
    It = It->second.expired() ? Runs.erase(It) : std::next(It);
  if (auto Existing = Runs[&PP].lock())
    return Existing;
  auto Run = std::make_shared<UnitRun>();
  Runs[&PP] = Run;
  PP.addPPCallbacks(std::make_unique<IncludeCollector>(PP.getSourceManager(), Run->Includes));
  return Run;
}

const std::vector<MigrationDiagnostic>& UnitRun::diagnostics() {
  if (Done)
    return Diagnostics;
  Done = true;
  if (!AST || AST->getDiagnostics().hasErrorOccurred())
    return Diagnostics;
  Diagnostics = migrateUnit(*AST, std::move(Includes)).Diagnostics;
  return Diagnostics;
}

} // namespace accel::tidy
