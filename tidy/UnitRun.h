#pragma once
// The rules depend on each other's facts (loaders, devices, prepared objects), so they run
// once per translation unit for all accelerate-* checks together; each check then reports
// only the diagnostics of its own rule id.

#include <accel/rewriters/engine/Migration.h>

#include <memory>
#include <vector>

namespace clang {
class ASTContext;
class Preprocessor;
} // namespace clang

namespace accel::tidy {

class UnitRun {
 public:
  // The run of the translation unit PP preprocesses: the first check asking creates it and
  // attaches the include collector; the others share it. It lives as long as some check
  // of that translation unit holds it.
  static std::shared_ptr<UnitRun> forPreprocessor(clang::Preprocessor& PP);

  void setAST(clang::ASTContext& Context) { AST = &Context; }
  // Runs every rule on the first call (at the end of the translation unit, never inside a
  // match: migrateUnit changes the traversal scope). Empty when the unit did not compile,
  // as accel-migrate refuses such files.
  const std::vector<MigrationDiagnostic>& diagnostics();

 private:
  std::vector<IncludeSite> Includes;
  clang::ASTContext* AST = nullptr;
  bool Done = false;
  std::vector<MigrationDiagnostic> Diagnostics;
};

} // namespace accel::tidy
