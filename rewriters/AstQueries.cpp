// Questions about where a node sits, answered with AST matchers (RuleSupport.h).

#include "RuleSupport.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

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

}  // namespace accel
