// accelerate-main-process: saving (torch::save, OutputArchive::save_to), file and image
// writes, directory creation and console logging (std::cout, printf, puts, fmt::print)
// run on the main process only: the statement is wrapped in
// `if (accelerator.is_main_process()) { ... }` (adjacent ones share one guard);
// `std::ofstream f(path);` opens the file on the main process only, so the writes to it
// elsewhere are no-ops. Loads stay on every process. A prepared model is saved with
// `accelerator.save(model, path)` by every process instead: the runtime writes on the main
// process, and under FSDP full sharding it first gathers the parameters that live on the
// other processes (a guarded torch::save would write the main process's freed shards).

#include "analyses/OutputStatements.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo MainProcessInfo = {
    "accelerate-main-process", "saving, file writes and logging on the main process only",
    "every process runs the program: files would be written N times (racing) and every "
    "line printed N times; guard them with accelerator.is_main_process()"};

namespace {

// Output statements guarded with `if (accelerator.is_main_process())` (adjacent ones share one
// guard), and prepared models' saves turned into accelerator.save on every process.
class OutputGuards {
 public:
  OutputGuards(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info) {}

  void run() {
    rewriteModelSaves();
    for (const auto& N :
         match(compoundStmt(unless(isInTemplateInstantiation())).bind("c"), Ctx.AST)) {
      const auto* CS = N.getNodeAs<CompoundStmt>("c");
      if (!Ctx.inMainFile(CS->getBeginLoc()) || underMainProcessTest(Ctx, CS))
        continue;
      guardBlock(CS);
    }
    for (const auto& N :
         match(stmt(ast_matchers::anyOf(ifStmt(), forStmt(), whileStmt(), cxxForRangeStmt()),
                    unless(isInTemplateInstantiation()))
                   .bind("s"),
               Ctx.AST)) {
      const auto* S = N.getNodeAs<Stmt>("s");
      if (!Ctx.inMainFile(S->getBeginLoc()))
        continue;
      for (const Stmt* Body : bodiesOf(S))
        if (Body && isa<Expr>(Body) && !underMainProcessTest(Ctx, Body) && isOutput(Body) &&
            safeToGuard(Body))
          guardSingle(cast<Expr>(Body));
    }
  }

 private:
  bool isOutput(const Stmt* S) const {
    return anyOf(S, [this](const Stmt* X) {
      if (isCout(X))
        return true;
      if (const auto* C = dyn_cast<CallExpr>(X))
        return isOutputCall(C) && !ModelSaves.count(C);
      if (const auto* CE = dyn_cast<CXXConstructExpr>(X))
        return isOfstreamType(CE->getType());
      return false;
    });
  }

  // Guarding must not skip work the other processes depend on.
  bool safeToGuard(const Stmt* S) {
    bool Unsafe = anyOf(S, [this](const Stmt* X) {
      if (const auto* U = dyn_cast<UnaryOperator>(X))
        return U->isIncrementDecrementOp();
      if (const auto* B = dyn_cast<BinaryOperator>(X))
        return B->isAssignmentOp();
      if (const auto* C = dyn_cast<CallExpr>(X)) {
        if (const FunctionDecl* FD = C->getDirectCallee()) {
          if (Ctx.inMainFile(FD->getLocation()) && !isa<CXXMethodDecl>(FD))
            return true; // user code: may train, synchronise or have side effects
          if (const auto* MD = dyn_cast<CXXMethodDecl>(FD)) {
            std::string Cls = MD->getParent()->getQualifiedNameAsString();
            if (Cls == "accelerate::Accelerator" && MD->getName() != "is_main_process" &&
                MD->getName() != "process_index" && MD->getName() != "num_processes" &&
                MD->getName() != "device" && MD->getName() != "local_process_index")
              return true; // collectives must run everywhere
            if (Ctx.inMainFile(MD->getLocation()) && !MD->isConst())
              return true;
          }
        }
        MemberCall M;
        if (getMemberCall(C, M) && (M.Name == "backward" || M.Name == "step" ||
                                    M.Name == "gather_for_metrics" || M.Name == "gather"))
          return true;
      }
      return false;
    });
    if (Unsafe)
      Ctx.warn(S->getBeginLoc(), Info.Id,
               "this output statement also does work the other processes need; guard only "
               "the output with accelerator.is_main_process()");
    return !Unsafe;
  }

