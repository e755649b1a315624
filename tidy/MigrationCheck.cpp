#include "MigrationCheck.h"

#include <clang/AST/ASTContext.h>
#include <clang/ASTMatchers/ASTMatchers.h>
#include <clang/Lex/Preprocessor.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel::tidy {

void MigrationCheck::registerPPCallbacks(const SourceManager&, Preprocessor* PP,
                                         Preprocessor*) {
  Run = UnitRun::forPreprocessor(*PP);
}

// The match only hands over the ASTContext; the rules run at the end of the unit.
void MigrationCheck::registerMatchers(MatchFinder* Finder) {
  Finder->addMatcher(translationUnitDecl().bind("tu"), this);
}

void MigrationCheck::check(const MatchFinder::MatchResult& Result) {
  SM = Result.SourceManager;
  if (Run)
    Run->setAST(*Result.Context);
}

static FixItHint toFixIt(SourceManager& SM, const Edit& E) {
  SourceLocation S = SM.getComposedLoc(SM.getMainFileID(), E.Offset);
  if (E.Length == 0)
    return FixItHint::CreateInsertion(S, E.Text);
  return FixItHint::CreateReplacement(
      CharSourceRange::getCharRange(S, S.getLocWithOffset(E.Length)), E.Text);
}

void MigrationCheck::onEndOfTranslationUnit() {
  if (!Run || !SM)
    return;
  FileID Main = SM->getMainFileID();
  for (const MigrationDiagnostic& D : Run->diagnostics()) {
    // A warning whose comment could not be inserted carries "<id>#comment".
    llvm::StringRef Id = D.RuleId;
    Id.consume_back("#comment");
    if (D.Acknowledged || Id != RuleId)
      continue;
    SourceLocation Loc = SM->getComposedLoc(Main, D.Offset);
    {
      auto B = diag(Loc, "%0") << D.Message;
      for (const Edit& E : D.Fixes)
        B << toFixIt(*SM, E);
    }
    if (!D.Note.empty())
      diag(Loc, "%0", DiagnosticIDs::Note) << D.Note;
  }
  Run.reset();
}

}  // namespace accel::tidy
