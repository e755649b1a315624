// accelerate-decide-together: a test on a value computed per process (a batch's loss, an
// unreduced metric, a clock) that decides whether a process leaves a loop (break, return,
// continue, the loop's own condition) or runs collective work (backward, gather,
// wait_for_everyone, ...) would let the processes part ways: one leaves while the others
// wait in a collective. Each such test is rewritten so that every process takes the same
// branch at the same point, with a note in the output saying how:
//  - reduce: when the value is a per-batch mean of this process's share (a loss with the
//    default reduction), its `.item()` is taken from accelerator.reduce(loss, Mean): the
//    whole batch's value, as one process computes it;
//  - trigger (Hugging Face's pattern) otherwise: `if (cond) accelerator.set_trigger();`
//    then `if (accelerator.check_trigger()) ...` in place of the test: check_trigger is
//    called by every process at the same point (where the test was), so the branch is
//    taken by all when it holds on any. A loop condition is checked the same way at the
//    top of each iteration.
// Values that are the same everywhere (reduced or gathered metrics, loop counters) need
// nothing.

#include "analyses/CallFacts.h"
#include "analyses/MetricMeasure.h"
#include "analyses/PerProcessValues.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo DecideTogetherInfo = {
    "accelerate-decide-together", "per-process conditions around collectives decided together",
    "this test depends on a value computed by each process on its own data: processes could "
    "take different branches and wait for each other in different collectives (a hang) or "
    "leave while others still communicate; decide it together with "
    "accelerator.set_trigger()/check_trigger() or on a value reduced across processes"};

namespace {

const char* const ReduceNote =
    "decided on the value averaged over the processes (accelerator.reduce(..., Mean): the "
    "whole batch's value, as one process computes it), so every process takes the same branch";
const char* const TriggerNote =
    "decided together: a process where the condition holds calls set_trigger(); "
    "check_trigger(), called by every process here, makes all of them take the branch when "
    "any does";
const char* const LoopNote =
    "the loop condition depends on this process's values: every process checks it at the top "
    "of each iteration and all of them leave when it fails on any (set_trigger/check_trigger)";

class DecideTogether {
 public:
  DecideTogether(MigrationContext& Ctx, const RuleInfo& Info)
      : Ctx(Ctx), Info(Info), PP(Ctx), Collective(collectiveFacts(Ctx)) {}

  void run();

 private:
  bool matters(const IfStmt* S);
  bool exitsAcross(const Stmt* Branch, const Stmt* Within);
  const Stmt* shardedLoopOf(DynTypedNode N, const VarDecl** BatchVar);
  bool reducibleMean(const Expr* O);
  bool uniformlyRun(const Expr* Def);
  bool planReduce(const Expr* E, std::vector<const CallExpr*>& Items);
  void addReduce(Change& C, const std::vector<const CallExpr*>& Items);
  SourceLocation statementEnd(const Stmt* S);
  void decideIf(const IfStmt* S);
  void decideLoop(const Stmt* L, const Expr* Cond, const Stmt* Body);
  std::string note(const char* Text) const {
    return "// accel-migrate(" + std::string(Info.Id) + "): " + Text + "\n";
  }