  void guardBlock(const CompoundStmt* CS) {
    std::vector<const Stmt*> Run;
    auto Flush = [&]() {
      if (!Run.empty())
        guardRun(Run);
      Run.clear();
    };
    for (const Stmt* S : CS->body()) {
      bool Out = isa<Expr>(S) && isOutput(S);
      // accelerate-gather-metrics computed a printed value on every process right before S:
      // S's guard begins at S, after that computation.
      if (Ctx.need<ReducedMetrics>().Prints.count(S))
        Flush();
      if (Out && safeToGuard(S)) {
        // Only statements on their own lines are merged.
        Run.push_back(S);
      } else {
        Flush();
      }
    }
    Flush();
  }

  // Where statement S is written in the file: its own tokens, or the whole invocation when S
  // is exactly one macro's expansion (`LOG_STEP(step, loss);`), which is guarded as a
  // whole. False when S is only part of a macro's expansion.
  bool written(const Stmt* S, SourceLocation& Begin, SourceLocation& End) const {
    Begin = S->getBeginLoc();
    End = S->getEndLoc();
    if (Begin.isFileID() && End.isFileID())
      return true;
    const LangOptions& LO = Ctx.AST.getLangOpts();
    SourceLocation B, E;
    if (!Lexer::isAtStartOfMacroExpansion(Begin, Ctx.SM, LO, &B) ||
        !Lexer::isAtEndOfMacroExpansion(End, Ctx.SM, LO, &E) || !B.isFileID() || !E.isFileID())
      return false;
    Begin = B;
    End = E;
    return true;
  }

  void guardRun(const std::vector<const Stmt*>& Run) {
    SourceLocation FirstBegin, FirstEnd, LastBegin, LastEnd;
    if (!written(Run.front(), FirstBegin, FirstEnd) || !written(Run.back(), LastBegin, LastEnd)) {
      // One guard cannot span them: each statement on its own (and its own warning).
      for (const Stmt* S : Run)
        guardSingle(cast<Expr>(S));
      return;
    }
    MigrationContext::Match Matched(Ctx, Run.front()->getBeginLoc());
    const Stmt* First = Run.front();
    SourceLocation Semi = nextTokenLoc(Ctx, LastEnd, tok::semi);
    if (Semi.isInvalid())
      return; // (the match reports it: the statement's end is not in the file)
    std::string Indent = Ctx.indentOf(FirstBegin);
    Change C(Info.Id, First->getBeginLoc());
    C.insertBefore(FirstBegin,
                   "if (" + Ctx.accel(First, C) + ".is_main_process()) {\n" + Indent + "  ");
    // Indent the lines of the guarded statements (blank lines stay empty).
    if (Ctx.SM.getFileID(FirstBegin) == Ctx.Target) {
      StringRef Buf = Ctx.SM.getBufferData(Ctx.Target);
      const unsigned FirstLine = Ctx.SM.getExpansionLineNumber(FirstBegin);
      const unsigned LastLine = Ctx.SM.getExpansionLineNumber(Ctx.SM.getFileLoc(Semi));
      for (unsigned L = FirstLine + 1; L <= LastLine; ++L) {
        SourceLocation Start = Ctx.SM.translateLineCol(Ctx.Target, L, 1);
        unsigned Off = Ctx.SM.getFileOffset(Start);
        if (Off < Buf.size() && Buf[Off] != '\n')
          C.replace(CharSourceRange::getCharRange(Start, Start), "  ");
      }
    }
    C.insertAfter(Semi, "\n" + Indent + "}");
    Ctx.commit(C);
  }

