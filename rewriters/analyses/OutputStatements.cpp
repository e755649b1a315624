#include "analyses/OutputStatements.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

std::vector<const Stmt*> bodiesOf(const Stmt* S) {
  if (const auto* If = dyn_cast<IfStmt>(S))
    return {If->getThen(), If->getElse()};
  if (const auto* F = dyn_cast<ForStmt>(S))
    return {F->getBody()};
  if (const auto* W = dyn_cast<WhileStmt>(S))
    return {W->getBody()};
  if (const auto* R = dyn_cast<CXXForRangeStmt>(S))
    return {R->getBody()};
  return {};
}

bool isCout(const Stmt* S) {
  const auto* DR = dyn_cast<DeclRefExpr>(S);
  if (!DR)
    return false;
  const auto* V = dyn_cast<VarDecl>(DR->getDecl());
  return V && V->getName() == "cout" && V->isInStdNamespace();
}

bool isOfstreamType(QualType T) {
  const auto* RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return RD && RD->getQualifiedNameAsString() == "std::basic_ofstream";
}

bool isOutputCall(const CallExpr* C) {
  std::string N = calleeName(C);
  StringRef Name(N);
  if (Name == "torch::save" || Name == "printf" || Name == "std::printf" || Name == "puts" ||
      Name == "std::puts" || Name.ends_with("filesystem::create_directories") ||
      Name.ends_with("filesystem::create_directory") ||
      (Name.starts_with("fmt::") && (Name.ends_with("::print") || Name.ends_with("::println"))) ||
      Name.ends_with("imwrite") || Name.starts_with("stbi_write_") || Name.ends_with("save_image"))
    return true;
  MemberCall M;
  if (getMemberCall(C, M) && M.Name == "save_to")
    return true;
  return false;
}

bool onlyOnMainProcess(const Expr* E) {
  E = E->IgnoreImplicit()->IgnoreParenImpCasts();
  if (const auto* B = dyn_cast<BinaryOperator>(E)) {
    if (B->getOpcode() == BO_LAnd)
      return onlyOnMainProcess(B->getLHS()) || onlyOnMainProcess(B->getRHS());
    if (B->getOpcode() != BO_EQ)
      return false;
    auto IsIndex = [](const Expr* X) {
      const auto* M = dyn_cast<CXXMemberCallExpr>(X->IgnoreParenImpCasts());
      return M && M->getMethodDecl() && M->getMethodDecl()->getName() == "process_index";
    };
    auto IsZero = [](const Expr* X) {
      const auto* L = dyn_cast<IntegerLiteral>(X->IgnoreParenImpCasts());
      return L && L->getValue() == 0;
    };
    return (IsIndex(B->getLHS()) && IsZero(B->getRHS())) ||
           (IsZero(B->getLHS()) && IsIndex(B->getRHS()));
  }
  const auto* M = dyn_cast<CXXMemberCallExpr>(E);
  const CXXMethodDecl* MD = M ? M->getMethodDecl() : nullptr;
  return MD && (MD->getName() == "is_main_process" || MD->getName() == "is_local_main_process");
}

bool underMainProcessTest(MigrationContext& Ctx, const Stmt* S) {
  auto Fn = match(stmt(forCallable(decl().bind("fn"))), *S, Ctx.AST);
  const Decl* F = Fn.empty() ? nullptr : Fn[0].getNodeAs<Decl>("fn");
  if (!F || !F->getBody())
    return false;
  auto Enclosing =
      ifStmt(forCallable(equalsNode(F)),
             hasThen(ast_matchers::anyOf(equalsNode(S), hasDescendant(stmt(equalsNode(S))))))
          .bind("if");
  for (const auto& N : match(findAll(Enclosing), *F->getBody(), Ctx.AST))
    if (onlyOnMainProcess(N.getNodeAs<IfStmt>("if")->getCond()))
      return true;
  return false;
}

std::string filePathOf(MigrationContext& Ctx, const CallExpr* Call, bool Save) {
  std::string Name = calleeName(Call);
  MemberCall M;
  bool Member = getMemberCall(Call, M);
  const Expr* Path = nullptr;
  const auto* MC = dyn_cast<CXXMemberCallExpr>(Call);
  bool OfAccelerator = MC && MC->getRecordDecl() &&
                       MC->getRecordDecl()->getQualifiedNameAsString() == "accelerate::Accelerator";
  // torch::save(obj, path), accelerator.save(obj, path) and torch::load(obj, path) name
  // the file second; save_to(path) and load_from(path) first.
  const bool PathSecond =
      Save ? (Name == "torch::save" || (Member && M.Name == "save" && OfAccelerator))
           : Name == "torch::load";
  if (PathSecond)
    Path = Call->getNumArgs() >= 2 ? Call->getArg(1) : nullptr;
  else if (Member && M.Name == (Save ? "save_to" : "load_from"))
    Path = Call->getNumArgs() >= 1 ? Call->getArg(0) : nullptr;
  std::string Text = Path ? Ctx.text(Path->getSourceRange()) : "";
  llvm::erase_if(Text, [](char Ch) { return Ch == ' ' || Ch == '\t' || Ch == '\n'; });
  return Text;
}

bool streamStateChecked(const VarDecl* V) {
  const auto* FD = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
  return FD && FD->getBody() && anyOf(FD->getBody(), [V](const Stmt* X) {
           if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(X))
             return Op->getOperator() == OO_Exclaim && Op->getNumArgs() == 1 &&
                    referencedDecl(Op->getArg(0)) == V;
           if (const auto* MC = dyn_cast<CXXMemberCallExpr>(X))
             if (MC->getMethodDecl() && isa<CXXConversionDecl>(MC->getMethodDecl()) &&
                 referencedDecl(MC->getImplicitObjectArgument()) == V)
               return true;
           const auto* C = dyn_cast<CallExpr>(X);
           MemberCall M;
           if (C && getMemberCall(C, M) && referencedDecl(M.Object) == V)
             return M.Name == "is_open" || M.Name == "good" || M.Name == "fail" ||
                    M.Name == "operator bool" || M.Name == "operator!" || M.Name == "bad";
           if (const auto* U = dyn_cast<UnaryOperator>(X))
             return U->getOpcode() == UO_LNot && referencedDecl(U->getSubExpr()) == V;
           if (const auto* IC = dyn_cast<ImplicitCastExpr>(X))
             return IC->getType()->isBooleanType() && referencedDecl(IC->getSubExpr()) == V;
           return false;
         });
}

bool waitsBetween(MigrationContext& Ctx, const CallExpr* Save, const Stmt* At) {
  for (const CallExpr* Call : userCalls(Ctx)) {
    MemberCall M;
    if (getMemberCall(Call, M) && M.Name == "wait_for_everyone" &&
        Ctx.SM.isBeforeInTranslationUnit(Save->getEndLoc(), Call->getBeginLoc()) &&
        Ctx.SM.isBeforeInTranslationUnit(Call->getBeginLoc(), At->getBeginLoc()))
      return true;
  }
  return false;
}

} // namespace accel
