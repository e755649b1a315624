// What statements do, through the file's own functions (see CallFacts.h).

#include "analyses/CallFacts.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

bool isBackwardCall(const CallExpr* C) {
  MemberCall M;
  return getMemberCall(C, M) && M.Name == "backward";
}

bool isCollectiveCall(const CallExpr* C) {
  MemberCall M;
  if (getMemberCall(C, M)) {
    static const char* const Names[] = {"backward",
                                        "gather",
                                        "gather_for_metrics",
                                        "reduce",
                                        "broadcast",
                                        "pad_across_processes",
                                        "wait_for_everyone",
                                        "check_trigger",
                                        "prepare",
                                        "prepare_data_loader",
                                        "save_state",
                                        "load_state",
                                        "main_process_first",
                                        "local_main_process_first",
                                        "clip_grad_norm_",
                                        "shared_seed"};
    for (const char* N : Names)
      if (M.Name == N)
        return true;
    return false;
  }
  std::string N = calleeName(C);
  StringRef Name(N);
  return Name.ends_with("sum_across_processes") || Name.ends_with("mean_across_processes") ||
         Name.ends_with("make_data_loader") || Name.ends_with("clip_grad_norm_");
}

static const FunctionDecl* calleeOf(const CallExpr* C) {
  const FunctionDecl* FD = C->getDirectCallee();
  if (!FD)
    return nullptr;
  if (const FunctionDecl* Pattern = FD->getTemplateInstantiationPattern())
    FD = Pattern;
  return FD->getDefinition() ? FD->getDefinition() : FD;
}

CallFacts::CallFacts(MigrationContext& Ctx, Pred P) : Direct(std::move(P)) {
  std::vector<const FunctionDecl*> All;
  for (const auto& N :
       match(functionDecl(isDefinition(), unless(isInstantiated())).bind("f"), Ctx.AST))
    if (const auto* FD = N.getNodeAs<FunctionDecl>("f"))
      if (FD->getBody() && Ctx.inMainFile(FD->getLocation()))
        All.push_back(FD);
  // Fixpoint: a function does the work when its body does, directly or by calling one.
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (const FunctionDecl* FD : All)
      if (!Functions.count(FD) && in(FD->getBody())) {
        Functions.insert(FD);
        Changed = true;
      }
  }
}

bool CallFacts::calls(const Stmt* S) const {
  const auto* C = dyn_cast<CallExpr>(S);
  const FunctionDecl* FD = C ? calleeOf(C) : nullptr;
  return FD && Functions.count(FD);
}

bool CallFacts::in(const Stmt* S) const {
  return anyOf(S, [this](const Stmt* X) { return Direct(X) || calls(X); });
}

bool CallFacts::function(const FunctionDecl* FD) const {
  if (!FD)
    return false;
  if (const FunctionDecl* Def = FD->getDefinition())
    FD = Def;
  return Functions.count(FD) > 0;
}

CallFacts trainingFacts(MigrationContext& Ctx) {
  return CallFacts(Ctx, [](const Stmt* S) {
    const auto* C = dyn_cast<CallExpr>(S);
    return C && isBackwardCall(C);
  });
}

CallFacts collectiveFacts(MigrationContext& Ctx) {
  return CallFacts(Ctx, [&Ctx](const Stmt* S) {
    if (Ctx.need<ReducedMetrics>().Loops.count(S) || Ctx.need<ShardedBatches>().Loops.count(S))
      return true;
    if (const auto* C = dyn_cast<CallExpr>(S))
      return isCollectiveCall(C);
    return false;
  });
}

} // namespace accel
