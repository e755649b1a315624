// Facts about one file that only mean something next to the other files of the program:
// whether it defines main(), which functions it defines, which functions it uses without
// defining them, and whether its code already calls accelerate::Accelerator::current().
// Project mode joins them into a call graph between files, so that a main() whose file has
// nothing to migrate still constructs the Accelerator when it calls, through any chain of
// files, code that reaches it through current().

#include "accel/rewriters/engine/Migration.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>

#include <set>

using namespace clang;

namespace accel {
namespace {

class FactsVisitor : public RecursiveASTVisitor<FactsVisitor> {
 public:
  FactsVisitor(SourceManager& SM, FileID Target) : SM(SM), Target(Target) {}

  bool VisitFunctionDecl(FunctionDecl* FD) {
    if (!FD->doesThisDeclarationHaveABody() || !inTarget(FD->getLocation()))
      return true;
    if (FD->isMain())
      DefinesMain = true;
    Defined.insert(FD->getQualifiedNameAsString());
    return true;
  }
  bool VisitDeclRefExpr(DeclRefExpr* E) {
    use(dyn_cast<FunctionDecl>(E->getDecl()), E->getBeginLoc());
    return true;
  }
  bool VisitMemberExpr(MemberExpr* E) { // also `accelerator.current()`
    use(dyn_cast<FunctionDecl>(E->getMemberDecl()), E->getBeginLoc());
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr* E) {
    use(E->getConstructor(), E->getBeginLoc());
    return true;
  }

  bool DefinesMain = false;
  bool CallsCurrent = false;
  std::set<std::string> Defined, External;

 private:
  bool inTarget(SourceLocation L) const {
    return L.isValid() && SM.getFileID(SM.getExpansionLoc(L)) == Target;
  }
  void use(const FunctionDecl* FD, SourceLocation At) {
    if (FD && inTarget(At) && isCurrent(FD))
      CallsCurrent = true;
    // Defined somewhere in this unit (here or in a header): not a link to another file.
    if (!FD || FD->isDefined() || !inTarget(At) ||
        SM.isInSystemHeader(SM.getExpansionLoc(FD->getLocation())))
      return;
    External.insert(FD->getQualifiedNameAsString());
  }

  // accelerate::Accelerator::current() (a user's function of that name is another).
  static bool isCurrent(const FunctionDecl* FD) {
    const auto* MD = dyn_cast<CXXMethodDecl>(FD);
    return MD && MD->isStatic() && MD->getIdentifier() && MD->getName() == "current" &&
           MD->getParent()->getQualifiedNameAsString() == "accelerate::Accelerator";
  }

  SourceManager& SM;
  FileID Target;
};

} // namespace

void collectProgramFacts(ASTContext& AST, FileID Target, UnitResult& R) {
  SourceManager& SM = AST.getSourceManager();
  FactsVisitor V(SM, Target);
  for (Decl* D : AST.getTranslationUnitDecl()->decls())
    if (SM.getFileID(SM.getExpansionLoc(D->getLocation())) == Target)
      V.TraverseDecl(D);
  R.DefinesMain = V.DefinesMain;
  R.UsesCurrent = V.CallsCurrent; // migrateUnit adds the calls the rules write
  R.DefinedFunctions.assign(V.Defined.begin(), V.Defined.end());
  R.ExternalCalls.assign(V.External.begin(), V.External.end());
}

} // namespace accel
