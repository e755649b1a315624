#include "MigrationCheck.h"

#include <clang/AST/ASTContext.h>
#include <clang/ASTMatchers/ASTMatchers.h>
#include <clang/Basic/CharInfo.h>
#include <clang/Lex/Preprocessor.h>

#include <map>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel::tidy {

void MigrationCheck::registerPPCallbacks(const SourceManager&, Preprocessor* PP, Preprocessor*) {
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

static bool identifierChar(char C) { return isAsciiIdentifierContinue(C) || C == '$'; }

// clang merges a diagnostic's fix-its before clang-tidy sees them, and a pure removal may
// grow there by the blank after it (or become a single space) so that tokens stay apart.
// accel-migrate applies its edits as they are, so such a removal is handed over as a
// replacement that keeps one neighbouring character: the result is the same text.
// True (conservatively) when clang might adjust the removal [B, E).
static bool mayBeAdjusted(StringRef Buf, unsigned B, unsigned E) {
  if (E >= Buf.size())
    return false;
  return Buf[E] == ' ' || (B > 0 && identifierChar(Buf[B - 1]) && identifierChar(Buf[E]));
}

// Touch counts, per offset, the edits of the unit that start or end there (E itself
// included): absorbing a character at an offset another edit touches would make
// clang-tidy see overlapping fixes.
static Edit protectRemoval(StringRef Buf, const Edit& E,
                           const std::map<unsigned, unsigned>& Touch) {
  if (E.Length == 0 || !E.Text.empty() || !mayBeAdjusted(Buf, E.Offset, E.Offset + E.Length))
    return E;
  auto Others = [&](unsigned Offset) {
    auto It = Touch.find(Offset);
    return It == Touch.end() ? 0u : It->second - 1; // minus E's own start or end
  };
  unsigned End = E.Offset + E.Length;
  if (Others(End) == 0)
    return {E.Offset, E.Length + 1, std::string(1, Buf[End])};
  if (E.Offset > 0 && Others(E.Offset) == 0)
    return {E.Offset - 1, E.Length + 1, std::string(1, Buf[E.Offset - 1])};
  return E;
}

static std::map<unsigned, unsigned> touchCounts(const std::vector<MigrationDiagnostic>& All) {
  std::map<unsigned, unsigned> Out;
  for (const MigrationDiagnostic& D : All)
    if (!D.Acknowledged)
      for (const Edit& E : D.Fixes) {
        ++Out[E.Offset];
        ++Out[E.Offset + E.Length];
      }
  return Out;
}

void MigrationCheck::onEndOfTranslationUnit() {
  if (!Run || !SM)
    return;
  FileID Main = SM->getMainFileID();
  StringRef Buf = SM->getBufferData(Main);
  const std::vector<MigrationDiagnostic>& All = Run->diagnostics();
  std::map<unsigned, unsigned> Touch = touchCounts(All);
  for (const MigrationDiagnostic& D : All) {
    // A warning whose comment could not be inserted carries "<id>#comment".
    llvm::StringRef Id = D.RuleId;
    Id.consume_back("#comment");
    if (D.Acknowledged || Id != RuleId)
      continue;
    SourceLocation Loc = SM->getComposedLoc(Main, D.Offset);
    if (D.IsNote) {
      // clang-tidy's notes belong to a warning; a remark says the same on its own, and is
      // neither a warning nor an error under -warnings-as-errors (the code needs nothing).
      diag(Loc, "%0", DiagnosticIDs::Remark) << D.Message;
      continue;
    }
    {
      auto B = diag(Loc, "%0") << D.Message;
      for (const Edit& E : D.Fixes)
        B << toFixIt(*SM, protectRemoval(Buf, E, Touch));
    }
    if (!D.Note.empty())
      diag(Loc, "%0", DiagnosticIDs::Note) << D.Note;
  }
  Run.reset();
}

} // namespace accel::tidy
