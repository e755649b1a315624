// The AST helpers the rules share (declared in RuleSupport.h): which calls and variables
// are the user's, where a node sits, what is written where.

#include "analyses/RuleSupport.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

// Clang 18 and later keep a default member initialiser's expression under two parents when
// an implicit constructor uses it (the FieldDecl, and the CXXDefaultInitExpr's rewritten
// init in that constructor), and the written parent may be the implicit one. Either way the
// member is the field: look through every parent a few implicit levels up.
const DeclaratorDecl* rebuiltMemberInit(MigrationContext& Ctx, const CallExpr* Call) {
  auto Member = Ctx.walkAncestors(
      DynTypedNode::create(*Call),
      [](const DynTypedNode& P, const DynTypedNode&) -> std::optional<const DeclaratorDecl*> {
        if (const auto* F = P.get<FieldDecl>())
          return F;
        if (const auto* DI = P.get<CXXDefaultInitExpr>())
          return DI->getField();
        return std::nullopt;
      },
      MigrationContext::Ascent::All, /*MaxDepth=*/8); // casts and cleanups at most
  return Member.value_or(nullptr);
}

const DeclaratorDecl* declInitialisedBy(MigrationContext& Ctx, const CallExpr* Call) {
  DynTypedNode P = Ctx.writtenParent(DynTypedNode::create(*Call));
  if (P.get<ParenListExpr>()) // `T x(f())` in a template pattern
    P = Ctx.writtenParent(P);
  if (const auto* V = P.get<VarDecl>())
    return V;
  if (const auto* F = P.get<FieldDecl>())
    return F;
  if (const auto* CI = P.get<CXXCtorInitializer>())
    return CI->getMember();
  if (const auto* Ctor = P.get<CXXConstructorDecl>())
    for (const CXXCtorInitializer* I : Ctor->inits())
      if (I->getInit() && I->getInit()->IgnoreUnlessSpelledInSource() == Call)
        return I->getMember();
  return rebuiltMemberInit(Ctx, Call);
}

const Expr* assignedBy(MigrationContext& Ctx, const CallExpr* Call) {
  DynTypedNode P = Ctx.writtenParent(DynTypedNode::create(*Call));
  if (const auto* Op = P.get<CXXOperatorCallExpr>())
    return Op->getOperator() == OO_Equal ? Op->getArg(0) : nullptr;
  if (const auto* BO = P.get<BinaryOperator>())
    return BO->isAssignmentOp() ? BO->getLHS() : nullptr;
  return nullptr;
}

const ValueDecl* declHolding(MigrationContext& Ctx, const CallExpr* Call) {
  if (const DeclaratorDecl* D = declInitialisedBy(Ctx, Call))
    return D;
  const Expr* Target = assignedBy(Ctx, Call);
  return Target ? referencedDecl(Target) : nullptr;
}

StatementMatcher loopStmt() {
  return stmt(ast_matchers::anyOf(forStmt(), whileStmt(), doStmt(), cxxForRangeStmt()));
}

bool isLoop(const Stmt* S) {
  return isa<ForStmt>(S) || isa<WhileStmt>(S) || isa<DoStmt>(S) || isa<CXXForRangeStmt>(S);
}

const Stmt* loopBody(const Stmt* S) {
  if (const auto* F = dyn_cast_or_null<ForStmt>(S))
    return F->getBody();
  if (const auto* W = dyn_cast_or_null<WhileStmt>(S))
    return W->getBody();
  if (const auto* D = dyn_cast_or_null<DoStmt>(S))
    return D->getBody();
  if (const auto* R = dyn_cast_or_null<CXXForRangeStmt>(S))
    return R->getBody();
  return nullptr;
}

const Stmt* nearestAncestor(MigrationContext& Ctx, const Stmt* S, const StatementMatcher& M) {
  auto Found = match(stmt(hasAncestor(stmt(M).bind("a"))), *S, Ctx.AST);
  return Found.empty() ? nullptr : Found[0].getNodeAs<Stmt>("a");
}

bool encloses(MigrationContext& Ctx, const Stmt* Outer, const Stmt* Inner) {
  return !match(stmt(hasAncestor(stmt(equalsNode(Outer)))), *Inner, Ctx.AST).empty();
}