  void guardSingle(const Expr* S) {
    MigrationContext::Match Matched(Ctx, S->getBeginLoc());
    SourceLocation Begin, End;
    if (!written(S, Begin, End)) {
      Ctx.warn(S->getBeginLoc(), Info.Id,
               "this output is part of a macro's expansion, which the tool does not edit: "
               "guard it with accelerator.is_main_process() by hand");
      return;
    }
    SourceLocation Semi = nextTokenLoc(Ctx, End, tok::semi);
    if (Semi.isInvalid())
      return; // (the match reports it)
    Change C(Info.Id, S->getBeginLoc());
    // Braces keep a following `else` bound to the user's if.
    C.insertBefore(Begin, "{ if (" + Ctx.accel(S, C) + ".is_main_process()) { ");
    C.insertAfter(Semi, " } }");
    Ctx.commit(C);
  }

  // `torch::save(model, path);` of a prepared model, a statement of its own not already under
  // a main-process test: `accelerator.save(model, path);` on every process.
  void rewriteModelSaves() {
    for (const CallExpr* Call : userCalls(Ctx)) {
      if (calleeName(Call) != "torch::save" || writtenArgs(Call) != 2)
        continue;
      const ValueDecl* D = referencedDecl(Call->getArg(0));
      if (!D || !Ctx.need<PreparedObjects>().Vars.count(D) ||
          classifyPreparable(D->getType()) != ObjectKind::Model)
        continue;
      const auto* Statement = dyn_cast_or_null<Expr>(Ctx.enclosingStatement(Call));
      if (!Statement || Statement->IgnoreImplicit() != Call || underMainProcessTest(Ctx, Call))
        continue;
      MigrationContext::Match Matched(Ctx, Call->getBeginLoc());
      SourceRange Name = calleeNameRange(Call);
      Change C(Info.Id, Call->getBeginLoc());
      C.replace(Name, Ctx.accel(Call, C) + ".save");
      if (Ctx.commit(C))
        ModelSaves.insert(Call);
      else
        Ctx.warn(Call->getBeginLoc(), Info.Id,
                 "save the prepared model with accelerator.save(model, path) on every process "
                 "(it writes on the main process; under FSDP it gathers the shards first)");
    }
  }

  MigrationContext& Ctx;
  const RuleInfo& Info;
  llvm::SmallPtrSet<const CallExpr*, 4> ModelSaves; // rewritten to accelerator.save
};

// A file the main process writes and every process then reads gets a wait for everyone in
// between.
class WaitBeforeLoads {
 public:
  WaitBeforeLoads(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info) {}

  // A file written on the main process and then read by every process (a checkpoint saved
  // and loaded back into a fresh model): the other processes would read before the main
  // process has written it (or read the file of the run before). A wait for everyone goes
  // before the statement that reads it, in the innermost block that holds both calls.
  void run() {
    std::vector<std::pair<const CallExpr*, std::string>> Saves;
    for (const CallExpr* Call : userCalls(Ctx))
      if (std::string Path = filePathOf(Ctx, Call, true); !Path.empty())
        Saves.push_back({Call, Path});
    llvm::SmallPtrSet<const Stmt*, 4> Waited;
    for (const CallExpr* Load : userCalls(Ctx)) {
      std::string Path = filePathOf(Ctx, Load, false);
      if (Path.empty() || underMainProcessTest(Ctx, Load))
        continue;
      for (const auto& [Save, SavePath] : Saves)
        if (SavePath == Path &&
            Ctx.SM.isBeforeInTranslationUnit(Save->getEndLoc(), Load->getBeginLoc())) {
          waitBetween(Save, Load, Waited);
          break;
        }
    }
  }

