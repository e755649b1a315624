#include "accel/rewriters/engine/Context.h"

#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/ASTMatchers/ASTMatchers.h>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Lex/Lexer.h>
#include <llvm/ADT/Twine.h>

#include <cstdlib>
#include <llvm/Support/ErrorHandling.h>

using namespace clang;

namespace accel {

MigrationContext::MigrationContext(ASTContext& AST, EditSink& Sink,
                                   std::vector<IncludeSite> Includes, FileID Target)
    : AST(AST), SM(AST.getSourceManager()), Sink(Sink), Includes(std::move(Includes)),
      Target(Target) {
  for (Decl* D : AST.getTranslationUnitDecl()->decls()) {
    auto* FD = dyn_cast<FunctionDecl>(D);
    if (FD && FD->isMain() && FD->hasBody() && inMainFile(FD->getLocation()))
      MainFn = FD;
  }
  if (const VarDecl* V = MainFn ? existingAccelerator(MainFn->getBody()) : nullptr)
    AcceleratorName = V->getName().str();
  findMainScopes();
}

namespace {

// The DeclStmt declaring V inside S and the block holding it.
bool findDeclBlock(const Stmt* S, const VarDecl* V, const CompoundStmt*& Block,
                   const DeclStmt*& Decl) {
  if (!S)
    return false;
  if (const auto* CS = dyn_cast<CompoundStmt>(S))
    for (const Stmt* C : CS->body())
      if (const auto* DS = dyn_cast<DeclStmt>(C))
        for (const clang::Decl* D : DS->decls())
          if (D == V) {
            Block = CS;
            Decl = DS;
            return true;
          }
  for (const Stmt* C : S->children())
    if (findDeclBlock(C, V, Block, Decl))
      return true;
  return false;
}

// Lambdas and local classes: main's `accelerator` is not visible in their bodies.
void collectHidden(const Stmt* S, std::vector<SourceRange>& Out) {
  if (!S)
    return;
  if (isa<LambdaExpr>(S)) {
    Out.push_back(S->getSourceRange());
    return;
  }
  if (const auto* DS = dyn_cast<DeclStmt>(S))
    for (const Decl* D : DS->decls())
      if (isa<CXXRecordDecl>(D))
        Out.push_back(D->getSourceRange());
  for (const Stmt* C : S->children())
    collectHidden(C, Out);
}

} // namespace

void MigrationContext::findMainScopes() {
  const auto* Body = MainFn ? dyn_cast<CompoundStmt>(MainFn->getBody()) : nullptr;
  if (!Body)
    return;
  ScopeBegin = Body->getLBracLoc();
  ScopeEnd = Body->getRBracLoc();
  if (const VarDecl* V = existingAccelerator(Body)) {
    const CompoundStmt* Block = nullptr;
    const DeclStmt* DS = nullptr;
    if (findDeclBlock(Body, V, Block, DS)) {
      ScopeBegin = DS->getEndLoc();
      ScopeEnd = Block->getRBracLoc();
    } else {
      ScopeBegin = ScopeEnd = SourceLocation(); // somewhere no code of main sees
    }
  }
  collectHidden(Body, Hidden);
}

const VarDecl* existingAccelerator(const Stmt* S) {
  if (!S)
    return nullptr;
  if (const auto* DS = dyn_cast<DeclStmt>(S))
    for (const Decl* D : DS->decls()) {
      const auto* V = dyn_cast<VarDecl>(D);
      const auto* RD = V ? V->getType()->getAsCXXRecordDecl() : nullptr;
      if (RD && RD->getQualifiedNameAsString() == "accelerate::Accelerator")
        return V;
    }
  for (const Stmt* C : S->children())
    if (const VarDecl* V = existingAccelerator(C))
      return V;
  return nullptr;
}

bool MigrationContext::inMainFile(SourceLocation Loc) const {
  return Loc.isValid() && SM.getFileID(SM.getExpansionLoc(Loc)) == Target;
}

DynTypedNodeList MigrationContext::parents(const DynTypedNode& Node) const {
  return AST.getParentMapContext().getParents(Node);
}

DynTypedNode MigrationContext::writtenParent(const DynTypedNode& Node) const {
  ParentMapContext& PMC = AST.getParentMapContext();
  TraversalKind Saved = PMC.getTraversalKind();
  PMC.setTraversalKind(TK_IgnoreUnlessSpelledInSource);
  DynTypedNodeList Ps = PMC.getParents(Node);
  PMC.setTraversalKind(Saved);
  return Ps.empty() ? DynTypedNode() : Ps[0];
}

llvm::SmallVector<DynTypedNode, 1> MigrationContext::ascend(const DynTypedNode& Node,
                                                            Ascent How) const {
  if (How == Ascent::Written) {
    DynTypedNode P = writtenParent(Node);
    return P.getNodeKind().isNone() ? llvm::SmallVector<DynTypedNode, 1>()
                                    : llvm::SmallVector<DynTypedNode, 1>{P};
  }
  DynTypedNodeList Ps = parents(Node);
  if (Ps.empty())
    return {};
  if (How == Ascent::All)
    return llvm::SmallVector<DynTypedNode, 1>(Ps.begin(), Ps.end());
  DynTypedNode P = Ps[0];
  if (How == Ascent::OwningDecl)
    for (const DynTypedNode& Q : Ps)
      if (Q.get<Decl>())
        P = Q;
  return {P};
}

const CompoundStmt* MigrationContext::declaringBlock(const VarDecl* V, const DeclStmt** DS) const {
  using namespace clang::ast_matchers;
  auto M = match(varDecl(hasParent(declStmt(hasParent(compoundStmt().bind("block"))).bind("ds"))),
                 *V, AST);
  if (M.empty())
    return nullptr;
  if (DS)
    *DS = M[0].getNodeAs<DeclStmt>("ds");
  return M[0].getNodeAs<CompoundStmt>("block");
}

const FunctionDecl* MigrationContext::enclosingFunction(const DynTypedNode& Node,
                                                        bool* InLambda) const {
  if (InLambda)
    *InLambda = false;
  auto Found = walkAncestors(
      Node, [&](const DynTypedNode& P, const DynTypedNode&) -> std::optional<const FunctionDecl*> {
        if (P.get<LambdaExpr>() && InLambda)
          *InLambda = true;
        if (const auto* FD = P.get<FunctionDecl>())
          return FD;
        if (P.get<TranslationUnitDecl>())
          return nullptr;
        return std::nullopt;
      });
  return Found.value_or(nullptr);
}

MigrationContext::Match::Match(MigrationContext& Ctx, SourceLocation Loc)
    : Ctx(Ctx), Loc(Loc), Before(Ctx.Sink.outcomes()) {}

MigrationContext::Match::~Match() {
  if (Done || Ctx.Sink.outcomes() != Before || !Ctx.Running)
    return;
  const RuleInfo& Info = Ctx.Running->Info;
  if (const char* Audit = std::getenv("ACCEL_MIGRATE_AUDIT"); Audit && *Audit == '1') {
    SourceLocation L = Ctx.SM.getExpansionLoc(Loc);
    llvm::report_fatal_error(llvm::Twine("accel-migrate: internal: ") + Info.Id +
                                 " recognised its idiom at line " +
                                 llvm::Twine(Ctx.SM.getSpellingLineNumber(L)) + ", column " +
                                 llvm::Twine(Ctx.SM.getSpellingColumnNumber(L)) +
                                 " and ended without an edit or a warning",
                             false);
  }
  Ctx.warn(Loc, Info.Id,
           std::string(Info.Summary) +
               ": recognised here but not rewritten (a form the tool does not handle yet); "
               "migrate it by hand");
}

void MigrationContext::checkAccess(AnalysisId A, bool Write) const {
  if (!Running ? !Write : (Running->provides(A) || (!Write && Running->needs(A))))
    return;
  llvm::report_fatal_error(
      llvm::Twine("accel-migrate: ") + (Running ? Running->Info.Id : "the driver") +
          (Write ? " writes" : " reads") + " the analysis '" + analysisName(A) +
          "' without declaring it where the rule registers (the end of its file)",
      false);
}

std::string MigrationContext::current(Change& C) {
  C.CallsCurrent = true;
  return "accelerate::Accelerator::current()";
}

std::string MigrationContext::accel(const DynTypedNode& Node, Change& C) {
  provide<AcceleratorRequests>().Runtime = true;
  // Decided by where the text lands, not by the AST's parents: an expression can have
  // several (a default argument or member initialiser is also a child of every use).
  SourceLocation L = SM.getExpansionLoc(Node.getSourceRange().getBegin());
  auto Before = [this](SourceLocation A, SourceLocation B) {
    return SM.isBeforeInTranslationUnit(A, B);
  };
  bool InScope = ScopeBegin.isValid() && L.isValid() && SM.getFileID(L) == Target &&
                 Before(ScopeBegin, L) && Before(L, ScopeEnd);
  for (SourceRange H : Hidden)
    if (InScope && !Before(L, H.getBegin()) && !Before(H.getEnd(), L))
      InScope = false;
  if (InScope) {
    provide<AcceleratorRequests>().Local = true;
    return AcceleratorName;
  }
  return current(C);
}

const Stmt* MigrationContext::enclosingStatement(const Stmt* E, const Stmt** Container) const {
  auto Found = walkAncestors(
      DynTypedNode::create(*E),
      [&](const DynTypedNode& Parent, const DynTypedNode& Child) -> std::optional<const Stmt*> {
        const Stmt* P = Parent.get<Stmt>();
        if (!P)
          return nullptr;
        // Child is a statement: the walk stops at the first parent that is not one.
        const Stmt* Last = Child.get<Stmt>();
        bool IsBody = false;
        if (isa<CompoundStmt>(P))
          IsBody = true;
        else if (const auto* If = dyn_cast<IfStmt>(P))
          IsBody = If->getThen() == Last || If->getElse() == Last;
        else if (const auto* F = dyn_cast<ForStmt>(P))
          IsBody = F->getBody() == Last;
        else if (const auto* W = dyn_cast<WhileStmt>(P))
          IsBody = W->getBody() == Last;
        else if (const auto* R = dyn_cast<CXXForRangeStmt>(P))
          IsBody = R->getBody() == Last;
        else if (const auto* D = dyn_cast<DoStmt>(P))
          IsBody = D->getBody() == Last;
        if (IsBody) {
          if (Container)
            *Container = P;
          return Last;
        }
        return std::nullopt;
      });
  return Found.value_or(nullptr);
}

std::string MigrationContext::text(SourceRange R) const {
  CharSourceRange CR =
      Lexer::makeFileCharRange(CharSourceRange::getTokenRange(R), SM, AST.getLangOpts());
  if (CR.isInvalid())
    return "";
  return Lexer::getSourceText(CR, SM, AST.getLangOpts()).str();
}

std::string MigrationContext::indentOf(SourceLocation Loc) const {
  return Lexer::getIndentationForLine(SM.getExpansionLoc(Loc), SM).str();
}

} // namespace accel
