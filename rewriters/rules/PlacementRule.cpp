// accelerate-placement: placement that prepare makes redundant is removed (model->to(device)
// on prepared models; .to(device)/.cuda() on batches of a prepared loader, which already
// arrive on the accelerator's device), and hard-coded .cuda() on other tensors becomes
// .to(accelerator.device()) so that CPU-only runs work too.

#include "analyses/RuleSupport.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo PlacementInfo = {"accelerate-placement",
                                "remove placement that prepare makes redundant",
                                "prepared models and batches from a prepared loader are already on "
                                "accelerator.device(); hard-coded .cuda() would break CPU runs"};

namespace {

class PlacementMigration {
 public:
  PlacementMigration(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info) {}

  void run() {
    collectBatchVars();
    for (const CallExpr* Call : userCalls(Ctx)) {
      MemberCall M;
      if (!getMemberCall(Call, M) || !M.Object || (M.Name != "to" && M.Name != "cuda"))
        continue;
      const CXXRecordDecl* RD = pointeeRecord(M.Object->getType());
      if (RD && (isModuleClass(RD) || isModuleHolderClass(RD)))
        modelPlacement(Call, M);
      else if (isTensor(M.Object->getType()) || M.Object->isTypeDependent())
        tensorPlacement(Call, M);
    }
  }

 private:
  // Loop variables of range-for loops over prepared loaders: `for (auto& batch : *loader)`.
  void collectBatchVars() {
    for (const auto& N :
         match(cxxForRangeStmt(unless(isInTemplateInstantiation())).bind("f"), Ctx.AST)) {
      const auto* F = N.getNodeAs<CXXForRangeStmt>("f");
      if (!Ctx.inMainFile(F->getBeginLoc()))
        continue;
      const ValueDecl* Range = referencedDecl(F->getRangeInit());
      if (Range && Ctx.need<PreparedLoaders>().Vars.count(Range))
        BatchVars.insert(F->getLoopVariable());
    }
  }

  bool isDeviceArg(const Expr* A) const {
    const Expr* E = ignoreImplicit(A);
    return isDevice(E->getType()) || isDeviceTypeEnum(E->getType());
  }

  // The statement holding Call when Call is the whole statement; nullptr otherwise.
  const Stmt* wholeStatement(const Expr* E, const Stmt** Container) {
    const auto* P = Ctx.parentPast<ExprWithCleanups>(DynTypedNode::create(*E)).get<Stmt>();
    if (!P || isa<Expr>(P))
      return nullptr;
    *Container = P;
    return E;
  }

  // Removes the statement `E;`: its line when it stands alone, else `{}` in place.
  void removeStatement(Change& C, const Expr* E, const Stmt* Container) {
    SourceLocation Semi = nextTokenLoc(Ctx, E->getEndLoc(), tok::semi);
    if (Semi.isInvalid())
      return;
    if (!isa<CompoundStmt>(Container)) {
      C.replace(SourceRange(E->getBeginLoc(), Semi), "{}");
      return;
    }
    SourceManager& SM = Ctx.SM;
    SourceLocation B = SM.getExpansionLoc(E->getBeginLoc());
    FileID File = SM.getFileID(B);
    const unsigned Line = SM.getExpansionLineNumber(B);
    // Alone on its line: only indentation before it, only blanks after its ';'.
    bool AloneBefore =
        SM.getExpansionColumnNumber(B) == Lexer::getIndentationForLine(B, SM).size() + 1;
    StringRef After = SM.getBufferData(File).substr(SM.getFileOffset(SM.getExpansionLoc(Semi)) + 1);
    bool AloneAfter = After.split('\n').first.trim(" \t\r").empty();
    if (AloneBefore && AloneAfter)
      C.replace(CharSourceRange::getCharRange(SM.translateLineCol(File, Line, 1),
                                              SM.translateLineCol(File, Line + 1, 1)),
                "");
    else
      C.replace(SourceRange(E->getBeginLoc(), Semi), "");
  }