 private:
  void waitBetween(const CallExpr* Save, const CallExpr* Load,
                   llvm::SmallPtrSetImpl<const Stmt*>& Waited) {
    llvm::SmallPtrSet<const CompoundStmt*, 8> SaveBlocks;
    Ctx.walkAncestors(DynTypedNode::create(*Save),
                      [&](const DynTypedNode& P, const DynTypedNode&) -> std::optional<bool> {
                        if (const auto* CS = P.get<CompoundStmt>())
                          SaveBlocks.insert(CS);
                        return std::nullopt;
                      });
    // The statement of the innermost block holding both that holds the load.
    auto Found = Ctx.walkAncestors(
        DynTypedNode::create(*Load),
        [&](const DynTypedNode& P, const DynTypedNode& Child) -> std::optional<const Stmt*> {
          if (const auto* CS = P.get<CompoundStmt>(); CS && SaveBlocks.count(CS))
            return Child.get<Stmt>();
          return std::nullopt;
        });
    const Stmt* At = Found.value_or(nullptr);
    if (!At || At->getSourceRange().fullyContains(Save->getSourceRange()) ||
        !Waited.insert(At).second || waitsBetween(Ctx, Save, At))
      return;
    MigrationContext::Match Matched(Ctx, Load->getBeginLoc());
    Change C(Info.Id, Load->getBeginLoc());
    C.insertBefore(At->getBeginLoc(),
                   Ctx.accel(At, C) + ".wait_for_everyone();\n" + Ctx.indentOf(At->getBeginLoc()));
    if (!Ctx.commit(C))
      Ctx.warn(Load->getBeginLoc(), Info.Id,
               "this reads a file the main process writes above: call "
               "accelerator.wait_for_everyone() before it, or the other processes may read it "
               "before it is written");
  }

  MigrationContext& Ctx;
  const RuleInfo& Info;
};

// `std::ofstream f(path);` opens the file on the main process only: the writes to it on the
// other processes are no-ops.
void rewriteOfstreams(MigrationContext& Ctx, const RuleInfo& Info) {
  for (const VarDecl* V : userVars(Ctx)) {
    if (!isOfstreamType(V->getType()) || V->getType()->isReferenceType() || isa<ParmVarDecl>(V) ||
        !V->getInit())
      continue;
    const auto* CE = dyn_cast<CXXConstructExpr>(V->getInit()->IgnoreImplicit());
    if (!CE || CE->getNumArgs() == 0 || CE->getParenOrBraceRange().isInvalid() ||
        underMainProcessTest(Ctx, CE))
      continue;
    // A stream whose state is checked would look like a failed open elsewhere.
    if (streamStateChecked(V)) {
      Ctx.warn(V->getBeginLoc(), Info.Id,
               "this file is written by every process and its state is checked: open and "
               "write it only when accelerator.is_main_process()");
      continue;
    }
    const auto* DS = Ctx.parentAs<DeclStmt>(V);
    if (!DS || !DS->isSingleDecl())
      continue;
    SourceRange Parens = CE->getParenOrBraceRange();
    unsigned Written = writtenArgs(CE);
    if (Written == 0)
      continue;
    std::string Args =
        Ctx.text(SourceRange(CE->getArg(0)->getBeginLoc(), CE->getArg(Written - 1)->getEndLoc()));
    if (Args.empty())
      continue;
    Change C(Info.Id, V->getLocation());
    C.replace(Parens, "");
    C.insertAfter(DS->getEndLoc(), "\n" + Ctx.indentOf(DS->getBeginLoc()) + "if (" +
                                       Ctx.accel(DS, C) + ".is_main_process()) " +
                                       V->getName().str() + ".open(" + Args + ");");
    Ctx.commit(C);
  }
}

} // namespace

void runMainProcess(MigrationContext& Ctx, const RuleInfo& Info) {
  // In this order: where two edits overlap, the one committed first is kept and the other
  // becomes a warning.
  OutputGuards(Ctx, Info).run();
  rewriteOfstreams(Ctx, Info);
  WaitBeforeLoads(Ctx, Info).run();
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule MainProcessRuleEntry({
    MainProcessInfo,
    runMainProcess,
    /*Needs=*/
    {AnalysisId::PreparedLoaders, AnalysisId::PreparedObjects, AnalysisId::ShardedBatches,
     AnalysisId::ReducedMetrics},
    /*Provides=*/{AnalysisId::AcceleratorRequests},
    /*Rank=*/120,
});

} // namespace accel
