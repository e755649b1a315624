// accelerate-data-loader: torch::data::make_data_loader(...) becomes the runtime's
// prepare_data_loader(...) with the same arguments (it mirrors every overload), which
// shards the data across processes and puts batches on the accelerator's device.

#include "RuleSupport.h"

using namespace clang;

namespace accel {

const RuleInfo DataLoaderInfo = {
    "accelerate-data-loader", "make_data_loader -> accelerator.prepare_data_loader",
    "each process must iterate over its own shard of the data: "
    "accelerator.prepare_data_loader takes the same arguments as make_data_loader"};

const RuleInfo UnpreparedLoaderInfo = {
    "accelerate-unprepared-loader", "a loader the tool cannot prepare",
    "this data loader is not created by torch::data::make_data_loader in this file, so "
    "every process would see the whole dataset; create it with "
    "accelerator.prepare_data_loader(...)"};

// The declaration a call initialises (through the implicit conversions of `auto x = f()`).
static const DeclaratorDecl* declInitialisedBy(MigrationContext& Ctx, const CallExpr* Call) {
  DynTypedNode Cur = DynTypedNode::create(*Call);
  for (int I = 0; I < 6; ++I) {
    auto Ps = Ctx.parents(Cur);
    if (Ps.empty())
      return nullptr;
    if (const auto* V = Ps[0].get<VarDecl>())
      return V;
    if (const auto* F = Ps[0].get<FieldDecl>())
      return F;
    if (const auto* CI = Ps[0].get<CXXCtorInitializer>())
      return CI->getMember();
    if (const auto* Ctor = Ps[0].get<CXXConstructorDecl>()) {
      for (const CXXCtorInitializer* I : Ctor->inits())
        if (I->getInit() && anyOf(I->getInit(), [Call](const Stmt* S) { return S == Call; }))
          return I->getMember();
      return nullptr;
    }
    const auto* E = Ps[0].get<Expr>();
    if (!E || !(isa<ImplicitCastExpr>(E) || isa<ExprWithCleanups>(E) ||
                isa<MaterializeTemporaryExpr>(E) || isa<CXXBindTemporaryExpr>(E) ||
                isa<CXXConstructExpr>(E) || isa<ParenListExpr>(E)))
      return nullptr;
    Cur = Ps[0];
  }
  return nullptr;
}

static bool isMakeDataLoader(const CallExpr* C) {
  std::string N = calleeName(C);
  return N == "torch::data::make_data_loader" ||
         (StringRef(N).ends_with("make_data_loader") && !C->getDirectCallee());
}

void runDataLoader(MigrationContext& Ctx, const RuleInfo& Info) {
  for (const CallExpr* Call : userCalls(Ctx)) {
    if (!isMakeDataLoader(Call))
      continue;
    SourceRange Name = calleeNameRange(Call);
    if (Name.isInvalid())
      continue;
    Change C(Info.Id, Call->getBeginLoc());
    C.replace(Name, Ctx.accel(Call) + ".prepare_data_loader");
    const DeclaratorDecl* D = declInitialisedBy(Ctx, Call);
    if (const auto* V = dyn_cast_or_null<VarDecl>(D)) {
      TypeLoc TL = V->getTypeSourceInfo()->getTypeLoc();
      // A spelled-out loader type names make_data_loader's result type: `auto` takes the
      // prepared loader's type instead.
      if (!V->getType()->getContainedAutoType())
        C.replace(TL.getSourceRange(), "auto");
    } else if (const auto* F = dyn_cast_or_null<FieldDecl>(D)) {
      if (!F->getType()->getContainedAutoType()) {
        Ctx.warn(F->getBeginLoc(), Info.Id,
                 "a data loader member with a spelled-out type cannot hold the prepared "
                 "loader: change its type to the type of accelerator.prepare_data_loader(...)");
        continue;
      }
    } else {
      // Assigned to an existing variable or member whose type names make_data_loader's
      // result: only an unspelled type can take the prepared loader.
      auto Ps = Ctx.parents(DynTypedNode::create(*Call));
      const Expr* Target = nullptr;
      for (int I = 0; I < 4 && !Ps.empty(); ++I) {
        if (const auto* Op = Ps[0].get<CXXOperatorCallExpr>()) {
          if (Op->getOperator() == OO_Equal)
            Target = Op->getArg(0);
          break;
        }
        if (const auto* BO = Ps[0].get<BinaryOperator>()) {
          if (BO->isAssignmentOp())
            Target = BO->getLHS();
          break;
        }
        Ps = Ctx.parents(Ps[0]);
      }
      if (Target && !Target->getType()->isDependentType()) {
        Ctx.warn(Call->getBeginLoc(), Info.Id,
                 "the loader is assigned to a variable whose type names make_data_loader's "
                 "result; declare it with the type of accelerator.prepare_data_loader(...) "
                 "and change this call by hand");
        continue;
      }
    }
    if (Ctx.commit(C) && D)
      Ctx.Loaders.insert(D);
  }
  // Loaders the program already prepared (a second run) count as prepared.
  for (const VarDecl* V : userVars(Ctx))
    if (const Expr* Init = V->getInit())
      if (anyOf(Init, [](const Stmt* S) {
            MemberCall M;
            return isa<CallExpr>(S) && getMemberCall(cast<CallExpr>(S), M) &&
                   M.Name == "prepare_data_loader";
          }))
        Ctx.Loaders.insert(V);
}

}  // namespace accel
