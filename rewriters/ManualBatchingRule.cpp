// accelerate-manual-batching: batches cut by hand from whole-dataset tensors
// (`for (i = 0; i < n; i += bs) x.slice(0, i, i + bs)`) cannot be sharded safely by a
// rewrite: warned and left as they were.
// accelerate-unprepared-loader: range-for loops over a LibTorch data loader that this file
// did not create with make_data_loader (so the tool could not prepare it).

#include "RuleSupport.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo ManualBatchingInfo = {
    "accelerate-manual-batching", "manual batching left as it was",
    "batches sliced by hand from whole-dataset tensors are not sharded: every process "
    "would train on all of them; give each process its own range with "
    "accelerator.process_range(begin, end) or use a dataset with "
    "accelerator.prepare_data_loader"};

void runManualBatching(MigrationContext& Ctx, const RuleInfo& Info) {
  bool Warned = false;
  for (const auto& N :
       match(forStmt(unless(isInTemplateInstantiation())).bind("f"), Ctx.AST)) {
    const auto* F = N.getNodeAs<ForStmt>("f");
    if (!Ctx.inMainFile(F->getBeginLoc()))
      continue;
    const auto* DS = dyn_cast_or_null<DeclStmt>(F->getInit());
    if (!DS || !DS->isSingleDecl())
      continue;
    const auto* I = dyn_cast<VarDecl>(DS->getSingleDecl());
    if (!I || !I->getType()->isIntegerType())
      continue;
    bool Slices = anyOf(F->getBody(), [I](const Stmt* S) {
      const auto* C = dyn_cast<CallExpr>(S);
      MemberCall M;
      if (!C || !getMemberCall(C, M))
        return false;
      if (M.Name != "slice" && M.Name != "narrow" && M.Name != "index_select")
        return false;
      if (!(isTensor(M.Object->getType()) || M.Object->isTypeDependent()))
        return false;
      for (const Expr* A : C->arguments())
        if (refersTo(A, I))
          return true;
      return false;
    });
    if (Slices) {
      Ctx.warn(F->getBeginLoc(), Info.Id, Info.Explanation);
      Warned = true;
    }
  }

  for (const auto& N :
       match(cxxForRangeStmt(unless(isInTemplateInstantiation())).bind("f"), Ctx.AST)) {
    const auto* F = N.getNodeAs<CXXForRangeStmt>("f");
    if (!Ctx.inMainFile(F->getBeginLoc()))
      continue;
    const Expr* Range = F->getRangeInit();
    QualType T = Range->getType();
    const CXXRecordDecl* RD = T.isNull() ? nullptr : T->getAsCXXRecordDecl();
    if (!RD)
      continue;
    std::string Name = RD->getQualifiedNameAsString();
    if (Name != "torch::data::StatelessDataLoader" && Name != "torch::data::StatefulDataLoader" &&
        Name != "torch::data::DataLoaderBase")
      continue;
    const ValueDecl* D = referencedDecl(Range);
    if (D && (Ctx.Loaders.count(D) || isa<ParmVarDecl>(D)))
      continue;
    Ctx.warn(F->getBeginLoc(), UnpreparedLoaderInfo.Id, UnpreparedLoaderInfo.Explanation);
    Warned = true;
  }

  // Training (a backward call) with no loader the tool prepared: the data comes from
  // somewhere it cannot shard (a hand-written batch iterator, say).
  if (Warned || !Ctx.Loaders.empty())
    return;
  for (const CallExpr* Call : userCalls(Ctx)) {
    MemberCall M;
    if (!getMemberCall(Call, M) || M.Name != "backward")
      continue;
    // The outermost loop around it in its function.
    const Stmt* Loop = nullptr;
    DynTypedNode Cur = DynTypedNode::create(*Call);
    for (int D = 0; D < 128; ++D) {
      auto Ps = Ctx.parents(Cur);
      if (Ps.empty() || Ps[0].get<FunctionDecl>() || Ps[0].get<LambdaExpr>())
        break;
      if (const Stmt* S = Ps[0].get<Stmt>())
        if (isa<ForStmt>(S) || isa<WhileStmt>(S) || isa<DoStmt>(S) || isa<CXXForRangeStmt>(S))
          Loop = S;
      Cur = Ps[0];
    }
    if (!Loop)
      continue;
    Ctx.warn(Loop->getBeginLoc(), UnpreparedLoaderInfo.Id,
             "this training loop does not iterate a torch::data loader the tool could "
             "prepare, so every process would train on all the data; shard the data by "
             "process_index()/num_processes() or use accelerator.prepare_data_loader");
    return;
  }
}

}  // namespace accel
