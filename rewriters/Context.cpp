#include "accel/rewriters/Context.h"

#include <clang/AST/ExprCXX.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Lex/Lexer.h>

using namespace clang;

namespace accel {

MigrationContext::MigrationContext(ASTContext& AST, EditSink& Sink,
                                   std::vector<IncludeSite> Includes)
    : AST(AST), SM(AST.getSourceManager()), Sink(Sink), Includes(std::move(Includes)) {
  for (Decl* D : AST.getTranslationUnitDecl()->decls()) {
    auto* FD = dyn_cast<FunctionDecl>(D);
    if (FD && FD->isMain() && FD->hasBody() && inMainFile(FD->getLocation()))
      MainFn = FD;
  }
  if (const VarDecl* V = MainFn ? existingAccelerator(MainFn->getBody()) : nullptr) {
    HasAcceleratorVar = true;
    AcceleratorName = V->getName().str();
  }
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
  return Loc.isValid() && SM.isWrittenInMainFile(SM.getExpansionLoc(Loc));
}

DynTypedNodeList MigrationContext::parents(const DynTypedNode& Node) const {
  return AST.getParentMapContext().getParents(Node);
}

const FunctionDecl* MigrationContext::enclosingFunction(const DynTypedNode& Node,
                                                        bool* InLambda) const {
  if (InLambda)
    *InLambda = false;
  DynTypedNode Cur = Node;
  for (int Depth = 0; Depth < 512; ++Depth) {
    auto Ps = parents(Cur);
    if (Ps.empty())
      return nullptr;
    Cur = Ps[0];
    if (Cur.get<LambdaExpr>() && InLambda)
      *InLambda = true;
    if (const auto* FD = Cur.get<FunctionDecl>())
      return FD;
    if (Cur.get<TranslationUnitDecl>())
      return nullptr;
  }
  return nullptr;
}

std::string MigrationContext::accel(const DynTypedNode& Node) {
  NeedsRuntime = true;
  bool InLambda = false;
  const FunctionDecl* FD = enclosingFunction(Node, &InLambda);
  if (MainFn && FD && FD->getCanonicalDecl() == MainFn->getCanonicalDecl() && !InLambda) {
    NeedsLocalAccelerator = true;
    return AcceleratorName;
  }
  return "accelerate::Accelerator::current()";
}

const Stmt* MigrationContext::enclosingStatement(const Stmt* E, const Stmt** Container) const {
  DynTypedNode Cur = DynTypedNode::create(*E);
  const Stmt* Last = E;
  for (int Depth = 0; Depth < 512; ++Depth) {
    auto Ps = parents(Cur);
    if (Ps.empty())
      return nullptr;
    const Stmt* P = Ps[0].get<Stmt>();
    if (!P)
      return nullptr;
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
    Last = P;
    Cur = Ps[0];
  }
  return nullptr;
}

std::string MigrationContext::text(SourceRange R) const {
  CharSourceRange CR =
      Lexer::makeFileCharRange(CharSourceRange::getTokenRange(R), SM, AST.getLangOpts());
  if (CR.isInvalid())
    return "";
  return Lexer::getSourceText(CR, SM, AST.getLangOpts()).str();
}

std::string MigrationContext::indentOf(SourceLocation Loc) const {
  SourceLocation L = SM.getExpansionLoc(Loc);
  auto [FID, Off] = SM.getDecomposedLoc(L);
  StringRef Buf = SM.getBufferData(FID);
  unsigned Start = Off;
  while (Start > 0 && Buf[Start - 1] != '\n')
    --Start;
  unsigned End = Start;
  while (End < Buf.size() && (Buf[End] == ' ' || Buf[End] == '\t'))
    ++End;
  return Buf.slice(Start, End).str();
}

}  // namespace accel
