#pragma once
// Shared by the rule implementations (not part of the library's interface): the AST
// helpers (AstQueries.cpp) and how a rule registers itself (RegisterRule.h).

#include "engine/RegisterRule.h"

#include "accel/rewriters/analyses/TorchTypes.h"
#include "accel/rewriters/engine/Context.h"
#include "accel/rewriters/engine/ProjectRule.h"
#include "accel/rewriters/engine/Rule.h"

#include <clang/AST/ExprCXX.h>
#include <clang/AST/StmtCXX.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/ASTMatchers/ASTMatchers.h>
#include <clang/Lex/Lexer.h>

namespace accel {

// AST helpers (AstQueries.cpp).
// Every call in the user's code (template patterns included, instantiations excluded).
std::vector<const clang::CallExpr*> userCalls(MigrationContext& Ctx);
// Every variable declared in the user's code (no instantiations).
std::vector<const clang::VarDecl*> userVars(MigrationContext& Ctx);
// Whether L is in the migrated file or in one of the program's own headers (not reached as a
// system header, not LibTorch's own under torch/csrc/, ATen/, c10/, caffe2/).
bool inProgramCode(const MigrationContext& Ctx, clang::SourceLocation L);
// The top-level declarations of the program's own headers that the migrated file includes
// (directly or not), which lie outside the AST's
// traversal scope (Migration.cpp): match on each of them (match(..., *D, Ctx.AST)).
std::vector<const clang::Decl*> programHeaderDecls(MigrationContext& Ctx);

// Number of arguments written at the call (default arguments excluded).
unsigned writtenArgs(const clang::CallExpr* Call);
unsigned writtenArgs(const clang::CXXConstructExpr* Construct);
// Loc itself in the file, the spelling of a macro argument token, or invalid (macro body).
clang::SourceLocation editableLoc(MigrationContext& Ctx, clang::SourceLocation Loc);
// Location of the '(' that follows the token at Loc.
clang::SourceLocation nextTokenLoc(MigrationContext& Ctx, clang::SourceLocation Loc,
                                   clang::tok::TokenKind Kind);
// The callee's name as written (qualifier and name, without template arguments).
clang::SourceRange calleeNameRange(const clang::CallExpr* Call);
// Whether S (or anything inside it) matches Pred.
template <typename Pred> bool anyOf(const clang::Stmt* S, Pred P) {
  if (!S)
    return false;
  if (P(S))
    return true;
  for (const clang::Stmt* C : S->children())
    if (anyOf(C, P))
      return true;
  return false;
}
// True when S names the variable D anywhere.
bool refersTo(const clang::Stmt* S, const clang::ValueDecl* D);

// Where a node sits.
// for, range-for, while and do statements.
clang::ast_matchers::StatementMatcher loopStmt();
bool isLoop(const clang::Stmt* S);
// The body of a loop statement (nullptr for anything else).
const clang::Stmt* loopBody(const clang::Stmt* S);
// The nearest statement enclosing S that M matches, or nullptr.
const clang::Stmt* nearestAncestor(MigrationContext& Ctx, const clang::Stmt* S,
                                   const clang::ast_matchers::StatementMatcher& M);
// Whether Outer contains Inner.
bool encloses(MigrationContext& Ctx, const clang::Stmt* Outer, const clang::Stmt* Inner);

// `#include <Header>` after the file's last LibTorch include (or its last include, or its
// header guard), committed as a change of RuleId (IncludeRule.cpp).
bool insertInclude(MigrationContext& Ctx, const char* RuleId, llvm::StringRef Header);

// The member whose default initialiser holds Call, found through every parent (clang 18+
// gives such an initialiser a second, implicit parent); nullptr if none.
const clang::DeclaratorDecl* rebuiltMemberInit(MigrationContext& Ctx, const clang::CallExpr* Call);

// The declaration a call initialises, as written: `auto x = f()`, `T x(f())` (also in a
// template pattern), a member's default initialiser, a constructor's initialiser list;
// nullptr otherwise (an assignment is not an initialisation).
const clang::DeclaratorDecl* declInitialisedBy(MigrationContext& Ctx, const clang::CallExpr* Call);
// The left side of the assignment whose right side is Call, as written (`loader = f()`);
// nullptr when Call is not assigned.
const clang::Expr* assignedBy(MigrationContext& Ctx, const clang::CallExpr* Call);
// The variable or member that holds Call's value: the declaration it initialises
// (declInitialisedBy), else the variable or member it is assigned to; nullptr otherwise. The
// one answer to "which loader variable did this loader call make" for the rules that follow
// a loader from its making (DataLoaderRule, BatchShapeRule).
const clang::ValueDecl* declHolding(MigrationContext& Ctx, const clang::CallExpr* Call);

} // namespace accel
