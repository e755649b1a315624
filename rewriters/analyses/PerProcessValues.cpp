// Values that can differ between processes (see PerProcessValues.h).

#include "analyses/PerProcessValues.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

PerProcessValues::PerProcessValues(MigrationContext& Ctx) : Ctx(Ctx) { collect(); }

static const FunctionDecl* definitionOf(const FunctionDecl* FD) {
  if (!FD)
    return nullptr;
  if (const FunctionDecl* P = FD->getTemplateInstantiationPattern())
    FD = P;
  return FD->getDefinition() ? FD->getDefinition() : FD;
}

// Arguments bound to non-const references (or passed by address) may be written by the
// call; a non-const member call may change its object.
void PerProcessValues::addCallDefinitions(const CallExpr* C) {
  const FunctionDecl* FD = definitionOf(C->getDirectCallee());
  unsigned First = isa<CXXOperatorCallExpr>(C) && isa_and_nonnull<CXXMethodDecl>(FD) ? 1 : 0;
  for (unsigned I = 0; I < C->getNumArgs(); ++I) {
    const Expr* A = C->getArg(I)->IgnoreParenImpCasts();
    bool Written = false;
    if (const auto* U = dyn_cast<UnaryOperator>(A); U && U->getOpcode() == UO_AddrOf)
      Written = true;
    if (FD && I >= First && I - First < FD->getNumParams()) {
      QualType PT = FD->getParamDecl(I - First)->getType();
      if (PT->isLValueReferenceType() && !PT->getPointeeType().isConstQualified())
        Written = true;
      if (Ctx.inMainFile(FD->getLocation())) // parameters take their call sites' values
        Defs[FD->getParamDecl(I - First)].push_back(C->getArg(I));
    }
    if (Written)
      if (const ValueDecl* D = referencedDecl(A))
        Defs[D].push_back(C);
  }
  MemberCall M;
  if (getMemberCall(C, M) && M.Object) {
    const auto* MD = dyn_cast_or_null<CXXMethodDecl>(C->getDirectCallee());
    // In a template the method is not known yet: in-place tensor methods and the usual
    // container/metric mutators write their object.
    static const char* const Mutators[] = {"push_back", "emplace_back", "insert", "append",
                                           "update",    "add",          "resize", "assign"};
    bool Writes =
        MD ? !MD->isConst() : M.Name.ends_with("_") || llvm::is_contained(Mutators, M.Name);
    if (Writes)
      if (const ValueDecl* D = referencedDecl(M.Object))
        Defs[D].push_back(C);
  }
}

// A definition made only when a test holds depends on the test too: `if (loss.item() < tol)
// converged = true;` makes `converged` per process.
void PerProcessValues::addGuards(const ValueDecl* D, const Expr* Def) {
  Ctx.findAncestor(DynTypedNode::create(*Def),
                   [&](const DynTypedNode& P, const DynTypedNode& Child) {
                     if (P.get<FunctionDecl>() || P.get<LambdaExpr>())
                       return true;
                     // Loop conditions are left out: a loop whose condition is per process and that
                     // does collective work is decided together, so what runs inside runs
                     // everywhere.
                     if (const auto* If = P.get<IfStmt>(); If && Child.get<Stmt>() != If->getCond())
                       Defs[D].push_back(If->getCond());
                     return false;
                   });
}

void PerProcessValues::collect() {
  for (const VarDecl* V : userVars(Ctx))
    if (V->getInit())
      Defs[V].push_back(V->getInit());
  for (const auto& N :
       match(binaryOperator(isAssignmentOperator(), unless(isInTemplateInstantiation())).bind("b"),
             Ctx.AST)) {
    const auto* B = N.getNodeAs<BinaryOperator>("b");
    if (Ctx.inMainFile(B->getBeginLoc()))
      if (const ValueDecl* D = referencedDecl(B->getLHS()))
        Defs[D].push_back(B->getRHS());
  }
  for (const CallExpr* C : userCalls(Ctx)) {
    if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(C);
        Op && Op->isAssignmentOp() && Op->getNumArgs() == 2)
      if (const ValueDecl* D = referencedDecl(Op->getArg(0)))
        Defs[D].push_back(Op->getArg(1));
    addCallDefinitions(C);
  }
  for (const auto& N :
       match(unaryOperator(ast_matchers::anyOf(hasOperatorName("++"), hasOperatorName("--")),
                           unless(isInTemplateInstantiation()))
                 .bind("u"),
             Ctx.AST)) {
    const auto* U = N.getNodeAs<UnaryOperator>("u");
    if (Ctx.inMainFile(U->getBeginLoc()))
      if (const ValueDecl* D = referencedDecl(U->getSubExpr()))
        Defs[D].push_back(U);
  }
  // Every definition so far also depends on the tests that guard it.
  std::vector<std::pair<const ValueDecl*, const Expr*>> Plain;
  for (const auto& [D, Ds] : Defs)
    if (!isa<ParmVarDecl>(D))
      for (const Expr* E : Ds)
        Plain.push_back({D, E});
  for (const auto& [D, E] : Plain)
    addGuards(D, E);
  for (const auto& N :
       match(cxxForRangeStmt(unless(isInTemplateInstantiation())).bind("r"), Ctx.AST)) {
    const auto* R = N.getNodeAs<CXXForRangeStmt>("r");
    if (!Ctx.inMainFile(R->getBeginLoc()))
      continue;
    Defs[R->getLoopVariable()].push_back(R->getRangeInit());
    // A prepared loader, or a parameter that receives one (`test(model, *test_loader)`).
    const ValueDecl* L = referencedDecl(R->getRangeInit());
    bool Loader = L && Ctx.need<PreparedLoaders>().Vars.count(L);
    if (L && isa<ParmVarDecl>(L))
      for (const Expr* A : Defs[L])
        if (const ValueDecl* D = referencedDecl(A); D && Ctx.need<PreparedLoaders>().Vars.count(D))
          Loader = true;
    if (Loader)
      BatchVars.insert(R->getLoopVariable());
  }
}