  MigrationContext& Ctx;
  const RuleInfo& Info;
  PerProcessValues PP;
  CallFacts Collective;
  llvm::SmallPtrSet<const CallExpr*, 4> Reduced;
};

// A break/continue in Branch that leaves a loop enclosing Within, or a return.
bool DecideTogether::exitsAcross(const Stmt* Branch, const Stmt* Within) {
  return anyOf(Branch, [&](const Stmt* X) {
    if (isa<ReturnStmt>(X)) {
      bool InLambda = false;
      Ctx.enclosingFunction(DynTypedNode::create(*X), &InLambda);
      const FunctionDecl* FD = Ctx.enclosingFunction(DynTypedNode::create(*Within));
      return !InLambda && FD && (Collective.function(FD) || Collective.in(FD->getBody()));
    }
    if (!isa<BreakStmt>(X) && !isa<ContinueStmt>(X))
      return false;
    // Its target: the nearest enclosing loop (or switch, for a break).
    const Stmt* Target = nearestAncestor(
        Ctx, X,
        isa<BreakStmt>(X) ? stmt(ast_matchers::anyOf(loopStmt(), switchStmt())) : loopStmt());
    if (!Target || isa<SwitchStmt>(Target))
      return false;
    bool Outside = Ctx.SM.isBeforeInTranslationUnit(Target->getBeginLoc(), Within->getBeginLoc());
    return Outside && Collective.in(Target);
  });
}

bool DecideTogether::matters(const IfStmt* S) {
  return Collective.in(S->getThen()) || Collective.in(S->getElse()) ||
         exitsAcross(S->getThen(), S) || (S->getElse() && exitsAcross(S->getElse(), S));
}

const Stmt* DecideTogether::shardedLoopOf(DynTypedNode N, const VarDecl** BatchVar) {
  auto Loop = Ctx.walkAncestors(
      N, [&](const DynTypedNode& P, const DynTypedNode&) -> std::optional<const Stmt*> {
        if (P.get<FunctionDecl>())
          return nullptr;
        if (const auto* R = P.get<CXXForRangeStmt>();
            R && PP.isBatchVariable(R->getLoopVariable())) {
          *BatchVar = R->getLoopVariable();
          return R;
        }
        if (const auto* S = P.get<Stmt>(); S && Ctx.need<ShardedBatches>().Loops.count(S)) {
          *BatchVar = nullptr;
          return S;
        }
        return std::nullopt;
      });
  return Loop.value_or(nullptr);
}

// A tensor that is a mean over this process's share of a batch (a default-reduced loss).
bool DecideTogether::reducibleMean(const Expr* O) {
  O = ignoreImplicit(O)->IgnoreParenImpCasts();
  const Expr* Value = O;
  DynTypedNode At = DynTypedNode::create(*O);
  if (const auto* DR = dyn_cast<DeclRefExpr>(O)) {
    const auto* V = dyn_cast<VarDecl>(DR->getDecl());
    if (!V || !V->getInit() || PP.definitions(V).size() != 1 ||
        !(isTensor(V->getType()) || V->getType()->isDependentType()))
      return false;
    Value = V->getInit();
    At = DynTypedNode::create(*V);
  }
  const VarDecl* BatchVar = nullptr;
  const Stmt* Loop = shardedLoopOf(At, &BatchVar);
  return Loop && MeasureAnalysis(Ctx, Loop, BatchVar).of(Value) == Measure::BatchMean;
}

// Def sits directly in a block (not under a branch): every process runs it equally often.
bool DecideTogether::uniformlyRun(const Expr* Def) {
  const Stmt* Container = nullptr;
  const Stmt* S = Ctx.enclosingStatement(Def, &Container);
  if (!S) { // a variable's initialiser: its declaration must sit in a block
    const auto* V = Ctx.writtenParentAs<VarDecl>(Def);
    return V && Ctx.declaringBlock(V);
  }
  return Container && isa<CompoundStmt>(Container);
}

bool DecideTogether::planReduce(const Expr* E, std::vector<const CallExpr*>& Items) {
  if (!E || !PP.perProcess(E))
    return true;
  E = E->IgnoreParenImpCasts();
  if (const auto* C = dyn_cast<CallExpr>(E)) {
    MemberCall M;
    if (getMemberCall(C, M) && M.Name == "item" && M.Object && reducibleMean(M.Object)) {
      Items.push_back(C);
      return true;
    }
  }
  if (const auto* DR = dyn_cast<DeclRefExpr>(E)) {
    const auto* V = dyn_cast<VarDecl>(DR->getDecl());
    if (!V || !V->getType()->isArithmeticType() || !V->hasLocalStorage() || isa<ParmVarDecl>(V))
      return false;
    const auto& Defs = PP.definitions(V);
    if (Defs.empty())
      return false;
    for (const Expr* D : Defs) {
      if (!PP.perProcess(D))
        continue; // `double last = 1.0;`
      const auto* C = dyn_cast<CallExpr>(ignoreImplicit(D)->IgnoreParenImpCasts());
      MemberCall M;
      if (!C || !getMemberCall(C, M) || M.Name != "item" || !M.Object || !reducibleMean(M.Object) ||
          !uniformlyRun(D))
        return false;
      Items.push_back(C);
    }
    return true;
  }
  bool Any = false;
  for (const Stmt* Ch : E->children())
    if (const auto* CE = dyn_cast_or_null<Expr>(Ch)) {
      Any = true;
      if (!planReduce(CE, Items))
        return false;
    }
  return Any;
}

void DecideTogether::addReduce(Change& C, const std::vector<const CallExpr*>& Items) {
  for (const CallExpr* Item : Items) {
    if (!Reduced.insert(Item).second)
      continue;
    MemberCall M;
    getMemberCall(Item, M);
    C.insertBefore(M.Object->getBeginLoc(), Ctx.accel(Item, C) + ".reduce(");
    C.insertAfter(M.Object->getEndLoc(), ", accelerate::ReduceOp::Mean)");
  }
}

// The last token of S (a `}` or the `;` ending its last statement).
SourceLocation DecideTogether::statementEnd(const Stmt* S) {
  for (int D = 0; D < 64 && S; ++D) {
    if (const auto* CS = dyn_cast<CompoundStmt>(S))
      return CS->getRBracLoc();
    if (const auto* If = dyn_cast<IfStmt>(S))
      S = If->getElse() ? If->getElse() : If->getThen();
    else if (const auto* W = dyn_cast<WhileStmt>(S))
      S = W->getBody();
    else if (const auto* F = dyn_cast<ForStmt>(S))
      S = F->getBody();
    else if (const auto* R = dyn_cast<CXXForRangeStmt>(S))
      S = R->getBody();
    else if (isa<DeclStmt>(S) || isa<NullStmt>(S))
      return S->getEndLoc();
    else
      return nextTokenLoc(Ctx, S->getEndLoc(), tok::semi);
  }
  return {};
}

void DecideTogether::decideIf(const IfStmt* S) {
  if (S->getInit() || S->getConditionVariable() || S->isConstexpr()) {
    Ctx.warn(S->getBeginLoc(), Info.Id, Info.Explanation);
    return;
  }
  Change C(Info.Id, S->getBeginLoc());
  std::string Indent = Ctx.indentOf(S->getBeginLoc());
  std::vector<const CallExpr*> Items;
  if (planReduce(S->getCond(), Items)) {
    C.insertBefore(S->getBeginLoc(), note(ReduceNote) + Indent);
    addReduce(C, Items);
    Ctx.commit(C);
    return;
  }
  std::string Cond = Ctx.text(S->getCond()->getSourceRange());
  std::string Acc = Ctx.accel(S, C);
  bool InBlock = Ctx.parentAs<CompoundStmt>(S);
  SourceLocation End = InBlock ? SourceLocation() : statementEnd(S);
  if (Cond.empty() || (!InBlock && End.isInvalid())) {
    Ctx.warn(S->getBeginLoc(), Info.Id, Info.Explanation);
    return;
  }
  std::string In = InBlock ? Indent : Indent + "  ";
  std::string Set = "if (" + Cond + ") " + Acc + ".set_trigger();\n";
  C.insertBefore(S->getBeginLoc(), (InBlock ? "" : "{\n" + In) + note(TriggerNote) + In + Set + In);
  C.replace(S->getCond()->getSourceRange(), Acc + ".check_trigger()");
  if (!InBlock)
    C.insertAfter(End, "\n" + Indent + "}");
  Ctx.commit(C);
}

void DecideTogether::decideLoop(const Stmt* L, const Expr* Cond, const Stmt* Body) {
  Change C(Info.Id, L->getBeginLoc());
  std::string Indent = Ctx.indentOf(L->getBeginLoc());
  std::vector<const CallExpr*> Items;
  if (planReduce(Cond, Items)) {
    C.insertBefore(L->getBeginLoc(), note(ReduceNote) + Indent);
    addReduce(C, Items);
    Ctx.commit(C);
    return;
  }
  const auto* CS = dyn_cast<CompoundStmt>(Body);
  std::string Text = Ctx.text(Cond->getSourceRange());
  if (!CS || Text.empty()) {
    Ctx.warn(L->getBeginLoc(), Info.Id, Info.Explanation);
    return;
  }
  std::string Acc = Ctx.accel(L, C);
  std::string In = CS->body_empty() ? Indent + "  " : Ctx.indentOf(CS->body_front()->getBeginLoc());
  C.insertBefore(L->getBeginLoc(), note(LoopNote) + Indent);
  // The test that ends the loop: `!converged` for `while (converged)`, `converged` for
  // `while (!converged)`.
  std::string Stop = "!(" + Text + ")";
  if (const auto* Not = dyn_cast<UnaryOperator>(Cond->IgnoreParenImpCasts());
      Not && Not->getOpcode() == UO_LNot) {
    std::string Inner = Ctx.text(Not->getSubExpr()->getSourceRange());
    if (!Inner.empty())
      Stop = Inner;
  }
  C.replace(Cond->getSourceRange(), isa<WhileStmt>(L) ? "true" : "");
  C.insertAfter(CS->getLBracLoc(), "\n" + In + "if (" + Stop + ") " + Acc + ".set_trigger();\n" +
                                       In + "if (" + Acc + ".check_trigger()) break;");
  Ctx.commit(C);
}

void DecideTogether::run() {
  for (const auto& N : match(stmt(ast_matchers::anyOf(ifStmt(), whileStmt(), forStmt(), doStmt()),
                                  unless(isInTemplateInstantiation()))
                                 .bind("s"),
                             Ctx.AST)) {
    const auto* S = N.getNodeAs<Stmt>("s");
    if (!Ctx.inMainFile(S->getBeginLoc()))
      continue;
    if (const auto* If = dyn_cast<IfStmt>(S)) {
      if (PP.perProcess(If->getCond()) && matters(If))
        decideIf(If);
    } else if (const auto* W = dyn_cast<WhileStmt>(S)) {
      if (!W->getConditionVariable() && PP.perProcess(W->getCond()) && Collective.in(W->getBody()))
        decideLoop(W, W->getCond(), W->getBody());
    } else if (const auto* F = dyn_cast<ForStmt>(S)) {
      if (F->getCond() && !F->getConditionVariable() && PP.perProcess(F->getCond()) &&
          Collective.in(F->getBody()))
        decideLoop(F, F->getCond(), F->getBody());
    } else if (const auto* D = dyn_cast<DoStmt>(S)) {
      if (PP.perProcess(D->getCond()) && Collective.in(D->getBody()))
        Ctx.warn(D->getBeginLoc(), Info.Id, Info.Explanation);
    }
  }
}

} // namespace

void runDecideTogether(MigrationContext& Ctx, const RuleInfo& Info) {
  DecideTogether(Ctx, Info).run();
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule DecideTogetherRuleEntry({
    DecideTogetherInfo,
    runDecideTogether,
    /*Needs=*/{AnalysisId::PreparedLoaders, AnalysisId::ShardedBatches, AnalysisId::ReducedMetrics},
    /*Provides=*/{AnalysisId::AcceleratorRequests},
    /*Rank=*/110,
});

} // namespace accel