std::vector<const CallExpr*> userCalls(MigrationContext& Ctx) {
  std::vector<const CallExpr*> Out;
  for (const auto& N : match(callExpr(unless(isInTemplateInstantiation())).bind("c"), Ctx.AST))
    if (const auto* C = N.getNodeAs<CallExpr>("c"))
      if (Ctx.inMainFile(C->getBeginLoc()))
        Out.push_back(C);
  return Out;
}

std::vector<const VarDecl*> userVars(MigrationContext& Ctx) {
  std::vector<const VarDecl*> Out;
  for (const auto& N : match(varDecl(unless(isInstantiated())).bind("v"), Ctx.AST))
    if (const auto* V = N.getNodeAs<VarDecl>("v"))
      if (Ctx.inMainFile(V->getLocation()))
        Out.push_back(V);
  return Out;
}

// LibTorch's inline API calls what programs call (torch::dropout, backward()): it is not
// the program's code (inLibraryCode).
bool inProgramCode(const MigrationContext& Ctx, SourceLocation L) {
  return Ctx.inMainFile(Ctx.SM.getExpansionLoc(L)) || !inLibraryCode(Ctx.SM, L);
}

// Whether L's file is reached through #includes from the migrated file. In project mode a
// header is migrated inside the unit of a source that includes it: the source's own
// declarations are then neither the header's nor a header of it.
static bool includedFromTarget(const MigrationContext& Ctx, SourceLocation L) {
  for (FileID F = Ctx.SM.getFileID(Ctx.SM.getExpansionLoc(L)); F.isValid();) {
    SourceLocation Inc = Ctx.SM.getIncludeLoc(F);
    if (Inc.isInvalid())
      return false;
    F = Ctx.SM.getFileID(Inc);
    if (F == Ctx.Target)
      return true;
  }
  return false;
}

std::vector<const Decl*> programHeaderDecls(MigrationContext& Ctx) {
  std::vector<const Decl*> Out;
  for (const Decl* D : Ctx.AST.getTranslationUnitDecl()->decls())
    if (!Ctx.inMainFile(D->getLocation()) && inProgramCode(Ctx, D->getLocation()) &&
        includedFromTarget(Ctx, D->getLocation()))
      Out.push_back(D);
  return Out;
}

// Calls and constructions keep their arguments in different node types: one count for both.
template <typename Node> static unsigned countWrittenArgs(const Node* N) {
  unsigned Count = 0;
  for (const Expr* A : N->arguments())
    if (!isa<CXXDefaultArgExpr>(A))
      ++Count;
  return Count;
}

unsigned writtenArgs(const CallExpr* Call) { return countWrittenArgs(Call); }

unsigned writtenArgs(const CXXConstructExpr* Construct) { return countWrittenArgs(Construct); }

SourceLocation editableLoc(MigrationContext& Ctx, SourceLocation Loc) {
  if (Loc.isFileID())
    return Loc;
  // A token of a macro argument is written in the file; one of a macro body is not ours.
  if (Ctx.SM.isMacroArgExpansion(Loc)) {
    SourceLocation S = Ctx.SM.getSpellingLoc(Loc);
    if (S.isFileID())
      return S;
  }
  return {};
}

SourceLocation nextTokenLoc(MigrationContext& Ctx, SourceLocation Loc, tok::TokenKind Kind) {
  Loc = editableLoc(Ctx, Loc);
  if (Loc.isInvalid())
    return {};
  auto T = Lexer::findNextToken(Loc, Ctx.SM, Ctx.AST.getLangOpts());
  if (T && T->is(Kind))
    return T->getLocation();
  return {};
}

SourceRange calleeNameRange(const CallExpr* Call) {
  const Expr* Callee = Call->getCallee()->IgnoreParenImpCasts();
  if (const auto* DR = dyn_cast<DeclRefExpr>(Callee))
    return {DR->getBeginLoc(), DR->getNameInfo().getEndLoc()};
  if (const auto* UL = dyn_cast<UnresolvedLookupExpr>(Callee))
    return {UL->getBeginLoc(), UL->getNameInfo().getEndLoc()};
  return {};
}

bool refersTo(const Stmt* S, const ValueDecl* D) {
  return anyOf(S, [D](const Stmt* X) {
    if (const auto* DR = dyn_cast<DeclRefExpr>(X))
      return DR->getDecl() == D;
    if (const auto* ME = dyn_cast<MemberExpr>(X))
      return ME->getMemberDecl() == D;
    return false;
  });
}

} // namespace accel