const std::vector<const Expr*>& PerProcessValues::definitions(const ValueDecl* D) {
  return Defs[D];
}

static bool isAccelerator(const Expr* Object) {
  const auto* RD = Object ? Object->getType()->getAsCXXRecordDecl() : nullptr;
  return RD && RD->getQualifiedNameAsString() == "accelerate::Accelerator";
}

bool PerProcessValues::isSameEverywhere(const CallExpr* C) {
  MemberCall M;
  // The launcher's choices are the same on every process: the options, and the kind of
  // device (its index differs), e.g. a CUDA check migrated by accelerate-device.
  if (getMemberCall(C, M) && M.Object)
    if (const auto* Inner = dyn_cast<CallExpr>(M.Object->IgnoreParenImpCasts());
        Inner && (M.Name == "is_cuda" || M.Name == "is_cpu" || M.Name == "type")) {
      MemberCall D;
      if (getMemberCall(Inner, D) && D.Name == "device" && isAccelerator(D.Object))
        return true;
    }
  if (getMemberCall(C, M))
    return (M.Name == "options" && isAccelerator(M.Object)) || M.Name == "reduce" ||
           M.Name == "gather" || M.Name == "gather_for_metrics" || M.Name == "broadcast" ||
           M.Name == "check_trigger" || M.Name == "process_index" ||
           M.Name == "local_process_index" || M.Name == "num_processes" ||
           M.Name == "is_main_process" || M.Name == "is_local_main_process";
  std::string N = calleeName(C);
  StringRef Name(N);
  return Name.ends_with("sum_across_processes") || Name.ends_with("mean_across_processes") ||
         Name.ends_with("batch_mean");
}

bool PerProcessValues::isSource(const CallExpr* C) {
  std::string N = calleeName(C);
  StringRef Name(N);
  return Name.ends_with("::now") || Name == "time" || Name == "std::time" || Name == "clock" ||
         Name == "std::clock" || Name == "rand" || Name == "std::rand" ||
         Name.ends_with("process_share");
}

bool PerProcessValues::returnsPerProcess(const FunctionDecl* FD) {
  FD = definitionOf(FD);
  if (!FD || !FD->getBody() || !Ctx.inMainFile(FD->getLocation()))
    return false;
  int& S = State[FD];
  if (S)
    return S == 3;
  S = 1;
  bool R = anyOf(FD->getBody(), [this](const Stmt* X) {
    const auto* Ret = dyn_cast<ReturnStmt>(X);
    return Ret && Ret->getRetValue() && perProcess(Ret->getRetValue());
  });
  State[FD] = R ? 3 : 2;
  return R;
}

bool PerProcessValues::perProcess(const ValueDecl* D) {
  // Models, optimizers and schedulers are kept identical on every process by the runtime
  // (and loaders hand out per-process batches only through their loop variable).
  if (!D || Ctx.need<ReducedMetrics>().Values.count(D) ||
      Ctx.need<PreparedLoaders>().Vars.count(D) ||
      classifyPreparable(D->getType().getNonReferenceType()) != ObjectKind::None)
    return false;
  if (BatchVars.count(D))
    return true;
  int& S = State[D];
  if (S)
    return S == 3; // being computed (a cycle): what the other definitions say
  S = 1;
  bool R = false;
  auto It = Defs.find(D);
  if (It != Defs.end())
    for (const Expr* E : It->second)
      if ((R = perProcess(E)))
        break;
  State[D] = R ? 3 : 2;
  return R;
}

bool PerProcessValues::perProcess(const Expr* E) {
  if (!E || isa<LambdaExpr>(E))
    return false;
  E = E->IgnoreParenImpCasts();
  if (const auto* C = dyn_cast<CallExpr>(E)) {
    if (isSameEverywhere(C))
      return false;
    if (Ctx.need<ShardedBatches>().Slices.count(C) || isSource(C))
      return true;
    if (returnsPerProcess(C->getDirectCallee()))
      return true;
  }
  if (Ctx.need<ShardedBatches>().Slices.count(E)) // a whole tensor's share (manual batching)
    return true;
  if (const auto* DR = dyn_cast<DeclRefExpr>(E))
    return perProcess(DR->getDecl());
  if (const auto* ME = dyn_cast<MemberExpr>(E)) {
    if (isa<FieldDecl>(ME->getMemberDecl()) && perProcess(ME->getMemberDecl()))
      return true;
    return perProcess(ME->getBase());
  }
  for (const Stmt* Ch : E->children())
    if (const auto* CE = dyn_cast_or_null<Expr>(Ch))
      if (perProcess(CE))
        return true;
  return false;
}

} // namespace accel
