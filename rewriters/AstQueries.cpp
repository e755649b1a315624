// Questions about where a node sits, answered with AST matchers (RuleSupport.h).

#include "RuleSupport.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

// Clang 18 and later keep a default member initialiser's expression under two parents when
// an implicit constructor uses it (the FieldDecl, and the CXXDefaultInitExpr's rewritten
// init in that constructor), and the written parent may be the implicit one. Either way the
// member is the field: look through every parent a few implicit levels up.
const DeclaratorDecl* rebuiltMemberInit(MigrationContext& Ctx, const CallExpr* Call) {
  std::vector<DynTypedNode> Level = {DynTypedNode::create(*Call)};
  for (int Depth = 0; Depth < 8 && !Level.empty(); ++Depth) { // casts and cleanups at most
    std::vector<DynTypedNode> Next;
    for (const DynTypedNode& N : Level)
      for (const DynTypedNode& P : Ctx.AST.getParentMapContext().getParents(N)) {
        if (const auto* F = P.get<FieldDecl>())
          return F;
        if (const auto* DI = P.get<CXXDefaultInitExpr>())
          return DI->getField();
        if (!P.get<Decl>())
          Next.push_back(P);
      }
    Level = std::move(Next);
  }
  return nullptr;
}

StatementMatcher loopStmt() {
  return stmt(ast_matchers::anyOf(forStmt(), whileStmt(), doStmt(), cxxForRangeStmt()));
}

bool isLoop(const Stmt* S) {
  return isa<ForStmt>(S) || isa<WhileStmt>(S) || isa<DoStmt>(S) || isa<CXXForRangeStmt>(S);
}

const Stmt* nearestAncestor(MigrationContext& Ctx, const Stmt* S, const StatementMatcher& M) {
  auto Found = match(stmt(hasAncestor(stmt(M).bind("a"))), *S, Ctx.AST);
  return Found.empty() ? nullptr : Found[0].getNodeAs<Stmt>("a");
}

bool encloses(MigrationContext& Ctx, const Stmt* Outer, const Stmt* Inner) {
  return !match(stmt(hasAncestor(stmt(equalsNode(Outer)))), *Inner, Ctx.AST).empty();
}

} // namespace accel