  void modelPlacement(const CallExpr* Call, const MemberCall& M) {
    const ValueDecl* D = referencedDecl(M.Object);
    unsigned N = writtenArgs(Call);
    bool Prepared = D && Ctx.need<PreparedObjects>().Vars.count(D);
    if (M.Name == "to" && N >= 1 && isDeviceArg(Call->getArg(0))) {
      MigrationContext::Match Matched(Ctx, Call->getBeginLoc());
      if (!Prepared) {
        // Not prepared here (a parameter, say): keep the call, on the accelerator's device
        // when it names CUDA.
        if (mentionsCuda(Call->getArg(0))) {
          Change C(Info.Id, Call->getBeginLoc());
          C.replace(Call->getArg(0)->getSourceRange(),
                    Ctx.deviceExpr(DynTypedNode::create(*Call), C));
          Ctx.commit(C);
        } else {
          Matched.settled(); // a device variable: accelerate-device rewrites it
        }
        return;
      }
      bool DtypeFollows = N >= 2 && !Call->getArg(1)->getType()->isBooleanType();
      Change C(Info.Id, Call->getBeginLoc());
      if (DtypeFollows) {
        // model->to(device, dtype): the dtype conversion stays.
        C.replace(CharSourceRange::getCharRange(Call->getArg(0)->getBeginLoc(),
                                                Call->getArg(1)->getBeginLoc()),
                  "");
      } else {
        const Stmt* Container = nullptr;
        if (!wholeStatement(Call, &Container)) {
          Ctx.warn(Call->getBeginLoc(), Info.Id,
                   "prepare() already moves the model to the accelerator's device; this "
                   "placement is part of a larger expression and is left as it is: make sure "
                   "its device is accelerator.device()");
          return;
        }
        removeStatement(C, Call, Container);
      }
      Ctx.commit(C);
    }
  }

  // Whether the tensor E is made from a batch's values. A batch only read for a number
  // (`torch::zeros({batch.data.size(0), 1})`: its size in a shape, which the batch-shape
  // rule writes) does not count: that tensor is made where the factory puts it, so its
  // placement stays (and a second migration must keep it as the first did).
  bool isBatchExpr(const Stmt* E) const {
    if (const auto* DR = dyn_cast<DeclRefExpr>(E))
      return BatchVars.count(DR->getDecl());
    if (const auto* X = dyn_cast<Expr>(E);
        X && (X->getType()->isArithmeticType() || isa<InitListExpr>(X) ||
              isa<CXXStdInitializerListExpr>(X)))
      return false;
    return llvm::any_of(E->children(), [this](const Stmt* C) { return C && isBatchExpr(C); });
  }

  void tensorPlacement(const CallExpr* Call, const MemberCall& M) {
    unsigned N = writtenArgs(Call);
    bool Batch = isBatchExpr(M.Object);
    if (M.Name == "cuda" && N == 0 && !Batch) {
      MigrationContext::Match Matched(Ctx, Call->getBeginLoc());
      SourceLocation LParen = nextTokenLoc(Ctx, M.MemberLoc, tok::l_paren);
      if (LParen.isInvalid())
        return;
      Change C(Info.Id, Call->getBeginLoc());
      C.replace(SourceRange(M.MemberLoc, Call->getRParenLoc()),
                "to(" + Ctx.deviceExpr(DynTypedNode::create(*Call), C) + ")");
      Ctx.commit(C);
      return;
    }
    if (!Batch)
      return;
    bool Redundant = (M.Name == "cuda" && N == 0) ||
                     (M.Name == "to" && N >= 1 && N <= 2 && isDeviceArg(Call->getArg(0)) &&
                      (N == 1 || Call->getArg(1)->getType()->isBooleanType()));
    if (!Redundant)
      return;
    MigrationContext::Match Matched(Ctx, Call->getBeginLoc());
    Change C(Info.Id, Call->getBeginLoc());
    // `batch.data = batch.data.to(device);` would become a self-assignment: drop it.
    DynTypedNode Consumer =
        Ctx.parentPast<MaterializeTemporaryExpr, ImplicitCastExpr, CXXBindTemporaryExpr>(
            DynTypedNode::create(*Call));
    if (const auto* Op = Consumer.get<CXXOperatorCallExpr>())
      if (Op->getOperator() == OO_Equal && Op->getNumArgs() == 2 &&
          Ctx.text(Op->getArg(0)->getSourceRange()) == Ctx.text(M.Object->getSourceRange())) {
        const Stmt* Container = nullptr;
        if (wholeStatement(Op, &Container)) {
          removeStatement(C, Op, Container);
          Ctx.commit(C);
          return;
        }
      }
    C.replace(CharSourceRange::getTokenRange(M.OperatorLoc, Call->getRParenLoc()), "");
    Ctx.commit(C);
  }

  MigrationContext& Ctx;
  const RuleInfo& Info;
  llvm::SmallPtrSet<const ValueDecl*, 8> BatchVars;
};

} // namespace

void runPlacement(MigrationContext& Ctx, const RuleInfo& Info) {
  PlacementMigration(Ctx, Info).run();
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule PlacementRuleEntry({
    PlacementInfo,
    runPlacement,
    /*Needs=*/{AnalysisId::PreparedLoaders, AnalysisId::PreparedObjects},
    /*Provides=*/{AnalysisId::AcceleratorRequests},
    /*Rank=*/60,
});

} // namespace accel
